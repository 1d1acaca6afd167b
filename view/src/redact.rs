//! Redaction of error text before it reaches a client or a script. The policy
//! (docs/security.md says the same for operators):
//!
//! - **Always removed**: credentials and secret values (private keys, bearer
//!   tokens, JWTs, cloud and API keys, `password=…`-style assignments, the
//!   values of this process's environment variables whose names look secret,
//!   `NAME=value` environment assignments) and stack frames. Even when the
//!   caller sent the same value itself: it loses nothing, and an error that
//!   echoed a guessed secret would confirm the guess.
//! - **Removed unless the caller sent it**: URLs, IP addresses and file paths
//!   (internal addresses, Quiver's own files, an upstream's configuration). A
//!   location that appears inside a string of the caller's own arguments (or
//!   script) is kept, so the model can see which of its values was refused.
//! - **Kept**: everything else, including an upstream's human-readable reason
//!   (`Access denied - path outside allowed directories`).

use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde_json::Value;

/// What kind of thing a pattern finds, which decides whether it may be kept.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Finding {
    /// A credential or secret value: always replaced.
    Secret,
    /// A URL, address or path: replaced unless the caller sent it.
    Location,
    /// A stack frame: always removed.
    StackFrame,
}

/// One pattern: what it finds and what replaces it (`$pre` keeps a leading
/// delimiter the pattern had to match).
struct Rule {
    regex: Regex,
    replacement: &'static str,
    finding: Finding,
    /// For secrets: whether this match really is one (e.g. `password: wrong`
    /// is prose, `password: hunter2x` is not).
    applies: fn(&Captures) -> bool,
}

fn always(_: &Captures) -> bool {
    true
}

/// A value after `secret-word:` (unquoted) counts when it looks machine-made:
/// a digit, mixed case, a symbol, or length; plain lowercase words are prose.
fn looks_like_secret(captures: &Captures) -> bool {
    let Some(value) = captures.name("value").map(|m| m.as_str()) else {
        return true;
    };
    let separator = captures.name("sep").map_or("", |m| m.as_str());
    if separator.contains('=') || separator.contains('"') || separator.contains('\'') {
        return true;
    }
    value.len() >= 20
        || value.chars().any(|c| c.is_ascii_digit())
        || (value.chars().any(char::is_uppercase) && value.chars().any(char::is_lowercase))
        || value.chars().any(|c| !c.is_alphanumeric() && c != '-')
}

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let rule = |pattern: &str, replacement: &'static str, finding, applies| {
        Regex::new(pattern).ok().map(|regex| Rule {
            regex,
            replacement,
            finding,
            applies,
        })
    };
    use Finding::*;
    [
        rule(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)", "[private key]", Secret, always as fn(&Captures) -> bool),
        rule(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}", "Bearer [redacted]", Secret, always),
        rule(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*", "[jwt]", Secret, always),
        rule(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b", "[cloud key]", Secret, always),
        rule(r"\b(sk|pk|rk|ghp|gho|ghs|ghu|github_pat|xox[abpors]|glpat)[-_][A-Za-z0-9_-]{8,}", "[api key]", Secret, always),
        // URL credentials (`scheme://user:secret@host`) before the URL rule sees them.
        rule(r"(?P<pre>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@'\x22]+:)[^\s@/'\x22]+@", "$pre[redacted]@", Secret, always),
        rule(r#"(?i)\b(?P<key>[a-z0-9_-]*(?:api[_-]?key|token|secret|password|passwd|credentials?|authorization))(?P<sep>["']?\s*[:=]\s*["']?)(?P<value>[^\s"',;&]{4,})"#, "$key$sep[redacted]", Secret, looks_like_secret),
        // An environment assignment as printed by `env` or a shell: NAME=value.
        rule(r"\b(?P<key>[A-Z][A-Z0-9]*_[A-Z0-9_]+)=(?P<value>[^\s'\x22,;&]+)", "$key=[redacted]", Secret, always),
        // A backtick is never part of a URL (RFC 3986), and messages quote with it.
        rule(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\x22<>)\x60]+", "[url]", Location, always),
        rule(r"\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b", "[address]", Location, always),
        rule(r"\[?\b([0-9a-fA-F]{1,4}:){2,7}[0-9a-fA-F]{1,4}\b\]?(:\d+)?", "[address]", Location, always),
        rule(r"(?P<pre>^|[\s'\x22`(=])(/[A-Za-z0-9._-]+){2,}/?", "$pre[path]", Location, always),
        rule(r"\b[A-Za-z]:\\[^\s'\x22]+", "[path]", Location, always),
        rule(r"(?m)^\s+at .*$", "", StackFrame, always),
    ]
    .into_iter()
    .flatten()
    .collect()
});

/// Names of environment variables whose values are secrets wherever they appear.
fn secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "AUTH",
        "PRIVATE",
    ]
    .iter()
    .any(|word| upper.contains(word))
}

/// Values of this process's secret-looking environment variables (at least 6
/// bytes: shorter ones would redact ordinary words), longest first. Upstreams'
/// `${VAR}` headers and env values come from here.
static ENVIRONMENT_SECRETS: LazyLock<Vec<String>> = LazyLock::new(|| {
    let mut values: Vec<String> = std::env::vars()
        .filter(|(name, value)| secret_name(name) && value.len() >= 6)
        .map(|(_, value)| value)
        .collect();
    values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    values.dedup();
    values
});

/// `text` with secrets, URLs, IP addresses, file paths and stack frames
/// replaced, for text no caller supplied anything to.
pub fn redact(text: &str) -> String {
    redact_with(text, &[])
}

/// `text` redacted for the caller who sent `arguments` (a tool call's
/// arguments, a script, any JSON): URLs, addresses and paths found inside the
/// caller's own strings are kept; secrets never are.
///
/// ```
/// use quiver_view::redact::redact_for_caller;
/// let error = "Access denied - path outside allowed directories: /etc/passwd not in /srv/share";
/// let args = serde_json::json!({"path": "/etc/passwd"});
/// assert_eq!(
///     redact_for_caller(error, &args),
///     "Access denied - path outside allowed directories: /etc/passwd not in [path]"
/// );
/// ```
pub fn redact_for_caller(text: &str, arguments: &Value) -> String {
    let mut sent = Vec::new();
    collect_strings(arguments, &mut sent);
    redact_with(text, &sent)
}

fn collect_strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

fn redact_with(text: &str, sent: &[&str]) -> String {
    let mut out = text.to_string();
    for secret in ENVIRONMENT_SECRETS.iter() {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), "[redacted]");
        }
    }
    for rule in RULES.iter() {
        out = rule
            .regex
            .replace_all(&out, |captures: &Captures| {
                let whole = captures.get(0).map_or("", |m| m.as_str());
                let keep = match rule.finding {
                    Finding::Secret => !(rule.applies)(captures),
                    Finding::StackFrame => false,
                    Finding::Location => {
                        let pre = captures.name("pre").map_or(0, |m| m.len());
                        let found = &whole[pre..];
                        sent.iter().any(|s| s.contains(found))
                    }
                };
                if keep {
                    whole.to_string()
                } else {
                    let mut replaced = String::new();
                    captures.expand(rule.replacement, &mut replaced);
                    replaced
                }
            })
            .into_owned();
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{redact, redact_for_caller};

    #[test]
    fn removes_credentials_urls_addresses_and_paths() {
        let text = "cannot start `/usr/local/bin/github-mcp`: token=ghp_abcdefghijklmnop at https://api.example.com/v1?key=1 from 10.1.2.3:8443 Authorization: Bearer abc.def.ghi.jkl";
        let clean = redact(text);
        for secret in [
            "/usr/local/bin",
            "ghp_abcdefghijklmnop",
            "api.example.com",
            "10.1.2.3",
            "abc.def.ghi.jkl",
        ] {
            assert!(!clean.contains(secret), "{secret} leaked: {clean}");
        }
    }

    #[test]
    fn keeps_ordinary_text() {
        let text =
            "upstream `weather` did not answer within 30s; the call was cancelled and not retried";
        assert_eq!(redact(text), text);
        let prose = "password: incorrect, try again";
        assert_eq!(redact(prose), prose);
    }

    #[test]
    fn removes_private_keys_and_jwts() {
        let text = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY----- eyJhbGciOi.eyJzdWIiOiIx.sig";
        let clean = redact(text);
        assert!(
            !clean.contains("MIIE") && !clean.contains("eyJhbGciOi"),
            "{clean}"
        );
    }

    #[test]
    fn keeps_the_callers_own_path_and_the_reason_but_not_the_servers() {
        let error = "Access denied - path outside allowed directories: /etc/shadow not in /srv/quiver/share, /home/op/.config";
        let clean = redact_for_caller(error, &json!({"path": "/etc/shadow"}));
        assert_eq!(
            clean,
            "Access denied - path outside allowed directories: /etc/shadow not in [path], [path]"
        );
    }

    #[test]
    fn keeps_locations_inside_the_callers_strings_only() {
        let error = "fetch https://example.org/a failed via proxy http://10.0.0.9:3128 (id 42)";
        let clean = redact_for_caller(
            error,
            &json!({"requests": [{"url": "https://example.org/a", "id": 42}]}),
        );
        assert_eq!(
            clean,
            "fetch https://example.org/a failed via proxy [url] (id 42)"
        );
    }

    #[test]
    fn never_keeps_secrets_even_when_the_caller_sent_them() {
        let error = "rejected password=hunter2x and key ghp_abcdefghijklmnop for postgres://admin:s3cr3t@db.internal:5432/app; DB_PASSWORD=s3cr3t";
        let clean = redact_for_caller(
            error,
            &json!({"password": "hunter2x", "token": "ghp_abcdefghijklmnop"}),
        );
        for secret in ["hunter2x", "ghp_abcdefghijklmnop", "s3cr3t", "db.internal"] {
            assert!(!clean.contains(secret), "{secret} leaked: {clean}");
        }
        assert!(clean.starts_with("rejected password=[redacted]"), "{clean}");
    }

    #[test]
    fn a_callers_short_value_does_not_unlock_an_address() {
        // Only a location inside the caller's own string is kept, never the reverse.
        let clean = redact_for_caller("cannot reach 10.1.2.3:8443", &json!({"n": "1"}));
        assert_eq!(clean, "cannot reach [address]");
    }
}
