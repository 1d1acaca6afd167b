//! An HTTP upstream behind OAuth whose grant cannot be had fails with an
//! error that says why, and nothing else is tried: with nobody to ask, the
//! caller hears that the node has no one to ask; when the person does not
//! grant it, that it was not granted. The server is a real listener on
//! loopback that refuses every request with 401 and a challenge.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use futures::future::BoxFuture;
use quiver_upstream::{Consent, ConsentError, Upstream, UpstreamConfig, UpstreamOAuth};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
};

/// A server that refuses MCP requests with 401 and a Bearer challenge
/// naming its protected-resource metadata, and (with `metadata`) publishes
/// that metadata and an authorization server's, with dynamic registration;
/// counts the MCP requests.
async fn refusing_server(metadata: bool) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    let counted = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let counted = counted.clone();
            tokio::spawn(async move {
                let mut buffer = vec![0; 64 * 1024];
                let read = stream.read(&mut buffer).await.unwrap_or(0);
                let request = String::from_utf8_lossy(&buffer[..read]).to_string();
                let line = request.lines().next().unwrap_or_default().to_string();
                let json = |body: String| {
                    format!(
                        "HTTP/1.1 {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        if line.starts_with("POST /register") {
                            "201 Created"
                        } else {
                            "200 OK"
                        },
                        body.len()
                    )
                };
                let answer = match line.split(' ').nth(1).unwrap_or_default() {
                    path if metadata && path.starts_with("/.well-known/oauth-protected-resource") => {
                        json(format!(
                            r#"{{"resource":"http://{addr}/mcp","authorization_servers":["http://{addr}"]}}"#
                        ))
                    }
                    path if metadata && path.starts_with("/.well-known/oauth-authorization-server") => {
                        json(format!(
                            r#"{{"issuer":"http://{addr}","authorization_endpoint":"http://{addr}/authorize","token_endpoint":"http://{addr}/token","registration_endpoint":"http://{addr}/register","response_types_supported":["code"],"code_challenge_methods_supported":["S256"]}}"#
                        ))
                    }
                    "/register" if metadata => json(
                        r#"{"client_id":"registered","redirect_uris":["https://quiver.example/oauth/callback"]}"#.to_string(),
                    ),
                    "/mcp" => {
                        counted.fetch_add(1, Ordering::SeqCst);
                        format!(
                            "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer resource_metadata=\"http://{addr}/.well-known/oauth-protected-resource\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                        )
                    }
                    _ => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string(),
                };
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    (format!("http://{addr}/mcp"), seen)
}

fn behind_oauth(url: &str) -> UpstreamConfig {
    let mut config = UpstreamConfig::http("guarded", url);
    config.oauth = Some(UpstreamOAuth {
        grant: Default::default(),
        redirect_uri: "https://quiver.example/oauth/callback".into(),
        client_id: None,
        client_secret: None,
        client_metadata_url: None,
        scopes: Vec::new(),
    });
    config.validate().expect("valid settings");
    config
}

/// Someone who is asked and says no; counts the times.
struct Refuses(AtomicUsize);

impl Consent for Refuses {
    fn grant<'a>(
        &'a self,
        _upstream: &'a str,
        _link: &'a str,
    ) -> BoxFuture<'a, Result<String, ConsentError>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Err(ConsentError("the person declined".into())) })
    }
}

#[tokio::test]
async fn without_anyone_to_ask_the_error_says_so() {
    let (url, _) = refusing_server(false).await;
    let upstream = Upstream::new(behind_oauth(&url));
    let error = upstream.list_tools().await.expect_err("refused");
    let text = error.to_string();
    assert!(
        text.contains("requires OAuth authorization") && text.contains("nobody to ask"),
        "{text}"
    );
}

/// Lists the tools of a refusing server (publishing its metadata or not)
/// with someone who declines: the error, how often they were asked, and how
/// many MCP requests the server saw.
async fn declined(metadata: bool) -> (String, usize, usize) {
    let (url, seen) = refusing_server(metadata).await;
    let person = Arc::new(Refuses(AtomicUsize::new(0)));
    let upstream = Upstream::with_consent(behind_oauth(&url), person.clone());
    let error = upstream.list_tools().await.expect_err("refused");
    let asked = person.0.load(Ordering::SeqCst);
    (error.to_string(), asked, seen.load(Ordering::SeqCst))
}

#[tokio::test]
async fn a_declined_grant_fails_the_connection_after_asking_once() {
    let (error, asked, seen) = declined(true).await;
    assert!(
        error.contains("not granted") && error.contains("the person declined"),
        "{error}"
    );
    assert_eq!(asked, 1, "asked once");
    assert_eq!(seen, 1, "one MCP request, refused");
}

#[tokio::test]
async fn without_published_metadata_nobody_is_asked() {
    let (error, asked, _) = declined(false).await;
    assert!(error.contains("OAuth"), "{error}");
    assert_eq!(asked, 0, "nothing to ask for");
}
