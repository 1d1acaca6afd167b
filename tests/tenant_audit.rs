//! The audit log, with real processes: calls made directly and from a
//! script, and a refused call, each leave a record in the control plane's
//! log with the tenant, the key id, the edge, the executor, the tool, the
//! SHA-256 of the canonical arguments (the arguments themselves only for a
//! tenant that opted in), the decision and its reason, the latency, the
//! outcome and the script's hash; `quiver ctl audit` filters them, the
//! retention setting bounds them, and they survive a restart.

use crate::support;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::{QuiverDev, call, connect_as, ctl, ctl_json, ctl_until, text};

fn tenant(cp: &str, id: &str, flags: &[&str]) -> (String, String) {
    let mut args = vec!["tenant", "create", id, "--server", "weather"];
    args.extend_from_slice(flags);
    let (ok, _, err) = ctl(cp, &args);
    assert!(ok, "tenant create {id}: {err}");
    let key = ctl_json(cp, &["key", "issue", id]);
    (
        key["key"].as_str().unwrap().to_string(),
        key["key_id"].as_str().unwrap().to_string(),
    )
}

/// The tenant's audit records once there are `n` (executors ship every second).
fn records(cp: &str, tenant: &str, n: usize) -> Vec<Value> {
    let out = ctl_until(
        cp,
        &["-o", "json", "audit", "--tenant", tenant],
        |ok, out| {
            ok && serde_json::from_str::<Value>(out)
                .is_ok_and(|v| v.as_array().is_some_and(|a| a.len() >= n))
        },
    );
    serde_json::from_str::<Value>(&out)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

#[tokio::test(flavor = "multi_thread")]
async fn every_call_and_execution_leaves_a_record_allowed_or_denied() {
    let data = tempfile::tempdir().unwrap();
    let data_arg = data.path().to_str().unwrap().to_string();
    let dev = QuiverDev::start(&["--auth", "required", "--data", &data_arg]);
    let cp = dev.control_plane.clone();
    let (key, key_id) = tenant(&cp, "audited", &["--rate-limit", "2"]);

    let code = "return await tools.weather.get_forecast({days: 2, city: 'Oslo'})";
    let client = connect_as(&dev.mode_url("code"), &key).await;
    let result = call(&client, "execute", json!({ "code": code })).await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    client.cancel().await.unwrap();
    let client = connect_as(&dev.mode_url("passthrough"), &key).await;
    let result = call(&client, "weather__get_forecast", json!({"city": "Lisbon"})).await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    let refused = call(&client, "weather__get_forecast", json!({"city": "Paris"})).await;
    assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
    client.cancel().await.unwrap();

    let found = records(&cp, "audited", 4);
    assert_eq!(found.len(), 4, "{found:#?}");
    for record in &found {
        assert_eq!(record["tenant"], "audited");
        assert_eq!(record["caller"], format!("key:{key_id}"), "{record}");
        assert!(!record["edge"].as_str().unwrap().is_empty(), "{record}");
        assert!(!record["executor"].as_str().unwrap().is_empty(), "{record}");
        assert!(
            record.get("arguments").is_none(),
            "arguments kept without opt-in: {record}"
        );
        assert!(record["id"].as_u64().unwrap() > 0);
    }
    let script = sha256_hex(code);
    let execution = found
        .iter()
        .find(|r| r["kind"] == "execute")
        .expect("the execution's record");
    assert_eq!(execution["script_sha256"], script);
    assert_eq!(
        (
            execution["decision"].as_str(),
            execution["outcome"].as_str()
        ),
        (Some("allowed"), Some("ok"))
    );
    let from_script = found
        .iter()
        .find(|r| r["kind"] == "call" && r["script_sha256"] == script)
        .expect("the script's call carries the script's hash");
    assert_eq!(from_script["tool"], "weather/get_forecast");
    // Canonical JSON: keys sorted, so the digest does not depend on the order sent.
    assert_eq!(
        from_script["arguments_sha256"],
        sha256_hex(r#"{"city":"Oslo","days":2}"#)
    );
    let direct = found
        .iter()
        .find(|r| {
            r["kind"] == "call" && r["decision"] == "allowed" && r.get("script_sha256").is_none()
        })
        .expect("the direct call's record");
    assert_eq!(
        direct["arguments_sha256"],
        sha256_hex(r#"{"city":"Lisbon"}"#)
    );
    assert_eq!(direct["outcome"], "ok");
    let denied = found
        .iter()
        .find(|r| r["decision"] == "denied")
        .expect("the refused call's record");
    assert_eq!(denied["outcome"], "refused");
    assert!(
        denied["reason"]
            .as_str()
            .unwrap()
            .contains("rate limit of tenant `audited`"),
        "{denied}"
    );
    assert_eq!(
        denied["arguments_sha256"],
        sha256_hex(r#"{"city":"Paris"}"#)
    );

    tracing::info!("--- a tenant that opted in keeps its arguments; filters");
    let (verbose_key, _) = tenant(&cp, "verbose", &["--audit-arguments", "true"]);
    let client = connect_as(&dev.mode_url("passthrough"), &verbose_key).await;
    call(&client, "weather__get_forecast", json!({"city": "Rome"})).await;
    client.cancel().await.unwrap();
    let verbose = records(&cp, "verbose", 1);
    assert_eq!(verbose[0]["arguments"], json!({"city": "Rome"}));
    let everything = ctl_json(&cp, &["audit", "--since", "1h"]);
    assert_eq!(everything.as_array().unwrap().len(), 5, "{everything:#}");
    let none = ctl_json(&cp, &["audit", "--since", "0s", "--tenant", "audited"]);
    assert!(none.as_array().unwrap().is_empty(), "{none:#}");
    let (ok, _, err) = ctl(&cp, &["audit", "--since", "yesterday"]);
    assert!(!ok && err.contains("--since"), "{err}");
    let since_2000 = ctl_json(&cp, &["audit", "--since", "2000-01-01T00:00:00Z"]);
    assert_eq!(since_2000.as_array().unwrap().len(), 5, "{since_2000:#}");

    tracing::info!("--- times read as RFC 3339; --wait waits for a record just made");
    let (ok, table, err) = ctl(&cp, &["audit", "--tenant", "verbose"]);
    assert!(ok, "{err}");
    let at = table
        .lines()
        .nth(1)
        .and_then(|row| row.split_whitespace().nth(1))
        .unwrap_or_default();
    assert!(
        at.len() == 24 && at.as_bytes()[10] == b'T' && at.ends_with('Z'),
        "the AT column: {table}"
    );
    assert!(
        verbose[0]["at_ms"].is_u64(),
        "-o json keeps the number: {}",
        verbose[0]
    );
    let (prompt_key, _) = tenant(&cp, "prompt", &[]);
    let client = connect_as(&dev.mode_url("passthrough"), &prompt_key).await;
    call(&client, "weather__get_forecast", json!({"city": "Oslo"})).await;
    client.cancel().await.unwrap();
    let waited = ctl_json(&cp, &["audit", "--tenant", "prompt", "--wait", "30s"]);
    assert_eq!(waited.as_array().map(Vec::len), Some(1), "{waited:#}");

    tracing::info!("--- records survive a restart; retention bounds them");
    dev.stop_gracefully();
    let dev = QuiverDev::start(&["--auth", "required", "--data", &data_arg]);
    let cp = dev.control_plane.clone();
    let after = ctl_json(&cp, &["audit"]);
    assert_eq!(after.as_array().unwrap().len(), 6, "{after:#}");
    let (ok, _, err) = ctl(&cp, &["audit", "--retention", "--set-max-records", "2"]);
    assert!(ok, "{err}");
    let kept = ctl_json(&cp, &["audit"]);
    let ids: Vec<u64> = kept
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, vec![5, 6], "the two newest are kept");
}
