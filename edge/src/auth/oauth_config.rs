//! `[edge.oauth]`: which authorization servers' bearer tokens the edge
//! accepts, for which resource and scopes, and the configuration errors that
//! name the key to fix.

use std::{
    collections::HashSet,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};

use super::jwks::JwksError;

/// `[edge.oauth]` in quiver.toml: which bearer tokens the edge accepts.
///
/// ```toml
/// [edge.oauth]
/// resource = "https://mcp.example.com/mcp"
/// required_scopes = ["mcp:tools"]
///
/// [[edge.oauth.issuers]]
/// issuer = "https://idp.example.com"
/// jwks_url = "https://idp.example.com/.well-known/jwks.json"
/// tenant_claim = "org"
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthConfig {
    /// The canonical URI of this MCP server (RFC 8707 resource indicator),
    /// e.g. `"https://mcp.example.com/mcp"`. Tokens must carry it in `aud`
    /// (a string or an array of strings), exactly as written here.
    pub resource: String,
    /// The authorization servers whose tokens are trusted.
    pub issuers: Vec<IssuerConfig>,
    /// Scopes every token must carry (in a space-separated `scope` claim, or
    /// an `scp` array). Default: none.
    #[serde(default)]
    pub required_scopes: Vec<String>,
    /// Clock leeway for `exp`, `nbf` and `iat`, in seconds. Default: 60.
    #[serde(default = "default_leeway_secs")]
    pub leeway_secs: u64,
}

fn default_leeway_secs() -> u64 {
    60
}

/// One trusted authorization server, `[[edge.oauth.issuers]]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IssuerConfig {
    /// The exact `iss` value of this server's tokens.
    pub issuer: String,
    /// The server's signing keys from a file (JSON `{"keys": [...]}`), read at
    /// start and re-read when a token names an unknown key. Set this or
    /// `jwks_url`, not both.
    #[serde(default)]
    pub jwks_file: Option<PathBuf>,
    /// The server's signing keys from an http or https URL, fetched on first
    /// use and again when a token names an unknown key. Set this or
    /// `jwks_file`, not both.
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// The claim whose string value names the caller's tenant
    /// (`[A-Za-z0-9_-]{1,64}`). Default: `"tenant"`.
    #[serde(default = "default_tenant_claim")]
    pub tenant_claim: String,
}

fn default_tenant_claim() -> String {
    "tenant".to_owned()
}

/// Where an issuer's keys come from, once its configuration is checked.
pub(crate) enum KeySource<'a> {
    File(&'a Path),
    Url(reqwest::Url),
}

impl IssuerConfig {
    /// The one key source this issuer names, or the error pointing at its
    /// `[[edge.oauth.issuers]]` entry.
    pub(crate) fn key_source(&self, index: usize) -> Result<KeySource<'_>, JwtConfigError> {
        let issuer = self.issuer.clone();
        match (&self.jwks_file, &self.jwks_url) {
            (None, None) => Err(JwtConfigError::NoJwksSource { index, issuer }),
            (Some(_), Some(_)) => Err(JwtConfigError::TwoJwksSources { index, issuer }),
            (Some(path), None) => Ok(KeySource::File(path)),
            (None, Some(url)) => match reqwest::Url::parse(url) {
                Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => {
                    Ok(KeySource::Url(parsed))
                }
                _ => Err(JwtConfigError::BadJwksUrl {
                    index,
                    issuer,
                    url: url.clone(),
                }),
            },
        }
    }
}

impl OAuthConfig {
    /// Checks what can be checked without reading keys: a resource is set,
    /// each issuer appears once with exactly one of `jwks_file`/`jwks_url`,
    /// URLs are http or https, and claim and scope names are not empty.
    pub fn validate(&self) -> Result<(), JwtConfigError> {
        if self.resource.trim().is_empty() {
            return Err(JwtConfigError::EmptyResource);
        }
        if self.issuers.is_empty() {
            return Err(JwtConfigError::NoIssuers);
        }
        if let Some(scope) = self
            .required_scopes
            .iter()
            .find(|scope| scope.is_empty() || scope.contains(char::is_whitespace))
        {
            return Err(JwtConfigError::BadRequiredScope {
                scope: scope.clone(),
            });
        }
        let mut seen = HashSet::new();
        for (index, issuer) in self.issuers.iter().enumerate() {
            if issuer.issuer.is_empty() {
                return Err(JwtConfigError::EmptyIssuer { index });
            }
            if !seen.insert(issuer.issuer.as_str()) {
                return Err(JwtConfigError::DuplicateIssuer {
                    index,
                    issuer: issuer.issuer.clone(),
                });
            }
            issuer.key_source(index)?;
            if issuer.tenant_claim.is_empty() {
                return Err(JwtConfigError::EmptyTenantClaim {
                    index,
                    issuer: issuer.issuer.clone(),
                });
            }
        }
        Ok(())
    }
}

/// Why `[edge.oauth]` cannot be used. Each message names the key, the issuer
/// or the file, and what to change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JwtConfigError {
    /// `resource` is empty.
    #[error(
        "edge.oauth.resource is empty; set it to this server's canonical URI, e.g. \"https://mcp.example.com/mcp\""
    )]
    EmptyResource,
    /// No issuer is configured.
    #[error(
        "edge.oauth.issuers is empty; add an [[edge.oauth.issuers]] entry with `issuer` and `jwks_file` or `jwks_url`"
    )]
    NoIssuers,
    /// A required scope is empty or contains whitespace.
    #[error(
        "edge.oauth.required_scopes: {scope:?} is not a scope; give each scope as its own non-empty string without spaces"
    )]
    BadRequiredScope {
        /// The offending entry.
        scope: String,
    },
    /// An issuer's `issuer` is empty.
    #[error(
        "edge.oauth.issuers[{index}].issuer is empty; set it to the exact `iss` value of the authorization server's tokens"
    )]
    EmptyIssuer {
        /// The position of the entry in `issuers`.
        index: usize,
    },
    /// Two entries name the same issuer.
    #[error(
        "edge.oauth.issuers[{index}]: issuer {issuer:?} is listed twice; keep one entry per issuer"
    )]
    DuplicateIssuer {
        /// The position of the second entry.
        index: usize,
        /// The repeated issuer.
        issuer: String,
    },
    /// An issuer has neither `jwks_file` nor `jwks_url`.
    #[error(
        "edge.oauth.issuers[{index}] ({issuer}): set `jwks_file` or `jwks_url` to where its signing keys are"
    )]
    NoJwksSource {
        /// The position of the entry.
        index: usize,
        /// The issuer.
        issuer: String,
    },
    /// An issuer has both `jwks_file` and `jwks_url`.
    #[error(
        "edge.oauth.issuers[{index}] ({issuer}): both `jwks_file` and `jwks_url` are set; keep one"
    )]
    TwoJwksSources {
        /// The position of the entry.
        index: usize,
        /// The issuer.
        issuer: String,
    },
    /// `jwks_url` is not an http or https URL.
    #[error(
        "edge.oauth.issuers[{index}].jwks_url ({issuer}): {url:?} is not an http or https URL; give the full JWKS URL, e.g. \"https://idp.example.com/.well-known/jwks.json\""
    )]
    BadJwksUrl {
        /// The position of the entry.
        index: usize,
        /// The issuer.
        issuer: String,
        /// The configured value.
        url: String,
    },
    /// `tenant_claim` is empty.
    #[error(
        "edge.oauth.issuers[{index}].tenant_claim ({issuer}) is empty; name the claim that holds the tenant, or remove the key for \"tenant\""
    )]
    EmptyTenantClaim {
        /// The position of the entry.
        index: usize,
        /// The issuer.
        issuer: String,
    },
    /// A `jwks_file` could not be read.
    #[error(
        "edge.oauth.issuers[{index}].jwks_file ({issuer}): cannot read {}; check the path and that the edge's user may read it",
        path.display()
    )]
    ReadJwksFile {
        /// The position of the entry.
        index: usize,
        /// The issuer.
        issuer: String,
        /// The configured path.
        path: PathBuf,
        /// Why reading failed.
        #[source]
        source: std::io::Error,
    },
    /// A `jwks_file` holds no usable JWKS.
    #[error(
        "edge.oauth.issuers[{index}].jwks_file ({issuer}): {} is not a usable JWKS ({source}); give the authorization server's published key set",
        path.display()
    )]
    BadJwksFile {
        /// The position of the entry.
        index: usize,
        /// The issuer.
        issuer: String,
        /// The configured path.
        path: PathBuf,
        /// What is wrong with the document.
        #[source]
        source: JwksError,
    },
    /// The HTTP client for `jwks_url` could not be built (a build or
    /// platform problem, not a configuration one).
    #[error(
        "cannot build the HTTP client for JWKS URLs: {0}; use `jwks_file` instead or report this build"
    )]
    HttpClient(#[source] reqwest::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_errors_name_the_offending_key() {
        let issuer = |name: &str| IssuerConfig {
            issuer: name.into(),
            jwks_file: Some("/nonexistent/jwks.json".into()),
            jwks_url: None,
            tenant_claim: "tenant".into(),
        };
        let base = OAuthConfig {
            resource: "https://mcp.test/mcp".into(),
            issuers: vec![issuer("a")],
            required_scopes: Vec::new(),
            leeway_secs: 60,
        };
        let error_of = |change: &dyn Fn(&mut OAuthConfig)| {
            let mut config = base.clone();
            change(&mut config);
            config.validate().expect_err("invalid").to_string()
        };
        assert!(error_of(&|c| c.resource = " ".into()).contains("edge.oauth.resource"));
        assert!(error_of(&|c| c.issuers.clear()).contains("edge.oauth.issuers is empty"));
        assert!(
            error_of(&|c| c.issuers.push(issuer("a")))
                .contains("issuers[1]: issuer \"a\" is listed twice")
        );
        assert!(
            error_of(&|c| c.issuers[0].jwks_file = None)
                .contains("issuers[0] (a): set `jwks_file` or `jwks_url`")
        );
        assert!(
            error_of(&|c| c.issuers[0].jwks_url = Some("https://idp/jwks".into())).contains("both")
        );
        assert!(
            error_of(&|c| {
                c.issuers[0].jwks_file = None;
                c.issuers[0].jwks_url = Some("file:///etc/jwks".into());
            })
            .contains("issuers[0].jwks_url (a)")
        );
        assert!(
            error_of(&|c| c.issuers[0].tenant_claim.clear()).contains("issuers[0].tenant_claim")
        );
        assert!(error_of(&|c| c.required_scopes = vec!["a b".into()]).contains("required_scopes"));
    }

    #[test]
    fn config_reads_from_toml_with_defaults_and_refuses_unknown_keys() {
        let config: OAuthConfig = toml::from_str(
            r#"
            resource = "https://mcp.test/mcp"
            [[issuers]]
            issuer = "https://idp.test"
            jwks_url = "https://idp.test/jwks"
            "#,
        )
        .expect("config");
        assert_eq!(config.leeway_secs, 60);
        assert!(config.required_scopes.is_empty());
        assert_eq!(config.issuers[0].tenant_claim, "tenant");
        assert_eq!(config.validate().map_err(|error| error.to_string()), Ok(()));
        let unknown =
            toml::from_str::<OAuthConfig>("resource = \"r\"\nissuers = []\naudience = \"x\"\n");
        assert!(unknown.is_err());
        let unknown_in_issuer = toml::from_str::<OAuthConfig>(
            "resource = \"r\"\n[[issuers]]\nissuer = \"i\"\njwks = \"x\"\n",
        );
        assert!(unknown_in_issuer.is_err());
    }
}
