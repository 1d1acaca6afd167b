//! What links the web console (`crate::console`) to the rest of the edge
//! and to the binary: its configuration, the operator token, and the
//! control plane it asks ([`ConsoleLink::control_plane`], typed answers). It
//! knows nothing of the gateway, so the gateway and the configuration can
//! hold these without importing the console.

use std::{path::PathBuf, sync::Arc};

use base64::Engine as _;
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};

/// `[edge.console]`: the web console.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsoleConfig {
    /// Whether `/console` is served. Default true.
    #[serde(default = "default_enabled")]
    pub enabled: bool,
    /// A file holding the operator's console token (one line, at least 32
    /// characters); without it nobody signs in as the operator. `quiver dev`
    /// writes one under its data directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_token_file: Option<PathBuf>,
    /// Minutes a console session lives without a request. Default 30.
    #[serde(default = "default_idle_minutes")]
    pub idle_minutes: u64,
    /// Marks the session cookie `Secure`. Default: when the edge serves
    /// TLS; set it where a proxy in front terminates TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secure_cookie: Option<bool>,
}

fn default_enabled() -> bool {
    true
}
fn default_idle_minutes() -> u64 {
    30
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        ConsoleConfig {
            enabled: true,
            operator_token_file: None,
            idle_minutes: default_idle_minutes(),
            secure_cookie: None,
        }
    }
}

/// Shortest operator token accepted.
pub const MIN_OPERATOR_TOKEN: usize = 32;

/// Why an operator token file cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OperatorTokenError {
    /// The file cannot be read.
    #[error(
        "console operator token file {}: {source}; write a random token of at least {MIN_OPERATOR_TOKEN} characters there (e.g. `openssl rand -hex 32`)",
        path.display()
    )]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Its first line is too short to be a secret.
    #[error(
        "console operator token file {}: the token is shorter than {MIN_OPERATOR_TOKEN} characters",
        path.display()
    )]
    TooShort {
        /// The file.
        path: PathBuf,
    },
}

/// The SHA-256 of the operator token in `path` (its first line), or why it
/// cannot be used.
pub fn read_operator_token(path: &std::path::Path) -> Result<[u8; 32], OperatorTokenError> {
    let text = std::fs::read_to_string(path).map_err(|source| OperatorTokenError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    let token = text.lines().next().unwrap_or_default().trim();
    if token.len() < MIN_OPERATOR_TOKEN {
        return Err(OperatorTokenError::TooShort {
            path: path.to_path_buf(),
        });
    }
    Ok(operator_digest(token))
}

/// A new random operator token (`qop_` and 43 characters of base64url).
pub fn new_operator_token() -> String {
    format!("qop_{}", random_token(&ring::rand::SystemRandom::new(), 32))
}

/// The SHA-256 the console compares an operator token by.
pub fn operator_digest(token: &str) -> [u8; 32] {
    quiver_proto::hash::sha256(token.as_bytes())
}

/// `bytes` random bytes, base64url without padding.
pub(crate) fn random_token(random: &SystemRandom, bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    random
        .fill(&mut buffer)
        .expect("the system's random source answers");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(buffer)
}

/// What the binary links the console to: the control plane and the
/// operator's token.
#[derive(Clone)]
pub struct ConsoleLink {
    /// The control plane: in process on a node, over the admin API
    /// otherwise (a transport of its own, so console requests never wait
    /// behind task records or OAuth callbacks).
    pub control_plane: Arc<dyn quiver_admin::AdminTransport>,
    /// SHA-256 of the operator token ([`read_operator_token`]); `None`: no
    /// operator sign-in on this edge.
    pub operator_token_sha256: Option<[u8; 32]>,
    /// Where operators find metrics (shown as links), e.g. the admin
    /// listener's `/metrics`.
    pub metrics: Vec<String>,
}
