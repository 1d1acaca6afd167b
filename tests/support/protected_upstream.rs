//! An MCP server behind OAuth 2.1 and its authorization server, on one
//! loopback port, for the service-account (client credentials) tests of the
//! workspace's test crates (the upstream crate's includes this file by
//! path). It checks the client's credentials, the grant, the RFC 8707
//! resource and the bearer token, refuses everything else, and can revoke
//! the tokens issued so far.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    net::{TcpListener, TcpStream},
};

/// The service account the server accepts.
pub const CLIENT_ID: &str = "quiver-service";
/// Its secret.
pub const CLIENT_SECRET: &str = "s3rvice-secret";

/// What the server saw, and what it accepts.
#[derive(Default)]
pub struct Seen {
    /// Tokens issued (`tok-1`, `tok-2`, …).
    pub tokens_issued: AtomicUsize,
    /// MCP requests refused with 401.
    pub refused_mcp: AtomicUsize,
    /// Tool calls answered.
    pub tool_calls: AtomicUsize,
    /// Tokens numbered at or below this are refused (revoked).
    pub revoked_through: AtomicUsize,
}

/// One HTTP request: method, path, headers (lower-case names), body.
struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

async fn read_request(stream: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    stream.read_line(&mut line).await.ok()?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        stream.read_line(&mut header).await.ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let length = (headers.iter().find(|(n, _)| n == "content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    stream.read_exact(&mut body).await.ok()?;
    Some(Request {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn respond(status: &str, headers: &[(&str, String)], body: &str) -> String {
    let mut out = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    out
}

/// `application/x-www-form-urlencoded` fields.
fn form(body: &str) -> Vec<(String, String)> {
    let decode = |text: &str| {
        let bytes = text.replace('+', " ").into_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            match (
                bytes[i],
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            ) {
                (b'%', Some(high), Some(low)) => {
                    out.push((high * 16 + low) as u8);
                    i += 3;
                }
                (b, _, _) => {
                    out.push(b);
                    i += 1;
                }
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    body.split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, value)| (decode(name), decode(value)))
        .collect()
}

/// The upstream and its authorization server, on one loopback port: its MCP
/// URL, and what it saw.
pub async fn protected_upstream() -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let (server_base, server_seen) = (base.clone(), seen.clone());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (base, seen) = (server_base.clone(), server_seen.clone());
            tokio::spawn(async move {
                let mut stream = BufReader::new(stream);
                while let Some(request) = read_request(&mut stream).await {
                    let answer = answer(&base, &seen, &request);
                    if stream.get_mut().write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (format!("{base}/mcp"), seen)
}

fn answer(base: &str, seen: &Seen, request: &Request) -> String {
    let json_type = ("Content-Type", "application/json".to_string());
    let resource = format!("{base}/mcp");
    match (request.method.as_str(), request.path.as_str()) {
        ("GET", path) if path.starts_with("/.well-known/oauth-protected-resource") => respond(
            "200 OK",
            &[json_type],
            &json!({"resource": resource, "authorization_servers": [base]}).to_string(),
        ),
        ("GET", "/.well-known/oauth-authorization-server") => respond(
            "200 OK",
            &[json_type],
            &json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["client_credentials"],
                "token_endpoint_auth_methods_supported": ["client_secret_post"],
            })
            .to_string(),
        ),
        ("POST", "/token") => {
            let fields = form(&request.body);
            let field = |name: &str| {
                fields
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.as_str())
            };
            let credentials_ok = field("client_id") == Some(CLIENT_ID)
                && field("client_secret") == Some(CLIENT_SECRET);
            if field("grant_type") != Some("client_credentials")
                || !credentials_ok
                || field("resource") != Some(resource.as_str())
            {
                return respond(
                    "400 Bad Request",
                    &[json_type],
                    r#"{"error":"invalid_client"}"#,
                );
            }
            let n = seen.tokens_issued.fetch_add(1, Ordering::SeqCst) + 1;
            respond(
                "200 OK",
                &[json_type],
                &json!({"access_token": format!("tok-{n}"), "token_type": "Bearer", "expires_in": 3600})
                    .to_string(),
            )
        }
        ("POST", "/mcp") => {
            let bearer = request
                .header("authorization")
                .and_then(|h| h.strip_prefix("Bearer "));
            let revoked = seen.revoked_through.load(Ordering::SeqCst);
            let valid = bearer
                .and_then(|t| t.strip_prefix("tok-"))
                .and_then(|n| n.parse::<usize>().ok())
                .is_some_and(|n| n > revoked);
            if !valid {
                seen.refused_mcp.fetch_add(1, Ordering::SeqCst);
                let challenge = format!(
                    "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
                );
                return respond("401 Unauthorized", &[("WWW-Authenticate", challenge)], "");
            }
            let message: Value = serde_json::from_str(&request.body).unwrap_or_default();
            let Some(id) = message.get("id").cloned() else {
                return respond("202 Accepted", &[], "");
            };
            let result = match message["method"].as_str().unwrap_or_default() {
                "initialize" => json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "tracker", "version": "1.0.0"},
                }),
                "tools/list" => json!({"tools": [{
                    "name": "whoami",
                    "description": "Says who the caller is, as the tracker sees it.",
                    "inputSchema": {"type": "object", "properties": {}},
                }]}),
                "tools/call" => {
                    seen.tool_calls.fetch_add(1, Ordering::SeqCst);
                    json!({"content": [{"type": "text", "text": format!("service account, token {}", bearer.unwrap_or_default())}]})
                }
                _ => {
                    return respond(
                        "200 OK",
                        &[json_type],
                        &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}})
                            .to_string(),
                    );
                }
            };
            respond(
                "200 OK",
                &[json_type],
                &json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
            )
        }
        ("GET" | "DELETE", "/mcp") => respond("405 Method Not Allowed", &[], ""),
        _ => respond("404 Not Found", &[], ""),
    }
}
