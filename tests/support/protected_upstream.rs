//! An MCP server behind OAuth 2.1 and its authorization server, on one
//! loopback port, for the OAuth tests of the workspace's test crates (the
//! upstream crate's includes this file by path). The server speaks the
//! client-credentials grant (a service account) and the authorization-code
//! grant with PKCE (S256) and refresh tokens, for clients registered
//! dynamically: the person "signs in" as whoever the test named and
//! approves at once; and token exchange (RFC 8693) for the service
//! account, of a caller's JWT for a token in its subject's name. It checks the client, the grant, the PKCE verifier,
//! the RFC 8707 resource and the bearer token, refuses everything else, and
//! can revoke tokens, shorten their lives, and answer with a wrong issuer.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
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
    /// Access tokens issued from now on live this many seconds (0: an hour).
    pub token_lifetime_s: AtomicU64,
    /// Refresh-token grants answered with a new token.
    pub refreshes: AtomicUsize,
    /// Token exchanges (RFC 8693) answered, and the subjects they were for.
    pub exchanges: Mutex<Vec<String>>,
    /// Refresh tokens are refused from now on (revoked at the server).
    pub refresh_revoked: AtomicBool,
    /// The authorization response names another issuer (RFC 9207 mix-up).
    pub wrong_issuer: AtomicBool,
    /// Who approves at the authorization endpoint (the signed-in person).
    pub person: Mutex<String>,
    /// Also list `file_issue`, which takes a token granted `issues:write`
    /// (refused for want of scope otherwise).
    pub scoped_tool: AtomicBool,
    grants: Mutex<Grants>,
}

/// Codes, refresh tokens and whose each access token is.
#[derive(Default)]
struct Grants {
    /// code → (PKCE challenge, redirect URI, person, scope asked).
    codes: HashMap<String, (String, String, String, String)>,
    /// refresh token → (person, scope).
    refresh: HashMap<String, (String, String)>,
    /// access token → (person, expires at in unix seconds, scope).
    access: HashMap<String, (String, u64, String)>,
    next: u64,
}

fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Seen {
    /// A new access token for `person` with `scope` (and a refresh token
    /// when `refresh`).
    fn issue(&self, person: &str, refresh: bool, scope: &str) -> Value {
        let n = self.tokens_issued.fetch_add(1, Ordering::SeqCst) + 1;
        let token = format!("tok-{n}");
        let lifetime = match self.token_lifetime_s.load(Ordering::SeqCst) {
            0 => 3600,
            s => s,
        };
        let mut grants = self.grants.lock().unwrap();
        grants.access.insert(
            token.clone(),
            (person.to_string(), now_s() + lifetime, scope.to_string()),
        );
        let mut answer =
            json!({"access_token": token, "token_type": "Bearer", "expires_in": lifetime});
        if refresh {
            grants.next += 1;
            let refresh_token = format!("refresh-{}-{person}", grants.next);
            grants.refresh.insert(
                refresh_token.clone(),
                (person.to_string(), scope.to_string()),
            );
            answer["refresh_token"] = json!(refresh_token);
        }
        answer
    }

    /// Whose `token` is and its scope, if it is valid now (`service` for a
    /// service account's).
    fn holder(&self, token: &str) -> Option<(String, String)> {
        let n = token.strip_prefix("tok-")?.parse::<usize>().ok()?;
        if n <= self.revoked_through.load(Ordering::SeqCst) {
            return None;
        }
        match self.grants.lock().unwrap().access.get(token) {
            Some((person, expires, scope)) if *expires > now_s() => {
                Some((person.clone(), scope.clone()))
            }
            _ => None,
        }
    }
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

/// The S256 PKCE challenge of `verifier`.
fn s256(verifier: &str) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()))
}

fn answer(base: &str, seen: &Seen, request: &Request) -> String {
    let json_type = ("Content-Type", "application/json".to_string());
    let resource = format!("{base}/mcp");
    let (path, query) = request
        .path
        .split_once('?')
        .unwrap_or((request.path.as_str(), ""));
    let bad = |error: &str| {
        respond(
            "400 Bad Request",
            &[("Content-Type", "application/json".to_string())],
            &json!({ "error": error }).to_string(),
        )
    };
    match (request.method.as_str(), path) {
        ("POST", "/register") => {
            let asked: Value = serde_json::from_str(&request.body).unwrap_or_default();
            let mut grants = seen.grants.lock().unwrap();
            grants.next += 1;
            respond(
                "201 Created",
                &[json_type],
                &json!({
                    "client_id": format!("dyn-{}", grants.next),
                    "redirect_uris": asked["redirect_uris"],
                    "token_endpoint_auth_method": "none",
                    "grant_types": ["authorization_code", "refresh_token"],
                })
                .to_string(),
            )
        }
        ("GET", "/authorize") => {
            let fields = form(query);
            let field = |name: &str| {
                fields
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.clone())
            };
            let (Some(redirect), Some(state), Some(challenge)) = (
                field("redirect_uri"),
                field("state"),
                field("code_challenge"),
            ) else {
                return bad("invalid_request");
            };
            if field("code_challenge_method").as_deref() != Some("S256")
                || field("resource").as_deref() != Some(resource.as_str())
            {
                return bad("invalid_request");
            }
            let person = seen.person.lock().unwrap().clone();
            let scope = field("scope").unwrap_or_default();
            let mut grants = seen.grants.lock().unwrap();
            grants.next += 1;
            let code = format!("code-{}", grants.next);
            grants
                .codes
                .insert(code.clone(), (challenge, redirect.clone(), person, scope));
            let issuer = if seen.wrong_issuer.load(Ordering::SeqCst) {
                "https://impostor.example".to_string()
            } else {
                base.to_string()
            };
            let encode = |text: &str| {
                text.bytes()
                    .map(|b| match b {
                        b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                            (b as char).to_string()
                        }
                        other => format!("%{other:02X}"),
                    })
                    .collect::<String>()
            };
            let location = format!(
                "{redirect}?code={code}&state={}&iss={}",
                encode(&state),
                encode(&issuer)
            );
            respond("302 Found", &[("Location", location)], "")
        }
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
                "registration_endpoint": format!("{base}/register"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["client_credentials", "authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:token-exchange"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["client_secret_post", "none"],
                "authorization_response_iss_parameter_supported": true,
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
            if field("resource") != Some(resource.as_str()) {
                return bad("invalid_target");
            }
            match field("grant_type") {
                Some("authorization_code") => {
                    let code = field("code").unwrap_or_default();
                    let taken = seen.grants.lock().unwrap().codes.remove(code);
                    let Some((challenge, redirect, person, scope)) = taken else {
                        return bad("invalid_grant");
                    };
                    let verifier = field("code_verifier").unwrap_or_default();
                    if s256(verifier) != challenge || field("redirect_uri") != Some(redirect.as_str())
                    {
                        return bad("invalid_grant");
                    }
                    let mut answer = seen.issue(&person, true, &scope);
                    answer["scope"] = json!(scope);
                    return respond("200 OK", &[json_type], &answer.to_string());
                }
                Some("urn:ietf:params:oauth:grant-type:token-exchange") => {
                    // Quiver's client, by Basic authentication or in the form.
                    let basic = request
                        .header("authorization")
                        .and_then(|h| h.strip_prefix("Basic "))
                        .and_then(|b| {
                            use base64::Engine as _;
                            base64::engine::general_purpose::STANDARD.decode(b).ok()
                        })
                        .map(|b| String::from_utf8_lossy(&b).into_owned());
                    let posted = format!(
                        "{}:{}",
                        field("client_id").unwrap_or_default(),
                        field("client_secret").unwrap_or_default()
                    );
                    let expected = format!("{CLIENT_ID}:{CLIENT_SECRET}");
                    if basic.as_deref() != Some(expected.as_str()) && posted != expected {
                        return bad("invalid_client");
                    }
                    let access = "urn:ietf:params:oauth:token-type:access_token";
                    if field("subject_token_type") != Some(access) {
                        return bad("invalid_request");
                    }
                    // The subject: the `sub` of the caller's JWT.
                    let subject = field("subject_token")
                        .and_then(|t| t.split('.').nth(1))
                        .and_then(|payload| {
                            use base64::Engine as _;
                            base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).ok()
                        })
                        .and_then(|claims| serde_json::from_slice::<Value>(&claims).ok())
                        .and_then(|claims| claims["sub"].as_str().map(str::to_string));
                    let Some(subject) = subject else {
                        return bad("invalid_grant");
                    };
                    seen.exchanges.lock().unwrap().push(subject.clone());
                    let mut answer = seen.issue(&subject, false, "");
                    answer["issued_token_type"] = json!(access);
                    return respond("200 OK", &[json_type], &answer.to_string());
                }
                Some("refresh_token") => {
                    let token = field("refresh_token").unwrap_or_default();
                    // Rotation: a refresh token is good once.
                    let held = seen.grants.lock().unwrap().refresh.remove(token);
                    let Some((person, scope)) =
                        held.filter(|_| !seen.refresh_revoked.load(Ordering::SeqCst))
                    else {
                        return bad("invalid_grant");
                    };
                    seen.refreshes.fetch_add(1, Ordering::SeqCst);
                    return respond("200 OK", &[json_type], &seen.issue(&person, true, &scope).to_string());
                }
                _ => {}
            }
            let credentials_ok = field("client_id") == Some(CLIENT_ID)
                && field("client_secret") == Some(CLIENT_SECRET);
            if field("grant_type") != Some("client_credentials") || !credentials_ok {
                return respond(
                    "400 Bad Request",
                    &[json_type],
                    r#"{"error":"invalid_client"}"#,
                );
            }
            respond("200 OK", &[json_type], &seen.issue("service", false, "").to_string())
        }
        ("POST", "/mcp") => {
            let bearer = request
                .header("authorization")
                .and_then(|h| h.strip_prefix("Bearer "));
            let holder = bearer.and_then(|t| seen.holder(t));
            let Some((holder, scope)) = holder else {
                seen.refused_mcp.fetch_add(1, Ordering::SeqCst);
                let challenge = format!(
                    "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
                );
                return respond("401 Unauthorized", &[("WWW-Authenticate", challenge)], "");
            };
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
                "tools/list" => {
                    let mut tools = vec![json!({
                        "name": "whoami",
                        "description": "Says who the caller is, as the tracker sees it.",
                        "inputSchema": {"type": "object", "properties": {}},
                    })];
                    if seen.scoped_tool.load(Ordering::SeqCst) {
                        tools.push(json!({
                            "name": "file_issue",
                            "description": "Files an issue (needs the issues:write scope).",
                            "inputSchema": {"type": "object", "properties": {}},
                        }));
                    }
                    json!({ "tools": tools })
                }
                "tools/call"
                    if message["params"]["name"] == "file_issue"
                        && !scope.split_whitespace().any(|s| s == "issues:write") =>
                {
                    let challenge = format!(
                        "Bearer error=\"insufficient_scope\", scope=\"issues:write\", resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
                    );
                    return respond("403 Forbidden", &[("WWW-Authenticate", challenge)], "");
                }
                "tools/call" => {
                    seen.tool_calls.fetch_add(1, Ordering::SeqCst);
                    json!({"content": [{"type": "text", "text": match holder.as_str() {
                        "service" => format!("service account, token {}", bearer.unwrap_or_default()),
                        person => format!("user {person}, token {}", bearer.unwrap_or_default()),
                    }}]})
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
