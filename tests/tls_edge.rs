//! The edge over HTTPS (rustls): a real rmcp client that trusts the test CA lists
//! and calls tools; a bad TLS configuration is refused at start with the key named.

use crate::support;

use rmcp::{
    ServiceExt,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::json;
use support::{QuiverDev, call, quiver_bin, text, write_file};

#[tokio::test(flavor = "multi_thread")]
async fn https_edge_serves_a_client_that_trusts_its_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let cert =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .unwrap();
    let cert_path = write_file(dir.path(), "edge.crt", &cert.cert.pem());
    let key_path = write_file(dir.path(), "edge.key", &cert.signing_key.serialize_pem());
    let config = format!(
        "[edge]\ndefault_mode = \"passthrough\"\n[edge.tls]\ncert = \"{}\"\nkey = \"{}\"\n",
        cert_path.display(),
        key_path.display()
    );
    let config_path = write_file(dir.path(), "quiver.toml", &config);
    let dev = QuiverDev::start(&["--config", config_path.to_str().unwrap()]);
    assert!(dev.url.starts_with("https://"), "{}", dev.url);

    quiver_upstream::install_crypto_provider();
    let root = reqwest::Certificate::from_pem(cert.cert.pem().as_bytes()).unwrap();
    let http = reqwest::Client::builder()
        .add_root_certificate(root)
        .build()
        .unwrap();
    let url = dev.url.replace("127.0.0.1", "localhost");
    let transport = StreamableHttpClientTransport::with_client(
        http,
        StreamableHttpClientTransportConfig::with_uri(url),
    );
    let client = ().serve(transport).await.expect("TLS handshake and MCP initialize");
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 16);
    let result = call(&client, "maps__geocode", json!({"address": "1 Main St"})).await;
    assert!(text(&result).contains("1 Main St"), "{}", text(&result));
    client.cancel().await.unwrap();

    // A client that does not trust the certificate refuses the edge.
    let untrusting = reqwest::Client::new();
    let refused = untrusting
        .get(format!("{}/healthz", dev.url.trim_end_matches("/mcp")))
        .send()
        .await
        .expect_err("an untrusted certificate was accepted");
    let chain = support::error_chain(&refused);
    assert!(chain.contains("UnknownIssuer"), "{chain}");
}

#[test]
fn missing_certificate_is_a_clear_startup_error() {
    let dir = tempfile::tempdir().unwrap();
    let config =
        "[edge]\n[edge.tls]\ncert = \"/nonexistent/edge.crt\"\nkey = \"/nonexistent/edge.key\"\n";
    let config_path = write_file(dir.path(), "quiver.toml", config);
    let output = std::process::Command::new(quiver_bin())
        .args([
            "dev",
            "--listen",
            "127.0.0.1:0",
            "--config",
            config_path.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("edge.tls.cert") && stderr.contains("/nonexistent/edge.crt"),
        "{stderr}"
    );
}
