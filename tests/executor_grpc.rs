//! `quiver executor` as its own process: the `quiver.v1.Executor` gRPC service
//! re-checks every call against its own view, runs scripts, requires client
//! certificates under mTLS, and `quiver dev --executor child` drives it end to end.

use crate::support;

use std::time::Duration;

use quiver_contract::{ExecuteRequest, Scripts};
use quiver_fleet::{RemoteExecutor, remote::ClientTls};
use quiver_proto::pb::{self, executor_client::ExecutorClient};
use serde_json::{Value, json};
use support::{ExecutorProcess, QuiverDev, call, connect, text, write_file};

fn start_executor(extra: &[&str]) -> ExecutorProcess {
    ExecutorProcess::start(extra)
}

#[tokio::test(flavor = "multi_thread")]
async fn executor_service_checks_its_own_view_and_runs_scripts() {
    let executor = start_executor(&[]);
    let mut client = ExecutorClient::connect(format!("http://{}", executor.addr))
        .await
        .unwrap();

    let answer = client
        .call_tool(pb::CallToolRequest {
            tenant: "t".into(),
            server: "weather".into(),
            tool: "get_forecast".into(),
            arguments_json: r#"{"city":"Oslo"}"#.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let result: Value = serde_json::from_str(&answer.result_json).unwrap();
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Oslo"),
        "{result}"
    );

    let hidden = client
        .call_tool(pb::CallToolRequest {
            server: "weather".into(),
            tool: "launch_missiles".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(hidden.code(), tonic::Code::NotFound, "{hidden:?}");

    let invalid = client
        .call_tool(pb::CallToolRequest {
            server: "weather".into(),
            tool: "get_forecast".into(),
            arguments_json: "{}".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(invalid.code(), tonic::Code::InvalidArgument);
    assert!(invalid.message().contains("city"), "{invalid:?}");

    let executed = client
        .execute(pb::ExecuteRequest {
            tenant: "t".into(),
            session: "s".into(),
            code: "const r = await tools.weather.get_forecast({ city: 'Rome' }); return r.arguments.city;".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(executed.error, "", "{executed:?}");
    assert_eq!(executed.result_json, "\"Rome\"");

    let rejected = client
        .execute(pb::ExecuteRequest {
            code: "return eval('1');".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(rejected.error_kind(), pb::ScriptErrorKind::Rejected);
    assert_eq!(rejected.violations[0].rule, "eval", "{rejected:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn mutual_tls_requires_a_client_certificate_from_the_ca() {
    let dir = tempfile::tempdir().unwrap();
    let ca = support::TestCa::new();
    let (server_cert, server_key) = ca.issue("localhost");
    let (client_cert, client_key) = ca.issue("edge");
    let ca_path = write_file(dir.path(), "ca.pem", &ca.pem);
    let server_cert_path = write_file(dir.path(), "server.pem", &server_cert);
    let server_key_path = write_file(dir.path(), "server.key", &server_key);
    let client_cert_path = write_file(dir.path(), "client.pem", &client_cert);
    let client_key_path = write_file(dir.path(), "client.key", &client_key);

    let executor = start_executor(&[
        "--tls-cert",
        server_cert_path.to_str().unwrap(),
        "--tls-key",
        server_key_path.to_str().unwrap(),
        "--tls-client-ca",
        ca_path.to_str().unwrap(),
    ]);
    let url = format!(
        "https://{}",
        executor.addr.replace("127.0.0.1", "localhost")
    );

    let tls = ClientTls {
        ca: ca_path.clone(),
        cert: client_cert_path,
        key: client_key_path,
        domain: "localhost".into(),
    };
    let remote = RemoteExecutor::connect(&url, Some(&tls))
        .await
        .expect("mTLS handshake with a CA-issued client certificate");
    let outcome = remote
        .execute(
            ExecuteRequest::new("t", "s", "return 6 * 7;"),
            Default::default(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(outcome.result, Some(json!(42)));

    tracing::info!("--- without a client certificate: the handshake is refused");
    let refusal = support::tls_refusal(&executor.addr, "localhost", &ca.pem, None);
    assert!(refusal.contains("CertificateRequired"), "{refusal}");

    tracing::info!("--- with a certificate from an impostor CA: its signature does not verify");
    // Every TestCa has the same subject name, so the executor finds "its" CA
    // by the issuer name and rejects the signature (the alert is DecryptError).
    let rogue = support::TestCa::new();
    let (rogue_cert, rogue_key) = rogue.issue("edge");
    let refusal = support::tls_refusal(
        &executor.addr,
        "localhost",
        &ca.pem,
        Some((&rogue_cert, &rogue_key)),
    );
    assert!(refusal.contains("DecryptError"), "{refusal}");
}

#[tokio::test(flavor = "multi_thread")]
async fn dev_with_a_child_executor_serves_code_mode_end_to_end() {
    let dev = QuiverDev::start(&["--mode", "code", "--executor", "child"]);
    let client = connect(&dev.url).await;
    let result = call(
        &client,
        "execute",
        json!({"code": "const [a, b] = await Promise.all([tools.weather.get_forecast({ city: 'Oslo' }), tools.maps.geocode({ address: 'Main St' })]); await stash.set('k', 1); return [a.tool, b.tool, await stash.get('k')];"}),
    )
    .await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    assert_eq!(
        result.structured_content.unwrap()["result"],
        json!(["get_forecast", "geocode", 1])
    );
    client.cancel().await.unwrap();
    let _ = Duration::ZERO;
}

/// An executor process checks a call an edge made for an MCP App's view
/// (`from_app`) against the tools apps may call, and any other call against
/// the tools the model sees: an app-only tool is the view's alone.
#[tokio::test(flavor = "multi_thread")]
async fn an_app_only_tool_is_reached_only_by_a_views_call() {
    let dir = tempfile::tempdir().unwrap();
    let catalogue = json!([{"name": "dash", "description": "Dashboards", "tools": [
        {"name": "show_chart", "description": "Show a chart.", "inputSchema": {"type": "object"},
         "_meta": {"ui": {"resourceUri": "ui://dash/chart.html"}}},
        {"name": "refresh_chart", "description": "Refresh the chart.", "inputSchema": {"type": "object"},
         "_meta": {"ui": {"resourceUri": "ui://dash/chart.html", "visibility": ["app"]}}},
        {"name": "export", "description": "Export the data.", "inputSchema": {"type": "object"},
         "_meta": {"ui": {"visibility": ["model"]}}},
    ]}]);
    let path = write_file(dir.path(), "apps.json", &catalogue.to_string());
    let executor = start_executor(&["--catalog", path.to_str().unwrap()]);
    let mut client = ExecutorClient::connect(format!("http://{}", executor.addr))
        .await
        .unwrap();
    let request = |tool: &str, from_app: bool| pb::CallToolRequest {
        server: "dash".into(),
        tool: tool.into(),
        arguments_json: "{}".into(),
        from_app,
        ..Default::default()
    };
    let model = client
        .call_tool(request("refresh_chart", false))
        .await
        .unwrap_err();
    assert_eq!(model.code(), tonic::Code::NotFound, "{model:?}");
    let view = client.call_tool(request("refresh_chart", true)).await;
    assert!(view.is_ok(), "{view:?}");
    let shown = client.call_tool(request("show_chart", true)).await;
    assert!(shown.is_ok(), "both may call it: {shown:?}");
    let model_only = client.call_tool(request("export", true)).await.unwrap_err();
    assert_eq!(model_only.code(), tonic::Code::NotFound, "{model_only:?}");
    assert!(client.call_tool(request("export", false)).await.is_ok());
}
