//! Which `Host` an edge answers to, for the routes rmcp's MCP service does
//! not guard itself (the console, `/status`, `/metrics`, search signals,
//! OAuth metadata): the same rule as rmcp's allowed hosts, written once here
//! because rmcp keeps its own check private.

use axum::{extract::Request, http::header};

/// Whether `host` (`name` or `name:port`) is one the edge answers to: as
/// on `/mcp`, an allowed name matches on any port, and `name:port` entries
/// match exactly.
pub(crate) fn host_allowed(allowed: &[String], host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or(host, |(inner, _)| inner),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    !host.is_empty()
        && allowed.iter().any(|a| {
            let a = a.trim_start_matches('[').trim_end_matches(']');
            a.eq_ignore_ascii_case(host) || a.eq_ignore_ascii_case(name)
        })
}

/// The host a request names: its `Host` header, or the HTTP/2 authority.
pub(crate) fn request_host(request: &Request) -> Option<&str> {
    request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()))
}

#[cfg(test)]
mod tests {
    use super::host_allowed;

    #[test]
    fn hosts_match_by_name_on_any_port_or_exactly_with_one() {
        let allowed = vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
            "::1".to_string(),
            "mcp.example.com:8443".to_string(),
        ];
        for ok in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:1",
            "[::1]:8080",
            "mcp.example.com:8443",
        ] {
            assert!(host_allowed(&allowed, ok), "{ok}");
        }
        for refused in [
            "",
            "attacker.example",
            "attacker.example:8080",
            "mcp.example.com:9999",
            "localhost.attacker.example",
        ] {
            assert!(!host_allowed(&allowed, refused), "{refused}");
        }
    }
}
