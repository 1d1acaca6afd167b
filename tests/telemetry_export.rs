//! OTLP export beyond traces: with `OTEL_EXPORTER_OTLP_ENDPOINT` set,
//! `quiver dev` pushes its metrics (the MCP conventions' names) and every
//! audit record, as an OTel log record named `quiver.audit` carrying the
//! tenant and tool but no argument values, to the collector.

use crate::support;

use std::{path::Path, time::Duration};

use rmcp::model::CallToolRequestParams;
use serde_json::json;
use support::{QuiverDev, connect, otlp::OtlpReceiver};

#[tokio::test(flavor = "multi_thread")]
async fn metrics_and_audit_records_reach_the_collector_over_otlp_grpc() {
    let collector = OtlpReceiver::start().await;
    let dev = QuiverDev::start_with_env(
        &["--mode", "passthrough"],
        &[
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                Path::new(&collector.grpc_endpoint),
            ),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", Path::new("grpc")),
            ("OTEL_METRIC_EXPORT_INTERVAL", Path::new("200")),
            ("OTEL_BLRP_SCHEDULE_DELAY", Path::new("100")),
        ],
    );

    eprintln!("--- one tool call through passthrough");
    let client = connect(&dev.url).await;
    let mut params = CallToolRequestParams::new("weather__get_forecast");
    params.arguments = json!({"city": "Zanzibar-7f3a"}).as_object().cloned();
    let result = client.call_tool(params).await.expect("the call answers");
    assert_ne!(result.is_error, Some(true), "{result:?}");

    eprintln!("--- its audit record arrives as an OTel log record");
    collector
        .wait_until(Duration::from_secs(30), "the audit log record", |c| {
            c.logs().iter().any(|l| l.event_name == "quiver.audit")
        })
        .await;
    let logs = collector.logs();
    let audit = logs
        .iter()
        .find(|l| l.event_name == "quiver.audit")
        .expect("an audit record");
    assert_eq!(audit.service, "quiver-dev", "{audit:?}");
    assert_eq!(
        audit.attributes.get("quiver.tenant").map(String::as_str),
        Some("default"),
        "{audit:?}"
    );
    assert!(
        audit
            .attributes
            .get("gen_ai.tool.name")
            .is_some_and(|t| t.contains("get_forecast")),
        "{audit:?}"
    );
    let record: serde_json::Value =
        serde_json::from_str(&audit.body).expect("the body is the record's JSON");
    assert_eq!(record["decision"], "allowed", "{record}");
    assert!(
        record["arguments_sha256"]
            .as_str()
            .is_some_and(|d| d.len() == 64),
        "{record}"
    );
    assert!(
        !audit.body.contains("Zanzibar-7f3a"),
        "argument values stay out unless the tenant opted in: {}",
        audit.body
    );

    eprintln!("--- metrics are pushed with the conventions' names");
    collector
        .wait_until(
            Duration::from_secs(30),
            "the edge's operation metric",
            |c| {
                let names = c.metric_names();
                names.contains("mcp.server.operation.duration")
                    && names.contains("mcp.client.operation.duration")
            },
        )
        .await;
    client.cancel().await.ok();
}
