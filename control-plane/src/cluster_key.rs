//! The cluster key: 32 random bytes shared by the control-plane nodes (which
//! seal tenant secrets before proposing them) and the executors (which open
//! them to connect for a tenant). Sealing is AES-256-GCM with a random 96-bit
//! nonce per secret and `tenant/name` as associated data, so a sealed value
//! opens only as the secret it was sealed as. Nothing here logs or prints a
//! key or a plaintext.

use std::{
    fmt,
    path::{Path, PathBuf},
};

use base64::{Engine, engine::general_purpose::STANDARD};
use quiver_proto::secret_value::SecretValue;
use ring::{
    aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey},
    rand::{SecureRandom, SystemRandom},
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The sealing name of a tenant's grant of `upstream` (the access token's
/// is the tenant secret's name).
pub(crate) fn grant_name(upstream: &str) -> String {
    format!("oauth-grant:{upstream}")
}

/// The cluster key itself, base64 (32 bytes).
pub const CLUSTER_KEY_ENV: &str = "QUIVER_CLUSTER_KEY";
/// A file holding the cluster key, base64 (what `--cluster-key-file` reads).
pub const CLUSTER_KEY_FILE_ENV: &str = "QUIVER_CLUSTER_KEY_FILE";
/// The file `quiver dev` keeps its cluster key in, in its data directory.
pub const DEV_CLUSTER_KEY_FILE: &str = "cluster.key";
/// The largest secret a tenant may store, in bytes.
pub const MAX_SECRET_BYTES: usize = 16 * 1024;

/// Bytes of an AES-256-GCM tag.
const TAG_LEN: usize = 16;
/// Bytes of a cluster key.
const KEY_LEN: usize = 32;

/// How to make a key, for error messages.
const MAKE_ONE: &str = "make one with `head -c 32 /dev/urandom | base64`";

/// Why a cluster key could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterKeyError {
    /// Not 32 bytes of base64.
    #[error("{origin}: a cluster key is 32 bytes in base64 ({MAKE_ONE})")]
    Malformed {
        /// Where it came from (a file or the environment variable).
        origin: String,
    },
    /// The key file could not be read.
    #[error("{}: cannot read the cluster key", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The key file could not be created.
    #[error("{}: cannot create the cluster key", path.display())]
    Create {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Both the variable and a file were given.
    #[error(
        "both {CLUSTER_KEY_ENV} and a key file ({}) are given; give the cluster key one way only",
        path.display()
    )]
    Ambiguous {
        /// The file given.
        path: PathBuf,
    },
    /// The system's random source failed.
    #[error("no randomness for a new cluster key")]
    Random,
}

/// Why a secret could not be sealed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// Larger than [`MAX_SECRET_BYTES`].
    #[error("a secret is at most {MAX_SECRET_BYTES} bytes; this one has {0}")]
    TooLarge(usize),
    /// The system's random source failed.
    #[error("no randomness for a nonce")]
    Random,
}

/// Why a sealed secret did not open. Never names the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// Sealed under another cluster key.
    #[error(
        "it was sealed under cluster key {sealed_with} and this node holds {this_node}; give every control-plane node and executor the same key ({CLUSTER_KEY_ENV} or --cluster-key-file)"
    )]
    OtherKey {
        /// The id of the key that sealed it.
        sealed_with: String,
        /// The id of this node's key.
        this_node: String,
    },
    /// The authentication check failed: the value was altered, or copied from
    /// another tenant or secret name.
    #[error(
        "it does not open: it was altered, or copied from another tenant or name; set it again with `quiver ctl secret set`"
    )]
    Damaged,
}

/// Why a sealed value proposed for the log is malformed (what can be told
/// without the key). Seal the secret again (`quiver ctl secret set`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealedShapeError {
    /// The nonce is not base64.
    #[error("the nonce is not base64")]
    NonceEncoding,
    /// The nonce has the wrong length.
    #[error("the nonce must be {NONCE_LEN} bytes")]
    NonceLength,
    /// The ciphertext is not base64.
    #[error("the ciphertext is not base64")]
    CiphertextEncoding,
    /// The ciphertext is shorter than a tag or longer than the largest secret.
    #[error("the ciphertext must be {TAG_LEN} to {max} bytes", max = MAX_SECRET_BYTES + TAG_LEN)]
    CiphertextLength,
}

/// A secret as stored and replicated: nonce and ciphertext (with its tag),
/// base64, and the id of the key that sealed it. Opens only with that key,
/// as the tenant and name it was sealed for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SealedValue {
    /// 96-bit nonce, base64; random for every seal.
    pub nonce: String,
    /// AES-256-GCM ciphertext followed by its 16-byte tag, base64.
    pub ciphertext: String,
    /// [`ClusterKey::id`] of the key that sealed it.
    #[serde(default)]
    pub key_id: String,
}

impl SealedValue {
    /// Checks the shape of a value proposed for the log (what the state
    /// machine can check without the key): a 12-byte nonce and a ciphertext
    /// of a plausible size. The error names what is wrong.
    pub fn check_shape(&self) -> Result<(), SealedShapeError> {
        let nonce = STANDARD
            .decode(&self.nonce)
            .map_err(|_| SealedShapeError::NonceEncoding)?;
        if nonce.len() != NONCE_LEN {
            return Err(SealedShapeError::NonceLength);
        }
        let sealed = STANDARD
            .decode(&self.ciphertext)
            .map_err(|_| SealedShapeError::CiphertextEncoding)?;
        if sealed.len() < TAG_LEN || sealed.len() > MAX_SECRET_BYTES + TAG_LEN {
            return Err(SealedShapeError::CiphertextLength);
        }
        Ok(())
    }
}

/// The cluster key. `Debug` shows its id only.
pub struct ClusterKey {
    key: LessSafeKey,
    id: String,
}

impl fmt::Debug for ClusterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl ClusterKey {
    fn from_bytes(bytes: &[u8], origin: &str) -> Result<ClusterKey, ClusterKeyError> {
        let malformed = || ClusterKeyError::Malformed {
            origin: origin.to_string(),
        };
        if bytes.len() != KEY_LEN {
            return Err(malformed());
        }
        let key = UnboundKey::new(&AES_256_GCM, bytes).map_err(|_| malformed())?;
        let digest = Sha256::new()
            .chain_update(b"quiver cluster key id\0")
            .chain_update(bytes)
            .finalize();
        Ok(ClusterKey {
            key: LessSafeKey::new(key),
            id: hex::encode(&digest[..8]),
        })
    }

    /// A key from its base64 text (surrounding whitespace ignored); `origin`
    /// names where it came from in errors.
    pub fn from_base64(text: &str, origin: &str) -> Result<ClusterKey, ClusterKeyError> {
        let mut bytes = STANDARD
            .decode(text.trim())
            .map_err(|_| ClusterKeyError::Malformed {
                origin: origin.to_string(),
            })?;
        let key = ClusterKey::from_bytes(&bytes, origin);
        bytes.fill(0);
        key
    }

    /// The key in `path` (base64). A file others may read is used, with a
    /// warning to `chmod 600` it.
    pub fn from_file(path: &Path) -> Result<ClusterKey, ClusterKeyError> {
        let text = std::fs::read_to_string(path).map_err(|source| ClusterKeyError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        warn_if_readable_by_others(path);
        ClusterKey::from_base64(&text, &path.display().to_string())
    }

    /// The key a node is given: the file `file` (`--cluster-key-file` or
    /// [`CLUSTER_KEY_FILE_ENV`]), or else [`CLUSTER_KEY_ENV`]; none when
    /// neither is set. Both at once is refused.
    pub fn from_settings(file: Option<&Path>) -> Result<Option<ClusterKey>, ClusterKeyError> {
        let value = std::env::var(CLUSTER_KEY_ENV)
            .ok()
            .filter(|v| !v.is_empty());
        match (file, value) {
            (Some(path), Some(_)) => Err(ClusterKeyError::Ambiguous {
                path: path.to_path_buf(),
            }),
            (Some(path), None) => ClusterKey::from_file(path).map(Some),
            (None, Some(text)) => ClusterKey::from_base64(&text, CLUSTER_KEY_ENV).map(Some),
            (None, None) => Ok(None),
        }
    }

    /// The key in `path`, made (32 random bytes, mode 0600) when the file
    /// does not exist yet: `quiver dev`'s key in its data directory.
    pub fn load_or_create(path: &Path) -> Result<ClusterKey, ClusterKeyError> {
        if path.exists() {
            return ClusterKey::from_file(path);
        }
        let mut bytes = [0u8; KEY_LEN];
        SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| ClusterKeyError::Random)?;
        let text = STANDARD.encode(bytes);
        let key = ClusterKey::from_bytes(&bytes, &path.display().to_string());
        bytes.fill(0);
        write_private(path, &format!("{text}\n")).map_err(|source| ClusterKeyError::Create {
            path: path.to_path_buf(),
            source,
        })?;
        tracing::info!(file = %path.display(), "made a new cluster key");
        key
    }

    /// A short public id of the key (a hash prefix): tells two keys apart
    /// in errors without revealing either.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Seals `value` as `tenant`'s secret `name`.
    pub fn seal(
        &self,
        tenant: &str,
        name: &str,
        value: &SecretValue,
    ) -> Result<SealedValue, SealError> {
        if value.len() > MAX_SECRET_BYTES {
            return Err(SealError::TooLarge(value.len()));
        }
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new()
            .fill(&mut nonce)
            .map_err(|_| SealError::Random)?;
        let mut sealed = value.expose().as_bytes().to_vec();
        // The plaintext is overwritten in place: only ciphertext is left.
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(associated_data(tenant, name).as_bytes()),
                &mut sealed,
            )
            .map_err(|_| SealError::TooLarge(value.len()))?;
        Ok(SealedValue {
            nonce: STANDARD.encode(nonce),
            ciphertext: STANDARD.encode(&sealed),
            key_id: self.id.clone(),
        })
    }

    /// Opens `sealed` as `tenant`'s secret `name`.
    pub fn open(
        &self,
        tenant: &str,
        name: &str,
        sealed: &SealedValue,
    ) -> Result<SecretValue, OpenError> {
        if !sealed.key_id.is_empty() && sealed.key_id != self.id {
            return Err(OpenError::OtherKey {
                sealed_with: sealed.key_id.clone(),
                this_node: self.id.clone(),
            });
        }
        let nonce: [u8; NONCE_LEN] = STANDARD
            .decode(&sealed.nonce)
            .ok()
            .and_then(|n| n.try_into().ok())
            .ok_or(OpenError::Damaged)?;
        let mut buffer = STANDARD
            .decode(&sealed.ciphertext)
            .map_err(|_| OpenError::Damaged)?;
        let opened = self
            .key
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(associated_data(tenant, name).as_bytes()),
                &mut buffer,
            )
            .map(|plain| String::from_utf8(plain.to_vec()));
        buffer.fill(0);
        match opened {
            Ok(Ok(text)) => Ok(SecretValue::new(text)),
            Ok(Err(not_text)) => {
                let mut bytes = not_text.into_bytes();
                bytes.fill(0);
                Err(OpenError::Damaged)
            }
            Err(_) => Err(OpenError::Damaged),
        }
    }
}

/// What a sealed value is bound to: it opens only as this tenant's secret of
/// this name (tenant ids hold no `/`).
fn associated_data(tenant: &str, name: &str) -> String {
    format!("{tenant}/{name}")
}

/// Writes `text` to a new file only its owner may read.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

#[cfg(unix)]
fn warn_if_readable_by_others(path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    if let Ok(meta) = std::fs::metadata(path)
        && meta.permissions().mode() & 0o077 != 0
    {
        tracing::warn!(
            file = %path.display(),
            "the cluster key file may be read by other users; `chmod 600` it"
        );
    }
}

#[cfg(not(unix))]
fn warn_if_readable_by_others(_path: &Path) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ClusterKey {
        ClusterKey::from_bytes(&[7u8; KEY_LEN], "test").unwrap()
    }

    fn value(text: &str) -> SecretValue {
        SecretValue::new(text.to_string())
    }

    #[test]
    fn a_sealed_secret_opens_only_as_what_it_was_sealed_as() {
        let key = key();
        let sealed = key.seal("acme", "API_TOKEN", &value("tok-1")).unwrap();
        sealed.check_shape().unwrap();
        assert!(!sealed.ciphertext.contains("tok-1"));
        assert_eq!(
            key.open("acme", "API_TOKEN", &sealed).unwrap().expose(),
            "tok-1"
        );
        // Moved to another tenant or another name: the associated data differs.
        assert_eq!(
            key.open("other", "API_TOKEN", &sealed).unwrap_err(),
            OpenError::Damaged
        );
        assert_eq!(
            key.open("acme", "OTHER", &sealed).unwrap_err(),
            OpenError::Damaged
        );
        // Two seals of one value never look alike (a fresh nonce each time).
        let again = key.seal("acme", "API_TOKEN", &value("tok-1")).unwrap();
        assert_ne!(again.nonce, sealed.nonce);
        assert_ne!(again.ciphertext, sealed.ciphertext);
    }

    #[test]
    fn another_key_is_named_not_misread() {
        let sealed = key().seal("acme", "API_TOKEN", &value("tok-1")).unwrap();
        let other = ClusterKey::from_bytes(&[8u8; KEY_LEN], "test").unwrap();
        let error = other.open("acme", "API_TOKEN", &sealed).unwrap_err();
        assert!(
            matches!(&error, OpenError::OtherKey { sealed_with, this_node } if *sealed_with == key().id && *this_node == other.id),
            "{error}"
        );
        // Even with the key id forged to match, the wrong key cannot open it.
        let forged = SealedValue {
            key_id: other.id.clone(),
            ..sealed
        };
        assert_eq!(
            other.open("acme", "API_TOKEN", &forged).unwrap_err(),
            OpenError::Damaged
        );
    }

    #[test]
    fn a_tampered_nonce_or_ciphertext_does_not_open() {
        let key = key();
        let sealed = key.seal("acme", "API_TOKEN", &value("tok-1")).unwrap();
        let mut bytes = STANDARD.decode(&sealed.ciphertext).unwrap();
        bytes[0] ^= 1;
        let flipped = SealedValue {
            ciphertext: STANDARD.encode(&bytes),
            ..sealed.clone()
        };
        assert_eq!(
            key.open("acme", "API_TOKEN", &flipped).unwrap_err(),
            OpenError::Damaged
        );
        let mut nonce = STANDARD.decode(&sealed.nonce).unwrap();
        nonce[0] ^= 1;
        let renonced = SealedValue {
            nonce: STANDARD.encode(&nonce),
            ..sealed.clone()
        };
        assert_eq!(
            key.open("acme", "API_TOKEN", &renonced).unwrap_err(),
            OpenError::Damaged
        );
        let truncated = SealedValue {
            ciphertext: STANDARD.encode(&bytes[..4]),
            ..sealed
        };
        assert!(truncated.check_shape().is_err());
        assert_eq!(
            key.open("acme", "API_TOKEN", &truncated).unwrap_err(),
            OpenError::Damaged
        );
    }

    #[test]
    fn keys_are_32_bytes_of_base64_and_never_printed() {
        let text = STANDARD.encode([9u8; KEY_LEN]);
        let key = ClusterKey::from_base64(&format!("{text}\n"), "env").unwrap();
        assert!(!format!("{key:?}").contains(&text));
        let short = ClusterKey::from_base64(&STANDARD.encode([9u8; 16]), "QUIVER_CLUSTER_KEY")
            .unwrap_err()
            .to_string();
        assert!(
            short.contains("QUIVER_CLUSTER_KEY") && short.contains("head -c 32"),
            "{short}"
        );
        assert!(ClusterKey::from_base64("not base64!", "x").is_err());
        let big = value(&"x".repeat(MAX_SECRET_BYTES + 1));
        assert!(matches!(
            key.seal("a", "b", &big),
            Err(SealError::TooLarge(_))
        ));
    }

    #[test]
    fn dev_makes_a_private_key_once_and_reuses_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(DEV_CLUSTER_KEY_FILE);
        let first = ClusterKey::load_or_create(&path).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let second = ClusterKey::load_or_create(&path).unwrap();
        assert_eq!(first.id(), second.id());
        let sealed = first.seal("t", "n", &value("v")).unwrap();
        assert_eq!(second.open("t", "n", &sealed).unwrap().expose(), "v");
    }
}
