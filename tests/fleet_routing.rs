//! The fleet on real processes over loopback: a control plane (`quiver dev`
//! with the demo upstreams), two `quiver executor`s that join it, and a
//! `quiver edge` that routes to them. Killing an executor in the middle of a
//! script fails that script with an error that says its tool calls may have
//! run, and the next script runs on the other executor.

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{EdgeProcess, ExecutorProcess, QuiverDev, call, connect, text};

fn executor(dev: &QuiverDev, data: &std::path::Path, name: &str) -> ExecutorProcess {
    let key = data.join("cluster.key");
    ExecutorProcess::start(&[
        "--control-plane",
        &dev.control_plane,
        "--node-name",
        name,
        "--cluster-key-file",
        key.to_str().unwrap(),
    ])
}

fn ok_count(executors: &[Value]) -> usize {
    executors.iter().filter(|e| e["state"] == "ok").count()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_executor_killed_mid_script_fails_that_script_only_and_the_next_runs_elsewhere() {
    let data = tempfile::tempdir().unwrap();
    let dev = QuiverDev::start(&["--data", data.path().to_str().unwrap()]);
    let mut executors = [
        ("exec-a", executor(&dev, data.path(), "exec-a")),
        ("exec-b", executor(&dev, data.path(), "exec-b")),
    ];
    let edge = EdgeProcess::start(&dev.control_plane);
    edge.until("both executors take work", |e| ok_count(e) == 2)
        .await;

    let client = connect(&edge.url("code")).await;
    let first = call(&client, "execute", json!({"code": "return 40 + 2;"})).await;
    assert_eq!(first.is_error, Some(false), "{}", text(&first));
    assert!(text(&first).contains("42"), "{}", text(&first));

    eprintln!("--- a session's scripts stay where its stash is");
    let stashed = call(
        &client,
        "execute",
        json!({"code": "await stash.set('city', 'Lisbon'); return 'kept';"}),
    )
    .await;
    assert_eq!(stashed.is_error, Some(false), "{}", text(&stashed));
    for _ in 0..6 {
        let again = call(
            &client,
            "execute",
            json!({"code": "return await stash.get('city');"}),
        )
        .await;
        assert!(text(&again).contains("Lisbon"), "{}", text(&again));
    }

    eprintln!("--- a script that called a tool and waits, on whichever executor took it");
    // The wait stays within the 5 s wall limit: a longer timer throws at once,
    // and the script would be over before the executor is killed.
    let slow = {
        let url = edge.url("code");
        tokio::spawn(async move {
            let client = connect(&url).await;
            call(
                &client,
                "execute",
                json!({"code": "await tools.weather.get_forecast({city: 'Oslo'}); await new Promise((r) => setTimeout(r, 4000)); return 'finished';"}),
            )
            .await
        })
    };
    let busy = edge
        .until("the script is running", |e| {
            e.iter().any(|x| x["outstanding"].as_u64() == Some(1))
        })
        .await;
    let victim = busy
        .iter()
        .find(|x| x["outstanding"].as_u64() == Some(1))
        .and_then(|x| x["node"].as_str())
        .unwrap()
        .to_string();
    eprintln!("--- kill -9 {victim}");
    let index = executors
        .iter()
        .position(|(name, _)| *name == victim)
        .unwrap();
    executors[index].1.kill();

    let lost = slow.await.unwrap();
    let message = text(&lost);
    assert_eq!(lost.is_error, Some(true), "{message}");
    assert!(message.contains("executor lost"), "{message}");
    assert!(message.contains(&victim), "{message}");
    assert!(message.contains("may have run"), "{message}");
    assert!(message.contains("not re-run"), "{message}");

    eprintln!("--- the next scripts run on the survivor, without waiting for the registry");
    for i in 0..3 {
        let next = call(&client, "execute", json!({"code": format!("return {i};")})).await;
        assert_eq!(next.is_error, Some(false), "{}", text(&next));
    }
    let forecast = call(
        &client,
        "execute",
        json!({"code": "return await tools.weather.get_forecast({city: 'Bergen'});"}),
    )
    .await;
    assert_eq!(forecast.is_error, Some(false), "{}", text(&forecast));
    assert!(text(&forecast).contains("Bergen"), "{}", text(&forecast));

    eprintln!("--- the dead executor leaves the fleet once its reports stop");
    edge.until("the dead executor is gone", |e| {
        e.iter().all(|x| x["node"] != victim.as_str()) && ok_count(e) == 1
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_executor_with_another_catalogue_is_fenced_and_the_rest_keep_serving() {
    let data = tempfile::tempdir().unwrap();
    let dev = QuiverDev::start(&["--data", data.path().to_str().unwrap()]);
    // An executor built from a catalogue of its own (the demo's, with one
    // tool described differently): its stub hash is one the control plane
    // never published.
    let mut weather: Vec<Value> = serde_json::from_str(quiver_demo::CATALOG).expect("demo catalog");
    weather[0]["tools"]["weather"]["tools"][0]["description"] =
        json!("A forecast, described by an executor that drifted.");
    let catalog = support::write_file(
        data.path(),
        "weather-only.json",
        &serde_json::to_string(&weather).unwrap(),
    );
    let _odd = ExecutorProcess::start(&[
        "--control-plane",
        &dev.control_plane,
        "--node-name",
        "exec-odd",
        "--catalog",
        catalog.to_str().unwrap(),
    ]);
    let mut good = executor(&dev, data.path(), "exec-good");
    let edge = EdgeProcess::start(&dev.control_plane);
    let executors = edge
        .until("both executors known, one fenced", |e| {
            e.len() == 2 && ok_count(e) == 1
        })
        .await;
    let odd = executors.iter().find(|x| x["node"] == "exec-odd").unwrap();
    assert_eq!(odd["state"], "fenced", "{executors:?}");

    eprintln!("--- every call and script goes to the executor that matches");
    let client = connect(&edge.url("code")).await;
    for _ in 0..4 {
        let answer = call(
            &client,
            "execute",
            json!({"code": "return await tools.github.search_repositories({query: 'quiver'});"}),
        )
        .await;
        assert_eq!(answer.is_error, Some(false), "{}", text(&answer));
    }
    let passthrough = connect(&edge.url("passthrough")).await;
    let forecast = call(
        &passthrough,
        "weather__get_forecast",
        json!({"city": "Oslo"}),
    )
    .await;
    assert_eq!(forecast.is_error, Some(false), "{}", text(&forecast));

    eprintln!("--- cluster verify names the fenced executor and why");
    let (_, verify, _) = support::ctl(&dev.control_plane, &["cluster", "verify"]);
    let line = verify
        .lines()
        .find(|l| l.contains("exec-odd"))
        .unwrap_or_else(|| panic!("exec-odd not in: {verify}"));
    assert!(line.contains("mismatch"), "{verify}");

    eprintln!("--- with the good one gone, nothing goes to the fenced one");
    good.kill();
    edge.until("only the fenced executor is left", |e| {
        e.len() == 1 && e[0]["state"] == "fenced"
    })
    .await;
    let still = call(&client, "execute", json!({"code": "return 1;"})).await;
    let message = text(&still);
    assert_eq!(still.is_error, Some(true), "{message}");
    assert!(message.contains("exec-odd fenced"), "{message}");
    assert!(message.contains("nothing ran"), "{message}");
}

#[tokio::test(flavor = "multi_thread")]
async fn resources_pass_through_the_edge_to_a_remote_executor() {
    let data = tempfile::tempdir().unwrap();
    let dev = QuiverDev::start(&["--data", data.path().to_str().unwrap()]);
    // An upstream with a resource (the mock's test hooks).
    let mut add = vec!["upstream", "add", "extra"];
    let flags = support::hooks_upstream_flags("notes", &[]);
    add.extend(flags.iter().map(String::as_str));
    let (ok, _, err) = support::ctl(&dev.control_plane, &add);
    assert!(ok, "{err}");
    let _executor = executor(&dev, data.path(), "exec-r");
    let edge = EdgeProcess::start(&dev.control_plane);
    edge.until("the executor takes work", |e| ok_count(e) == 1)
        .await;

    let client = connect(&edge.url("passthrough")).await;
    // The edge lists resources from every server that declared them; the
    // new upstream may take a moment to reach the manifest.
    let mut listed = Vec::new();
    for _ in 0..200 {
        listed = client
            .list_resources(None)
            .await
            .expect("resources/list through the edge")
            .resources;
        if !listed.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let uri = listed
        .iter()
        .map(|r| r.uri.clone())
        .find(|u| u.contains("note"))
        .unwrap_or_else(|| panic!("no note resource in {listed:?}"));
    let read = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(uri.clone()))
        .await
        .expect("resources/read through the edge");
    let body = serde_json::to_string(&read.contents).unwrap();
    assert!(body.contains("a note"), "{body}");

    // An unknown resource is the upstream's error, not an executor failure.
    let missing = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(format!(
            "{uri}-missing"
        )))
        .await
        .expect_err("an unknown resource is an error");
    let message = missing.to_string();
    assert!(!message.contains("executor lost"), "{message}");
    assert_eq!(
        ok_count(&edge.executors().await),
        1,
        "the executor stays in service"
    );
}
