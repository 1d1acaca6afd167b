//! Rate limits and budgets, with real processes: `quiver dev` (its executor
//! in-process) and a standalone `quiver executor` following the same control
//! plane. Limits are set with `quiver ctl tenant create/update`; calls are made
//! by rmcp clients with the tenant's key and, for the second executor, over
//! its gRPC API. A refused call says which limit and, for rate limits, when
//! to retry; budgets hold across executors and restarts; `quiver ctl tenant
//! usage` shows what was leased and spent.

use crate::support;

use rmcp::{RoleClient, service::RunningService};
use serde_json::{Value, json};
use support::{ExecutorProcess, QuiverDev, call, connect_as, ctl, ctl_json, ctl_until, text};

fn tenant(cp: &str, id: &str, flags: &[&str]) -> String {
    let mut args = vec!["tenant", "create", id, "--server", "weather"];
    args.extend_from_slice(flags);
    let (ok, _, err) = ctl(cp, &args);
    assert!(ok, "tenant create {id}: {err}");
    ctl_json(cp, &["key", "issue", id])["key"]
        .as_str()
        .expect("a key")
        .to_string()
}

async fn forecast(client: &RunningService<RoleClient, ()>, city: &str) -> (bool, String) {
    let result = call(client, "weather__get_forecast", json!({"city": city})).await;
    (result.is_error != Some(true), text(&result))
}

#[tokio::test(flavor = "multi_thread")]
async fn rate_limits_refuse_before_the_upstream_and_say_when_to_retry() {
    let dev = QuiverDev::start(&["--auth", "required"]);
    let cp = dev.control_plane.clone();
    let key = tenant(
        &cp,
        "limited",
        &[
            "--rate-limit",
            "5",
            "--tool-rate-limit",
            "weather/get_forecast=2",
        ],
    );
    let client = connect_as(&dev.mode_url("passthrough"), &key).await;

    // The tool's own bucket: two forecasts, then refused with a retry hint.
    for city in ["a", "b"] {
        let (ok, answer) = forecast(&client, city).await;
        assert!(ok, "{answer}");
    }
    let (ok, refused) = forecast(&client, "c").await;
    assert!(!ok);
    for expected in [
        "rate limit of tool `weather/get_forecast`",
        "retry in",
        "nothing was sent",
    ] {
        assert!(refused.contains(expected), "`{expected}` in: {refused}");
    }
    assert!(
        !refused.contains("\"city\":\"c\""),
        "the upstream answered: {refused}"
    );

    // Other tools still pass, until the tenant-wide bucket (5) is empty:
    // 2 forecasts and 3 conditions use it up (the refused forecast took
    // nothing from it).
    for city in ["d", "e", "f"] {
        let result = call(
            &client,
            "weather__get_current_conditions",
            json!({"city": city}),
        )
        .await;
        assert_ne!(result.is_error, Some(true), "{}", text(&result));
    }
    let result = call(
        &client,
        "weather__get_current_conditions",
        json!({"city": "g"}),
    )
    .await;
    assert_eq!(result.is_error, Some(true));
    let refused = text(&result);
    assert!(
        refused.contains("rate limit of tenant `limited`") && refused.contains("retry in"),
        "{refused}"
    );

    // Calls made inside a script pass the same meter.
    let code = connect_as(&dev.mode_url("code"), &key).await;
    let result = call(
        &code,
        "execute",
        json!({"code": "return await tools.weather.get_air_quality({city: 'x'})"}),
    )
    .await;
    assert!(
        text(&result).contains("rate limit of tenant `limited`"),
        "{}",
        text(&result)
    );

    // Another tenant is not affected.
    let other = tenant(&cp, "free", &[]);
    let free = connect_as(&dev.mode_url("passthrough"), &other).await;
    for city in ["a", "b", "c", "d"] {
        let (ok, answer) = forecast(&free, city).await;
        assert!(ok, "{answer}");
    }
    client.cancel().await.unwrap();
    code.cancel().await.unwrap();
    free.cancel().await.unwrap();
}

/// `quiver ctl tenant usage` once `done` holds (executors report spending
/// every couple of seconds).
fn usage_until(cp: &str, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let out = ctl_until(cp, &["-o", "json", "tenant", "usage", id], |ok, out| {
        ok && serde_json::from_str::<Value>(out).is_ok_and(|v| done(&v))
    });
    serde_json::from_str(&out).expect("usage as JSON")
}

#[tokio::test(flavor = "multi_thread")]
async fn budgets_stop_scripts_hold_across_executors_and_survive_a_restart() {
    let data = tempfile::tempdir().unwrap();
    let data_arg = data.path().to_str().unwrap().to_string();
    let dev = QuiverDev::start(&["--auth", "required", "--data", &data_arg]);
    let cp = dev.control_plane.clone();

    tracing::info!("--- a script stops at the call that would overspend, and says so");
    let key = tenant(
        &cp,
        "scripted",
        &["--budget", "3", "--price", "weather/*=1"],
    );
    let client = connect_as(&dev.mode_url("code"), &key).await;
    let result = call(
        &client,
        "execute",
        json!({"code": "const done = []; for (let i = 0; i < 5; i++) { done.push(await tools.weather.get_forecast({city: 'c' + i})); } return done.length"}),
    )
    .await;
    let answer = text(&result);
    assert_eq!(result.is_error, Some(true), "{answer}");
    assert!(
        answer.contains("budget of tenant `scripted` exhausted")
            && answer.contains("nothing was sent"),
        "{answer}"
    );
    let usage = usage_until(&cp, "scripted", |u| u["calls"] == 3);
    assert_eq!(usage["spent"], 3.0, "{usage}");
    assert_eq!(usage["leased"], 3.0, "{usage}");
    assert_eq!(usage["remaining"], 0.0, "{usage}");
    client.cancel().await.unwrap();

    tracing::info!("--- two executors share one budget without overspending it");
    let key = tenant(&cp, "shared", &["--budget", "10", "--price", "weather/*=1"]);
    let executor = ExecutorProcess::start(&["--control-plane", &cp, "--auth", "required"]);
    let mut grpc = quiver_proto::pb::executor_client::ExecutorClient::connect(format!(
        "http://{}",
        executor.addr
    ))
    .await
    .unwrap();
    let client = connect_as(&dev.mode_url("passthrough"), &key).await;
    let (mut through_edge, mut through_executor) = (0, 0);
    for round in 0..12 {
        let (ok, answer) = forecast(&client, &format!("e{round}")).await;
        if ok {
            through_edge += 1;
        } else {
            assert!(
                answer.contains("budget of tenant `shared` exhausted"),
                "{answer}"
            );
        }
        let direct = grpc
            .call_tool(quiver_proto::pb::CallToolRequest {
                tenant: "shared".into(),
                server: "weather".into(),
                tool: "get_forecast".into(),
                arguments_json: format!(r#"{{"city":"x{round}"}}"#),
                ..Default::default()
            })
            .await;
        match direct {
            Ok(_) => through_executor += 1,
            Err(status) => assert!(
                status
                    .message()
                    .contains("budget of tenant `shared` exhausted"),
                "{status:?}"
            ),
        }
    }
    assert_eq!(
        through_edge + through_executor,
        10,
        "{through_edge} calls through dev's executor and {through_executor} through the other"
    );
    assert!(through_edge > 0 && through_executor > 0);
    client.cancel().await.unwrap();

    tracing::info!("--- usage survives a restart");
    dev.stop_gracefully();
    let dev = QuiverDev::start(&["--auth", "required", "--data", &data_arg]);
    let usage = ctl_json(&dev.control_plane, &["tenant", "usage", "scripted"]);
    assert_eq!(
        (usage["spent"].as_f64(), usage["calls"].as_u64()),
        (Some(3.0), Some(3)),
        "{usage}"
    );
    let key = ctl_json(&dev.control_plane, &["key", "issue", "scripted"])["key"]
        .as_str()
        .unwrap()
        .to_string();
    let client = connect_as(&dev.mode_url("passthrough"), &key).await;
    let (ok, answer) = forecast(&client, "after").await;
    assert!(!ok && answer.contains("exhausted"), "{answer}");
    client.cancel().await.unwrap();
}
