//! Redaction of what must not reach a client in an error: credentials, URLs,
//! addresses and file paths. Applied to every upstream or internal error text
//! before it becomes part of a tool result.

use std::sync::LazyLock;

use regex::Regex;

static PATTERNS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        (r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)", "[private key]"),
        (r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}", "Bearer [redacted]"),
        (r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*", "[jwt]"),
        (r"\b(AKIA|ASIA)[0-9A-Z]{16}\b", "[cloud key]"),
        (r"\b(sk|pk|rk|ghp|gho|ghs|ghu|github_pat|xox[abpors]|glpat)[-_][A-Za-z0-9_-]{8,}", "[api key]"),
        (r#"(?i)\b(api[_-]?key|token|secret|password|passwd|authorization)(["']?\s*[:=]\s*["']?)[^\s"',;&]{4,}"#, "$1$2[redacted]"),
        (r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\x22<>)]+", "[url]"),
        (r"\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b", "[address]"),
        (r"\[?\b([0-9a-fA-F]{1,4}:){2,7}[0-9a-fA-F]{1,4}\b\]?(:\d+)?", "[address]"),
        (r"(^|[\s'\x22`(=])(/[A-Za-z0-9._-]+){2,}/?", "$1[path]"),
        (r"\b[A-Za-z]:\\[^\s'\x22]+", "[path]"),
        (r"(?m)^\s+at .*$", ""),
    ]
    .into_iter()
    .filter_map(|(p, r)| Regex::new(p).ok().map(|re| (re, r)))
    .collect()
});

/// `text` with secrets, URLs, IP addresses, file paths and stack frames replaced.
pub fn redact(text: &str) -> String {
    let mut out = text.to_string();
    for (re, replacement) in PATTERNS.iter() {
        out = re.replace_all(&out, *replacement).into_owned();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::redact;

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
}
