//! Certificates that are wrong in a way only a careful verifier sees, for the
//! three TLS surfaces: the edge (HTTPS), the executor (mTLS) and a Raft node
//! (mTLS). An expired certificate and one issued to another name, both from the
//! trusted CA, are each refused with that specific error, and the same server
//! goes on serving a client that is right. (A foreign CA and a missing client
//! certificate are covered in `executor_grpc.rs` and `control_plane_cluster.rs`.)

use crate::support;

use std::{path::PathBuf, sync::Arc, time::Duration};

use quiver_contract::{ExecuteRequest, Scripts};
use quiver_fleet::{RemoteExecutor, remote::ClientTls};
use rmcp::{
    ServiceExt,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use rustls::{
    DigitallySignedStruct, RootCertStore, SignatureScheme,
    client::{
        WebPkiServerVerifier,
        danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
    },
    pki_types::{CertificateDer, ServerName, UnixTime, pem::PemObject},
};
use serde_json::json;
use support::{
    ControlPlaneProcess, ExecutorProcess, QuiverDev, TestCa, call, ctl, error_chain, text,
    tls_answer, tls_refusal, write_file,
};

/// Valid through 2020 only: expired today.
const VALID_IN_2020: ((i32, u8, u8), (i32, u8, u8)) = ((2020, 1, 1), (2021, 1, 1));
/// 2020-06-01T00:00:00Z, inside [`VALID_IN_2020`].
const JUNE_2020: Duration = Duration::from_secs(1_590_969_600);

/// What rustls says when a certificate is past its `not_after`.
const EXPIRED: &str = "invalid peer certificate: certificate expired";
/// What a server that refused an expired client certificate tells the client.
const EXPIRED_ALERT: &str = "received fatal alert: CertificateExpired";

/// What rustls says when the certificate names another host than the one dialled.
fn not_valid_for(dialled: &str) -> String {
    format!("invalid peer certificate: certificate not valid for name {dialled:?}")
}

/// Writes a certificate and its key to `dir` as `<name>.pem` and `<name>.key`.
fn write_pair(
    dir: &std::path::Path,
    name: &str,
    (cert, key): &(String, String),
) -> (PathBuf, PathBuf) {
    (
        write_file(dir, &format!("{name}.pem"), cert),
        write_file(dir, &format!("{name}.key"), key),
    )
}

fn path(p: &std::path::Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

// --- the edge ---------------------------------------------------------------

/// `quiver dev` serving HTTPS with the given certificate, accepting requests
/// for `host` (and loopback).
fn https_edge(dir: &std::path::Path, pair: &(String, String), host: &str) -> QuiverDev {
    let (cert, key) = write_pair(dir, "edge", pair);
    let config = format!(
        "[edge]\ndefault_mode = \"passthrough\"\nallowed_hosts = [\"localhost\", \"127.0.0.1\", \"{host}\"]\n[edge.tls]\ncert = \"{}\"\nkey = \"{}\"\n",
        cert.display(),
        key.display()
    );
    let config = write_file(dir, "quiver.toml", &config);
    let dev = QuiverDev::start(&["--config", path(&config)]);
    assert!(dev.url.starts_with("https://"), "{}", dev.url);
    dev
}

/// `GET /healthz` at `base` (`https://host:port`); the client's error chain if refused.
async fn healthz(http: &reqwest::Client, base: &str) -> Result<(), String> {
    let response = http
        .get(format!("{base}/healthz"))
        .send()
        .await
        .map_err(|e| error_chain(&e))?;
    assert!(response.status().is_success(), "{response:?}");
    Ok(())
}

/// A real MCP client through `http` at `url`: lists the tools and calls one.
async fn mcp_session_works(http: reqwest::Client, url: String) {
    let transport = StreamableHttpClientTransport::with_client(
        http,
        StreamableHttpClientTransportConfig::with_uri(url),
    );
    let client = ().serve(transport).await.expect("TLS handshake and MCP initialize");
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(
        tools.iter().any(|t| t.name == "maps__geocode"),
        "{} tools",
        tools.len()
    );
    let result = call(&client, "maps__geocode", json!({"address": "1 Main St"})).await;
    assert!(text(&result).contains("1 Main St"), "{}", text(&result));
    client.cancel().await.expect("close the session");
}

/// A client trusting only the test CA.
fn trusting(ca: &TestCa) -> reqwest::ClientBuilder {
    quiver_upstream::install_crypto_provider();
    reqwest::Client::builder()
        .tls_certs_only([reqwest::Certificate::from_pem(ca.pem.as_bytes()).expect("CA PEM")])
}

/// Verifies a server's certificate exactly as rustls does, against the test
/// CA, but as if the clock said `at`: a client for which an expired
/// certificate is still valid, to show the refusal was about the date alone.
#[derive(Debug)]
struct VerifyingAt {
    webpki: Arc<WebPkiServerVerifier>,
    at: UnixTime,
}

impl ServerCertVerifier for VerifyingAt {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            self.at,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

fn client_verifying_at(ca: &TestCa, at: Duration) -> reqwest::Client {
    quiver_upstream::install_crypto_provider();
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.pem.as_bytes()).expect("CA PEM"))
        .expect("a usable CA");
    let webpki = WebPkiServerVerifier::builder(Arc::new(roots))
        .build()
        .expect("a verifier");
    let config = rustls::ClientConfig::builder()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(VerifyingAt {
            webpki,
            at: UnixTime::since_unix_epoch(at),
        }))
        .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(config)
        .build()
        .expect("an HTTP client")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_edge_with_an_expired_certificate_is_refused_as_expired() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new();
    let (from, until) = VALID_IN_2020;
    let dev = https_edge(
        dir.path(),
        &ca.issue_with("localhost", from, until),
        "localhost",
    );
    let base = dev
        .url
        .trim_end_matches("/mcp")
        .replace("127.0.0.1", "localhost");

    tracing::info!("--- a client trusting the CA refuses the expired certificate");
    let refused = healthz(&trusting(&ca).build().unwrap(), &base)
        .await
        .expect_err("an expired certificate was accepted");
    assert!(refused.contains(EXPIRED), "{refused}");

    tracing::info!("--- the edge still serves: a client whose clock is in 2020 is served");
    let in_2020 = client_verifying_at(&ca, JUNE_2020);
    healthz(&in_2020, &base)
        .await
        .expect("the same certificate verifies in 2020");
    mcp_session_works(in_2020, format!("{base}/mcp")).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_edge_with_a_certificate_for_another_name_is_refused_for_that_name() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new();
    let dev = https_edge(dir.path(), &ca.issue("wrong.example"), "wrong.example");
    let authority = dev
        .url
        .trim_start_matches("https://")
        .trim_end_matches("/mcp");
    let addr: std::net::SocketAddr = authority.parse().expect("host:port");
    let port = addr.port();

    tracing::info!("--- a client dialling localhost refuses a certificate for wrong.example");
    let refused = healthz(
        &trusting(&ca).build().unwrap(),
        &format!("https://localhost:{port}"),
    )
    .await
    .expect_err("a certificate for another name was accepted");
    assert!(refused.contains(&not_valid_for("localhost")), "{refused}");
    assert!(refused.contains("wrong.example"), "{refused}");

    tracing::info!("--- the edge still serves a client that dials the name it holds");
    let right_name = trusting(&ca)
        .resolve("wrong.example", addr)
        .build()
        .unwrap();
    let base = format!("https://wrong.example:{port}");
    healthz(&right_name, &base)
        .await
        .expect("served under its own name");
    mcp_session_works(right_name, format!("{base}/mcp")).await;
}

// --- the executor (mTLS) -----------------------------------------------------

/// An executor requiring client certificates from `ca`, presenting `server`.
fn mtls_executor(dir: &std::path::Path, ca: &TestCa, server: &(String, String)) -> ExecutorProcess {
    let ca_path = write_file(dir, "ca.pem", &ca.pem);
    let (cert, key) = write_pair(dir, "executor", server);
    ExecutorProcess::start(&[
        "--tls-cert",
        path(&cert),
        "--tls-key",
        path(&key),
        "--tls-client-ca",
        path(&ca_path),
    ])
}

/// Connects to the executor at `addr` (dialled as `localhost`) with `client`'s
/// certificate, expecting its certificate to name `domain`, and runs a script.
async fn run_on_executor(
    dir: &std::path::Path,
    addr: &str,
    client: (PathBuf, PathBuf),
    domain: &str,
) -> Result<serde_json::Value, String> {
    let tls = ClientTls {
        ca: dir.join("ca.pem"),
        cert: client.0,
        key: client.1,
        domain: domain.into(),
    };
    let url = format!("https://{}", addr.replace("127.0.0.1", "localhost"));
    let remote = RemoteExecutor::connect(&url, Some(&tls))
        .await
        .map_err(|e| error_chain(&e))?;
    let outcome = remote
        .execute(
            ExecuteRequest::new("t", "s", "return 6 * 7;"),
            Default::default(),
            None,
        )
        .await
        .map_err(|e| error_chain(&e))?;
    Ok(outcome.result.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_executor_refuses_an_expired_client_certificate_as_expired() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new();
    let executor = mtls_executor(dir.path(), &ca, &ca.issue("localhost"));
    let (from, until) = VALID_IN_2020;
    let expired = ca.issue_with("edge", from, until);

    tracing::info!("--- a client certificate from the CA, but expired: refused as expired");
    let refusal = tls_refusal(
        &executor.addr,
        "localhost",
        &ca.pem,
        Some((&expired.0, &expired.1)),
    );
    assert!(refusal.contains(EXPIRED_ALERT), "{refusal}");
    let refused = run_on_executor(
        dir.path(),
        &executor.addr,
        write_pair(dir.path(), "expired", &expired),
        "localhost",
    )
    .await
    .expect_err("an expired client certificate was served");
    // The executor client's error names no cause yet ("operation was
    // canceled"): the alert arrives after its side of the handshake is done.
    tracing::info!("the executor client saw: {refused}");

    tracing::info!("--- the executor still serves a client with a valid certificate");
    let valid = write_pair(dir.path(), "edge", &ca.issue("edge"));
    let result = run_on_executor(dir.path(), &executor.addr, valid, "localhost").await;
    assert_eq!(result, Ok(json!(42)));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_executor_with_a_certificate_for_another_name_is_refused_for_that_name() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new();
    let executor = mtls_executor(dir.path(), &ca, &ca.issue("wrong.example"));
    let client = write_pair(dir.path(), "edge", &ca.issue("edge"));

    tracing::info!("--- the edge's executor client, expecting localhost, refuses it");
    let refused = run_on_executor(dir.path(), &executor.addr, client.clone(), "localhost")
        .await
        .expect_err("a certificate for another name was accepted");
    assert!(refused.contains(&not_valid_for("localhost")), "{refused}");
    assert!(refused.contains("wrong.example"), "{refused}");

    tracing::info!("--- the executor still serves a client that expects the name it holds");
    let result = run_on_executor(dir.path(), &executor.addr, client, "wrong.example").await;
    assert_eq!(result, Ok(json!(42)));
}

// --- a Raft node (mTLS) ------------------------------------------------------

/// `--tls-ca`, `--tls-cert`, `--tls-key` for a node or `ctl` holding `pair`.
fn cluster_tls_flags(dir: &std::path::Path, name: &str, pair: &(String, String)) -> Vec<String> {
    let ca = dir.join("ca.pem");
    let (cert, key) = write_pair(dir, name, pair);
    [
        "--tls-ca",
        path(&ca),
        "--tls-cert",
        path(&cert),
        "--tls-key",
        path(&key),
    ]
    .map(str::to_string)
    .to_vec()
}

/// Starts node `id` with mTLS, presenting `pair`.
fn tls_node(
    dir: &std::path::Path,
    id: u64,
    pair: &(String, String),
    extra: &[&str],
) -> ControlPlaneProcess {
    let mut flags = cluster_tls_flags(dir, &format!("node{id}"), pair);
    flags.extend(extra.iter().map(|s| s.to_string()));
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    ControlPlaneProcess::start(id, &dir.join(format!("n{id}")), &flags)
}

/// `quiver ctl` at `endpoints` with the TLS flags given.
fn ctl_with(endpoints: &str, tls: &[String], args: &[&str]) -> (bool, String, String) {
    let mut all: Vec<&str> = tls.iter().map(String::as_str).collect();
    all.extend_from_slice(args);
    ctl(endpoints, &all)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_raft_node_refuses_an_expired_client_certificate_as_expired() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new();
    write_file(dir.path(), "ca.pem", &ca.pem);
    let node = tls_node(dir.path(), 1, &ca.issue("127.0.0.1"), &["--bootstrap"]);
    let (from, until) = VALID_IN_2020;
    let expired = ca.issue_with("127.0.0.1", from, until);

    tracing::info!("--- an operator certificate from the CA, but expired: refused as expired");
    let refusal = tls_refusal(
        &node.addr,
        "127.0.0.1",
        &ca.pem,
        Some((&expired.0, &expired.1)),
    );
    assert!(refusal.contains(EXPIRED_ALERT), "{refusal}");
    let expired_flags = cluster_tls_flags(dir.path(), "expired", &expired);
    let (ok, _, err) = ctl_with(&node.addr, &expired_flags, &["tenant", "create", "late"]);
    // What ctl prints here names no cause yet ("operation was canceled"); the
    // refusal itself is what this checks.
    assert!(!ok, "ctl with an expired certificate was served: {err}");

    tracing::info!("--- the node still serves an operator with a valid certificate");
    let operator = cluster_tls_flags(dir.path(), "operator", &ca.issue("127.0.0.1"));
    let (ok, _, err) = ctl_with(&node.addr, &operator, &["tenant", "create", "on-time"]);
    assert!(ok, "{err}");
    let (ok, out, err) = ctl_with(&node.addr, &operator, &["-o", "json", "tenant", "list"]);
    assert!(
        ok && out.contains("on-time") && !out.contains("late"),
        "{out}{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_raft_node_with_a_certificate_for_another_name_is_refused_for_that_name() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new();
    write_file(dir.path(), "ca.pem", &ca.pem);
    let leader = tls_node(dir.path(), 1, &ca.issue("127.0.0.1"), &["--bootstrap"]);
    let misnamed = tls_node(dir.path(), 2, &ca.issue("wrong.example"), &[]);
    let operator_pair = ca.issue("127.0.0.1");
    let operator = cluster_tls_flags(dir.path(), "operator", &operator_pair);
    let identity = Some((operator_pair.0.as_str(), operator_pair.1.as_str()));

    tracing::info!(
        "--- a client dialling 127.0.0.1 refuses node 2's certificate for wrong.example"
    );
    let refusal = tls_refusal(&misnamed.addr, "127.0.0.1", &ca.pem, identity);
    assert!(refusal.contains(&not_valid_for("127.0.0.1")), "{refusal}");
    assert!(refusal.contains("wrong.example"), "{refusal}");
    let (ok, _, err) = ctl_with(&misnamed.addr, &operator, &["cluster", "status"]);
    assert!(!ok, "ctl accepted a certificate for another name");
    assert!(err.contains(&not_valid_for("127.0.0.1")), "{err}");

    tracing::info!("--- node 2 still serves a client that dials the name it holds");
    let answered = tls_answer(&misnamed.addr, "wrong.example", &ca.pem, identity);
    assert!(matches!(answered, Ok(n) if n > 0), "{answered:?}");

    tracing::info!("--- node 1 is unaffected and serves the operator");
    let (ok, _, err) = ctl_with(&leader.addr, &operator, &["tenant", "create", "unaffected"]);
    assert!(ok, "{err}");
}
