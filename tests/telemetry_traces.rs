//! Distributed tracing end to end: a client's `traceparent` becomes the
//! parent of the edge's server span, and one trace follows the request
//! through the edge → executor hop, the script, its tool call and the call
//! to the upstream, exported over OTLP (gRPC, http/json, http/protobuf) to a
//! collector inside the test; with the in-process executor, the script's
//! spans hang directly under the edge's, a Gateway RPC takes its parent from
//! gRPC metadata, and upstreams receive Quiver's client span as their parent
//! (in `_meta`; HTTP upstreams also in headers). No argument or result value
//! appears on any span.

use crate::support;

use std::{path::Path, time::Duration};

use quiver_proto::pb::{GatewayCallToolRequest, gateway_client::GatewayClient};
use rmcp::{
    RoleClient, ServiceExt,
    model::{CallToolRequest, CallToolRequestParams, ClientRequest, GetMeta as _, ServerResult},
    service::RunningService,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::{
    MockHttpUpstream, QuiverDev, connect,
    otlp::{OtlpReceiver, ReceivedSpan, kind},
    test_kit_bin, text, write_file,
};

/// The caller's trace and span, as its `traceparent` names them.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

fn traceparent() -> String {
    format!("00-{TRACE_ID}-{CALLER_SPAN}-01")
}

/// How long the spans may take to reach the collector (batches go every
/// 100 ms; the processes start their exporters lazily).
const EXPORT_LIMIT: Duration = Duration::from_secs(30);

/// The environment that makes `quiver dev` (and its child executor) export
/// to `endpoint` over `protocol`, in batches every 100 ms.
fn exporting_to<'a>(endpoint: &'a str, protocol: &'a str) -> [(&'static str, &'a Path); 3] {
    [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", Path::new(endpoint)),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", Path::new(protocol)),
        ("OTEL_BSP_SCHEDULE_DELAY", Path::new("100")),
    ]
}

/// The spans of the caller's trace (`TRACE_ID`).
fn in_trace(spans: &[ReceivedSpan]) -> Vec<ReceivedSpan> {
    spans
        .iter()
        .filter(|s| s.trace_id == TRACE_ID)
        .cloned()
        .collect()
}

/// The one span of `trace` named `name` from `service`.
fn one<'a>(trace: &'a [ReceivedSpan], service: &str, name: &str) -> &'a ReceivedSpan {
    let found: Vec<_> = trace
        .iter()
        .filter(|s| s.service == service && s.name == name)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "expected one `{name}` span from {service}; the trace holds {:#?}",
        trace
            .iter()
            .map(|s| format!("{} {}", s.service, s.name))
            .collect::<Vec<_>>()
    );
    found[0]
}

fn has(spans: &[ReceivedSpan], service: &str, name: &str) -> bool {
    spans
        .iter()
        .any(|s| s.trace_id == TRACE_ID && s.service == service && s.name == name)
}

/// Asserts that no attribute of any span carries one of `secrets`.
fn assert_no_values(spans: &[ReceivedSpan], secrets: &[&str]) {
    for span in spans {
        for value in span.all_values() {
            for secret in secrets {
                assert!(
                    !value.contains(secret),
                    "span `{}` of {} carries `{secret}` (an argument or result): {:#?}",
                    span.name,
                    span.service,
                    span.attributes
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_script_run_by_a_child_executor_is_one_trace_from_the_callers_traceparent() {
    tracing::info!(
        "--- a collector, and quiver dev with a child executor exporting to it over gRPC"
    );
    let collector = OtlpReceiver::start().await;
    let dev = QuiverDev::start_with_env(
        &["--mode", "code", "--executor", "child"],
        &exporting_to(&collector.grpc_endpoint, "grpc"),
    );
    let client = connect(&dev.url).await;

    tracing::info!("--- execute calls one tool, the caller's traceparent in _meta");
    let code = "const f = await tools.weather.get_forecast({ city: 'Argcity-5d1e' }); \
                return 'Resultval-' + 'c9a4' + String(f.tool);";
    let mut params = CallToolRequestParams::new("execute");
    params.arguments = json!({"code": code}).as_object().cloned();
    let mut request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    request
        .get_meta_mut()
        .insert("traceparent".into(), json!(traceparent()));
    let answer = client
        .send_request(request)
        .await
        .expect("tools/call execute answered");
    let ServerResult::CallToolResult(result) = answer else {
        panic!("not a tools/call result: {answer:?}");
    };
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    assert!(
        text(&result).contains("Resultval-c9a4"),
        "{}",
        text(&result)
    );

    tracing::info!("--- every hop's span reaches the collector, in the caller's trace");
    let spans = collector
        .wait_for(EXPORT_LIMIT, "the spans of the traced execute", |spans| {
            has(spans, "quiver-dev", "tools/call execute")
                && has(spans, "quiver-dev", "quiver.v1.Executor/ExecuteStream")
                && has(spans, "quiver-executor", "quiver.v1.Executor/ExecuteStream")
                && has(spans, "quiver-executor", "quiver.script.run")
                && has(spans, "quiver-executor", "quiver.script.call_tool")
                && has(spans, "quiver-executor", "tools/call get_forecast")
        })
        .await;
    let trace = in_trace(&spans);

    let edge = one(&trace, "quiver-dev", "tools/call execute");
    assert_eq!(
        edge.parent_span_id, CALLER_SPAN,
        "the caller's span is the parent"
    );
    assert_eq!(edge.kind, kind::SERVER);
    assert_eq!(edge.attr("mcp.method.name"), Some("tools/call"));
    assert_eq!(edge.attr("gen_ai.tool.name"), Some("execute"));
    assert_eq!(edge.attr("gen_ai.operation.name"), Some("execute_tool"));
    assert_eq!(edge.attr("quiver.mode"), Some("code"));
    assert_eq!(edge.attr("quiver.tenant"), Some("default"));
    for key in [
        "mcp.protocol.version",
        "mcp.session.id",
        "jsonrpc.request.id",
        "quiver.manifest.version",
    ] {
        assert!(edge.attr(key).is_some(), "edge span lacks {key}: {edge:#?}");
    }
    assert_eq!(edge.attr("error.type"), None, "{edge:#?}");

    // rmcp's client puts a progress token on every request: the client
    // hears the script while it runs, over the streamed hop.
    let hop = one(&trace, "quiver-dev", "quiver.v1.Executor/ExecuteStream");
    assert_eq!(hop.kind, kind::CLIENT);
    assert_eq!(hop.parent_span_id, edge.span_id);

    let executor = one(
        &trace,
        "quiver-executor",
        "quiver.v1.Executor/ExecuteStream",
    );
    assert_eq!(executor.kind, kind::SERVER);
    assert_eq!(
        executor.parent_span_id, hop.span_id,
        "the hop's context crossed gRPC"
    );
    assert!(executor.attr("quiver.executor").is_some(), "{executor:#?}");

    let run = one(&trace, "quiver-executor", "quiver.script.run");
    assert_eq!(run.parent_span_id, executor.span_id);
    let digest = hex::encode(Sha256::digest(code.as_bytes()));
    assert_eq!(run.attr("quiver.script.hash"), Some(digest.as_str()));
    assert_eq!(run.attr("quiver.tenant"), Some("default"));

    let call = one(&trace, "quiver-executor", "quiver.script.call_tool");
    assert_eq!(
        call.parent_span_id, run.span_id,
        "the tool call is the script's child"
    );
    assert!(
        call.attr("gen_ai.tool.name")
            .is_some_and(|t| t.contains("get_forecast")),
        "{call:#?}"
    );

    let upstream = one(&trace, "quiver-executor", "tools/call get_forecast");
    assert_eq!(upstream.kind, kind::CLIENT);
    assert_eq!(upstream.parent_span_id, call.span_id);
    assert_eq!(upstream.attr("mcp.method.name"), Some("tools/call"));
    assert_eq!(upstream.attr("gen_ai.tool.name"), Some("get_forecast"));
    assert_eq!(upstream.attr("quiver.upstream"), Some("weather"));
    assert_eq!(upstream.attr("error.type"), None, "{upstream:#?}");

    tracing::info!("--- neither the arguments nor the result are on any span");
    assert_no_values(
        &spans,
        &["Argcity-5d1e", "Resultval-c9a4", "get_forecast({"],
    );

    tracing::info!("--- a client with nothing to hear (no progress token): the unary hop");
    let answer: Value = support::http()
        .post(&dev.url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "execute")
        .json(
            &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "execute", "arguments": {"code": "return 'plain';"},
            "_meta": {
                "traceparent": traceparent(),
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "plain", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {}
            }}}),
        )
        .send()
        .await
        .expect("POST tools/call")
        .text()
        .await
        .map(|body| {
            let message = body
                .lines()
                .find_map(|l| l.strip_prefix("data:"))
                .unwrap_or(&body);
            serde_json::from_str(message.trim()).unwrap_or(Value::Null)
        })
        .expect("an answer");
    assert!(
        answer["result"]["content"].to_string().contains("plain"),
        "{answer}"
    );
    collector
        .wait_for(EXPORT_LIMIT, "the spans of the unary hop", |spans| {
            has(spans, "quiver-dev", "quiver.v1.Executor/Execute")
                && has(spans, "quiver-executor", "quiver.v1.Executor/Execute")
        })
        .await;
    client.cancel().await.expect("client closes");
}

#[tokio::test(flavor = "multi_thread")]
async fn in_process_calls_and_scripts_traced_by_an_http_header_are_exported_as_http_json() {
    tracing::info!("--- a collector, and quiver dev (in-process executor) exporting as http/json");
    let collector = OtlpReceiver::start().await;
    let dev = QuiverDev::start_with_env(
        &["--mode", "passthrough"],
        &exporting_to(&collector.http_endpoint, "http/json"),
    );

    tracing::info!("--- a client that sends the caller's traceparent as an HTTP header");
    quiver_upstream::install_crypto_provider();
    let mut config = StreamableHttpClientTransportConfig::with_uri(dev.url.clone());
    config.custom_headers.insert(
        "traceparent".parse().expect("header name"),
        traceparent().parse().expect("header value"),
    );
    let client =
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .expect("MCP client connects");
    let result = support::call(
        &client,
        "weather__get_forecast",
        json!({"city": "Argcity-77b0"}),
    )
    .await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));

    tracing::info!("--- the edge's span and the upstream call's are one trace under the caller");
    let spans = collector
        .wait_for(EXPORT_LIMIT, "the spans of the traced call", |spans| {
            has(spans, "quiver-dev", "tools/call weather__get_forecast")
                && has(spans, "quiver-dev", "tools/call get_forecast")
        })
        .await;
    let trace = in_trace(&spans);
    let edge = one(&trace, "quiver-dev", "tools/call weather__get_forecast");
    assert_eq!(edge.parent_span_id, CALLER_SPAN);
    assert_eq!(edge.kind, kind::SERVER);
    assert_eq!(edge.attr("quiver.mode"), Some("passthrough"));
    assert_eq!(edge.attr("gen_ai.tool.name"), Some("weather__get_forecast"));
    let upstream = one(&trace, "quiver-dev", "tools/call get_forecast");
    assert_eq!(upstream.kind, kind::CLIENT);
    assert_eq!(upstream.parent_span_id, edge.span_id);
    assert_eq!(upstream.attr("quiver.upstream"), Some("weather"));

    tracing::info!("--- the session's other requests are traced under the same header");
    assert!(
        trace
            .iter()
            .any(|s| s.name == "initialize" && s.parent_span_id == CALLER_SPAN),
        "no initialize span under the caller: {trace:#?}"
    );

    tracing::info!(
        "--- a script in code mode (in-process executor): its run and tool call in the trace"
    );
    let coder = connect_with_traceparent(&dev.mode_url("code")).await;
    let code =
        "const g = await tools.maps.geocode({ address: 'Argstreet-3e9f' }); return String(g.tool);";
    let result = support::call(&coder, "execute", json!({ "code": code })).await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    let spans = collector
        .wait_for(EXPORT_LIMIT, "the spans of the traced script", |spans| {
            has(spans, "quiver-dev", "tools/call execute")
                && has(spans, "quiver-dev", "quiver.script.run")
                && has(spans, "quiver-dev", "quiver.script.call_tool")
                && has(spans, "quiver-dev", "tools/call geocode")
        })
        .await;
    let trace = in_trace(&spans);
    let execute = one(&trace, "quiver-dev", "tools/call execute");
    assert_eq!(execute.parent_span_id, CALLER_SPAN);
    assert_eq!(execute.attr("quiver.mode"), Some("code"));
    let run = one(&trace, "quiver-dev", "quiver.script.run");
    assert_eq!(run.parent_span_id, execute.span_id, "no hop in process");
    let digest = hex::encode(Sha256::digest(code.as_bytes()));
    assert_eq!(run.attr("quiver.script.hash"), Some(digest.as_str()));
    let call = one(&trace, "quiver-dev", "quiver.script.call_tool");
    assert_eq!(call.parent_span_id, run.span_id);
    let geocode = one(&trace, "quiver-dev", "tools/call geocode");
    assert_eq!(geocode.parent_span_id, call.span_id);
    assert_eq!(geocode.attr("quiver.upstream"), Some("maps"));

    assert_no_values(&spans, &["Argcity-77b0", "Argstreet-3e9f"]);
    coder.cancel().await.expect("client closes");
    client.cancel().await.expect("client closes");
}

/// An MCP client of `url` that sends the caller's `traceparent` as an HTTP
/// header on every request.
async fn connect_with_traceparent(url: &str) -> RunningService<RoleClient, ()> {
    quiver_upstream::install_crypto_provider();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    config.custom_headers.insert(
        "traceparent".parse().expect("header name"),
        traceparent().parse().expect("header value"),
    );
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("MCP client connects")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gateway_rpc_takes_its_parent_from_grpc_metadata() {
    tracing::info!("--- quiver dev with its gRPC API, exporting as http/protobuf");
    let collector = OtlpReceiver::start().await;
    let dev = QuiverDev::start_with_env(
        &["--grpc-listen", "127.0.0.1:0"],
        &exporting_to(&collector.http_endpoint, "http/protobuf"),
    );
    let grpc = dev
        .banner
        .split("gRPC ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no gRPC address in the startup line: {}", dev.banner))
        .to_string();
    let mut client = GatewayClient::connect(format!("http://{grpc}"))
        .await
        .expect("connect to the gRPC API");

    tracing::info!("--- CallTool with the caller's traceparent in its metadata");
    let mut request = tonic::Request::new(GatewayCallToolRequest {
        name: "weather__get_forecast".into(),
        arguments_json: json!({"city": "Argcity-0b6c"}).to_string(),
        timeout_ms: 0,
    });
    request.metadata_mut().insert(
        "traceparent",
        traceparent().parse().expect("ASCII metadata"),
    );
    let answer = client.call_tool(request).await.expect("CallTool answered");
    assert!(!answer.get_ref().is_error, "{:?}", answer.get_ref());

    let spans = collector
        .wait_for(EXPORT_LIMIT, "the spans of the traced RPC", |spans| {
            has(spans, "quiver-dev", "quiver.v1.Gateway/CallTool")
                && has(spans, "quiver-dev", "tools/call get_forecast")
        })
        .await;
    let trace = in_trace(&spans);
    let rpc = one(&trace, "quiver-dev", "quiver.v1.Gateway/CallTool");
    assert_eq!(rpc.parent_span_id, CALLER_SPAN);
    assert_eq!(rpc.kind, kind::SERVER);
    assert_eq!(rpc.attr("rpc.system"), Some("grpc"));
    assert_eq!(rpc.attr("gen_ai.tool.name"), Some("weather__get_forecast"));
    assert_eq!(rpc.attr("quiver.tenant"), Some("default"));
    let upstream = one(&trace, "quiver-dev", "tools/call get_forecast");
    assert_eq!(
        upstream.parent_span_id, rpc.span_id,
        "the call's task kept the span"
    );
    assert_no_values(&spans, &["Argcity-0b6c"]);
}

/// The `traceparent` an upstream received, as `quiver_test_request_header`
/// echoes it (from the HTTP headers, or with `meta` from `params._meta`).
async fn received_traceparent(
    client: &RunningService<RoleClient, ()>,
    tool: &str,
    from_meta: bool,
) -> Option<String> {
    let answer = support::call(
        client,
        tool,
        json!({"name": "traceparent", "echo": true, "meta": from_meta}),
    )
    .await;
    assert_ne!(answer.is_error, Some(true), "{}", text(&answer));
    let echoed: serde_json::Value =
        serde_json::from_str(&text(&answer)).expect("the hook answers JSON");
    echoed["value"].as_str().map(str::to_string)
}

#[tokio::test(flavor = "multi_thread")]
async fn upstreams_receive_the_trace_in_meta_and_http_upstreams_in_headers_too() {
    tracing::info!("--- a stdio and an HTTP upstream behind quiver dev, exporting as http/json");
    let collector = OtlpReceiver::start().await;
    let http = MockHttpUpstream::start(&["--server", "weather"]);
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write_file(
        dir.path(),
        "quiver.toml",
        &format!(
            "[[upstream]]\nid = \"s\"\ntransport = \"stdio\"\ncommand = \"{}\"\nargs = [\"mock-upstream\", \"--demo\", \"--server\", \"weather\", \"--stdio\"]\n\n[[upstream]]\nid = \"h\"\ntransport = \"http\"\nurl = \"{}\"\n",
            test_kit_bin(),
            http.url
        ),
    );
    let config = config.to_str().expect("UTF-8 path");
    let dev = QuiverDev::start_with_env(
        &["--config", config, "--mode", "passthrough"],
        &exporting_to(&collector.http_endpoint, "http/json"),
    );
    let client = connect_with_traceparent(&dev.url).await;

    tracing::info!("--- each upstream reads the context of Quiver's client span, not the caller's");
    let stdio_meta = received_traceparent(&client, "s__quiver_test_request_header", true).await;
    let http_meta = received_traceparent(&client, "h__quiver_test_request_header", true).await;
    let http_header = received_traceparent(&client, "h__quiver_test_request_header", false).await;
    let spans = collector
        .wait_for(EXPORT_LIMIT, "the upstream calls' spans", |spans| {
            spans
                .iter()
                .filter(|s| {
                    s.trace_id == TRACE_ID && s.name == "tools/call quiver_test_request_header"
                })
                .count()
                == 3
        })
        .await;
    let upstream_spans: Vec<&ReceivedSpan> = spans
        .iter()
        .filter(|s| s.trace_id == TRACE_ID && s.name == "tools/call quiver_test_request_header")
        .collect();
    let sent_by = |upstream: &str, received: &Option<String>| {
        let received = received
            .as_deref()
            .unwrap_or_else(|| panic!("upstream `{upstream}` received no traceparent"));
        let mut parts = received.split('-');
        let (_, trace, parent) = (parts.next(), parts.next(), parts.next());
        assert_eq!(trace, Some(TRACE_ID), "{received}");
        let span = upstream_spans
            .iter()
            .find(|s| Some(s.span_id.as_str()) == parent)
            .unwrap_or_else(|| panic!("`{received}` names none of {upstream_spans:#?}"));
        assert_eq!(span.attr("quiver.upstream"), Some(upstream), "{span:#?}");
        assert_eq!(span.kind, kind::CLIENT);
        (*span).clone()
    };
    sent_by("s", &stdio_meta);
    let http_span = sent_by("h", &http_meta);
    assert_eq!(http_span.attr("server.address"), Some("127.0.0.1"));
    let header_span = sent_by("h", &http_header);
    assert_ne!(
        header_span.span_id, http_span.span_id,
        "two calls, two spans"
    );
    client.cancel().await.expect("client closes");
}
