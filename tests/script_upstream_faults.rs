//! Upstream faults seen from inside a code-mode script: an upstream killed
//! mid-script, a hung upstream, and the circuit breaker opening and recovering.
//! Each failure reaches the script as a catchable error; the executor keeps serving.

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{call, connect, start_with_config, test_kit_bin, text};

fn config(extra: &str) -> String {
    format!(
        "[edge]\ndefault_mode = \"code\"\n[[upstream]]\nid = \"w\"\ntransport = \"stdio\"\ncommand = \"{}\"\nargs = [\"mock-upstream\", \"--demo\", \"--server\", \"weather\", \"--stdio\"]\n{extra}\n",
        test_kit_bin()
    )
}

async fn execute<S: rmcp::Service<rmcp::RoleClient>>(
    client: &rmcp::service::RunningService<rmcp::RoleClient, S>,
    code: &str,
) -> Value {
    let result = call(client, "execute", json!({"code": code})).await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    result.structured_content.expect("structured result")["result"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn upstream_killed_mid_script_is_an_error_the_script_can_handle() {
    let (dev, _dir) = start_with_config(&config(""), &[]);
    let client = connect(&dev.url).await;
    let value = execute(
        &client,
        r#"
        const before = await tools.w.get_forecast({ city: "Oslo" });
        let failure = null;
        try { await tools.w.quiver_test_crash({}); } catch (e) { failure = String(e.message ?? e); }
        const after = await tools.w.get_forecast({ city: "Bergen" });
        return { before: before.arguments.city, failure, after: after.arguments.city };
        "#,
    )
    .await;
    assert_eq!(value["before"], "Oslo");
    assert!(
        value["failure"].as_str().unwrap().contains("not retried"),
        "{value}"
    );
    assert_eq!(
        value["after"], "Bergen",
        "the upstream was re-spawned for the next call"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn hung_upstream_times_out_inside_the_script() {
    let (dev, _dir) = start_with_config(&config("call_timeout_ms = 300"), &[]);
    let client = connect(&dev.url).await;
    let value = execute(
        &client,
        r#"
        try { await tools.w.quiver_test_sleep({ ms: 20000 }); return "answered"; }
        catch (e) { return String(e.message ?? e); }
        "#,
    )
    .await;
    assert!(
        value.as_str().unwrap().contains("did not answer within"),
        "{value}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn breaker_opens_after_failures_and_recovers_with_a_probe() {
    let (dev, _dir) = start_with_config(
        &config("call_timeout_ms = 200\nbreaker_failures = 2\nbreaker_open_secs = 1"),
        &[],
    );
    let client = connect(&dev.url).await;

    tracing::info!(
        "--- two timeouts open the breaker; the third call is refused without being sent"
    );
    let value = execute(
        &client,
        r#"
        const errors = [];
        for (let i = 0; i < 3; i++) {
          try { await tools.w.quiver_test_sleep({ ms: 5000 }); } catch (e) { errors.push(String(e.message ?? e)); }
        }
        return errors;
        "#,
    )
    .await;
    let errors = value.as_array().unwrap();
    assert_eq!(errors.len(), 3, "{value}");
    for timed_out in &errors[..2] {
        assert!(
            timed_out.as_str().unwrap().contains("did not answer"),
            "{value}"
        );
    }
    assert!(
        errors[2].as_str().unwrap().contains("circuit breaker open"),
        "{value}"
    );
    let status: Value = dev.status().await;
    assert_eq!(status["upstreams"][0]["breaker"], "open", "{status}");

    tracing::info!("--- after the open period one probe goes through and closes it");
    let recovered = async {
        loop {
            let result = call(
                &client,
                "execute",
                json!({"code": "return await tools.w.get_forecast({ city: 'Rome' });"}),
            )
            .await;
            if result.is_error != Some(true) {
                return result.structured_content.unwrap()["result"]["arguments"]["city"].clone();
            }
            // Until the open period ends, the only refusal is the breaker's.
            assert!(
                text(&result).contains("circuit breaker open"),
                "{}",
                text(&result)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let city = tokio::time::timeout(Duration::from_secs(20), recovered)
        .await
        .expect("the breaker closed again");
    assert_eq!(city, "Rome");
    let status: Value = dev.status().await;
    assert_eq!(status["upstreams"][0]["breaker"], "closed", "{status}");
    client.cancel().await.unwrap();
}
