//! References in upstream header and env values, expanded by the node that
//! connects: `${VAR}` and `${VAR:-default}` from its environment, and
//! `${tenant_secret:NAME}` from the secrets of the tenant a connection is made
//! for. Values are stored and replicated in this form, never expanded.

use std::collections::BTreeSet;

use crate::secret_value::TenantSecrets;

/// What a tenant-secret reference starts with: `${tenant_secret:NAME}`.
pub const TENANT_SECRET_PREFIX: &str = "tenant_secret:";

/// Why a reference could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExpandError {
    /// A `${` without its `}`.
    #[error("unclosed `${{` in a value")]
    Unclosed,
    /// The variable is not set (or not Unicode) and no default was given.
    #[error(
        "environment variable `{name}` is not set (write `${{{name}:-default}}` to give a default)"
    )]
    Unset {
        /// The variable.
        name: String,
        /// Why the environment had no value for it.
        #[source]
        source: std::env::VarError,
    },
    /// A `${tenant_secret:NAME}` where no tenant's secrets are at hand.
    #[error(
        "`${{tenant_secret:{name}}}` is resolved per tenant when an executor connects for that tenant; it cannot be expanded here"
    )]
    TenantSecretOutOfPlace {
        /// The secret's name.
        name: String,
    },
    /// The tenant a connection is made for has no secret of that name.
    #[error(
        "tenant `{tenant}` has no secret `{name}` (an operator sets it with `quiver ctl secret set --tenant {tenant} {name}`)"
    )]
    TenantSecretMissing {
        /// The tenant.
        tenant: String,
        /// The secret's name.
        name: String,
    },
}

/// One piece of a value: literal text, or the inside of a `${…}`.
enum Piece<'a> {
    Text(&'a str),
    Reference(&'a str),
}

/// Splits `text` into literal pieces and references; `$$` is a literal `$`.
fn pieces(text: &str) -> Result<Vec<Piece<'_>>, ExpandError> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(pos) = rest.find('$') {
        out.push(Piece::Text(&rest[..pos]));
        let after = &rest[pos + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            out.push(Piece::Text("$"));
            rest = stripped;
        } else if let Some(inner) = after.strip_prefix('{') {
            let end = inner.find('}').ok_or(ExpandError::Unclosed)?;
            out.push(Piece::Reference(&inner[..end]));
            rest = &inner[end + 1..];
        } else {
            out.push(Piece::Text("$"));
            rest = after;
        }
    }
    out.push(Piece::Text(rest));
    Ok(out)
}

/// Expands `${VAR}` and `${VAR:-default}` from this process's environment; `$$`
/// is a literal `$`. Upstream `headers` and `env` values are kept in this form
/// (secrets by reference) and expanded by the node that connects. A
/// `${tenant_secret:NAME}` is refused here: see [`expand_with_secrets`].
pub fn expand_references(text: &str) -> Result<String, ExpandError> {
    expand_with_secrets(text, None)
}

/// [`expand_references`], with `${tenant_secret:NAME}` taken from `secrets`
/// (the tenant a connection is made for); without them such a reference is
/// an error. The result holds plaintext: use it at once, never log it.
pub fn expand_with_secrets(
    text: &str,
    secrets: Option<&TenantSecrets>,
) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    for piece in pieces(text)? {
        let spec = match piece {
            Piece::Text(t) => {
                out.push_str(t);
                continue;
            }
            Piece::Reference(spec) => spec,
        };
        if let Some(name) = spec.strip_prefix(TENANT_SECRET_PREFIX) {
            let Some(secrets) = secrets else {
                return Err(ExpandError::TenantSecretOutOfPlace {
                    name: name.to_string(),
                });
            };
            let value = secrets
                .get(name)
                .ok_or_else(|| ExpandError::TenantSecretMissing {
                    tenant: secrets.tenant().to_string(),
                    name: name.to_string(),
                })?;
            out.push_str(value.expose());
            continue;
        }
        let (name, default) = match spec.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (spec, None),
        };
        match (std::env::var(name), default) {
            (Ok(v), _) => out.push_str(&v),
            (Err(_), Some(d)) => out.push_str(d),
            (Err(source), None) => {
                return Err(ExpandError::Unset {
                    name: name.to_owned(),
                    source,
                });
            }
        }
    }
    Ok(out)
}

/// Whether `text` parses (every `${` closed), without expanding anything.
pub fn check_references(text: &str) -> Result<(), ExpandError> {
    pieces(text).map(|_| ())
}

/// The `NAME`s of every `${tenant_secret:NAME}` in `text` (none when the text
/// does not parse; validation reports that).
pub fn tenant_secret_names(text: &str) -> BTreeSet<String> {
    pieces(text)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|piece| match piece {
            Piece::Reference(spec) => spec.strip_prefix(TENANT_SECRET_PREFIX).map(str::to_string),
            Piece::Text(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret_value::SecretValue;

    #[test]
    fn references_expand_from_the_environment_or_their_default() {
        // PATH is set wherever tests run; the other name is set nowhere.
        let path = std::env::var("PATH").unwrap();
        assert_eq!(expand_references("a=${PATH}").unwrap(), format!("a={path}"));
        assert_eq!(
            expand_references("${QUIVER_TEST_NEVER_SET:-fallback} costs $$5").unwrap(),
            "fallback costs $5"
        );
        assert_eq!(expand_references("plain $ sign").unwrap(), "plain $ sign");
    }

    #[test]
    fn unexpandable_references_say_why() {
        assert_eq!(
            expand_references("Bearer ${TOKEN"),
            Err(ExpandError::Unclosed)
        );
        let unset = expand_references("${QUIVER_TEST_NEVER_SET}").unwrap_err();
        assert!(matches!(
            &unset,
            ExpandError::Unset { name, source: std::env::VarError::NotPresent }
                if name == "QUIVER_TEST_NEVER_SET"
        ));
        assert_eq!(
            unset.to_string(),
            "environment variable `QUIVER_TEST_NEVER_SET` is not set \
             (write `${QUIVER_TEST_NEVER_SET:-default}` to give a default)"
        );
    }

    #[test]
    fn tenant_secrets_expand_only_from_the_tenant_given() {
        let text = "Bearer ${tenant_secret:API_TOKEN} $${tenant_secret:LITERAL}";
        assert_eq!(
            tenant_secret_names(text),
            BTreeSet::from(["API_TOKEN".to_string()]),
            "`$$` escapes the second one"
        );
        assert_eq!(
            expand_references(text),
            Err(ExpandError::TenantSecretOutOfPlace {
                name: "API_TOKEN".into()
            })
        );
        let mut acme = TenantSecrets::new("acme");
        acme.insert("API_TOKEN", SecretValue::new("t-acme".into()));
        assert_eq!(
            expand_with_secrets(text, Some(&acme)).unwrap(),
            "Bearer t-acme ${tenant_secret:LITERAL}"
        );
        let missing = expand_with_secrets(text, Some(&TenantSecrets::new("other"))).unwrap_err();
        assert!(
            missing
                .to_string()
                .contains("quiver ctl secret set --tenant other API_TOKEN"),
            "{missing}"
        );
    }
}
