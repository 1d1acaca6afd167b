//! Search's outcome signals through real processes: searches, a describe and
//! a call through `quiver dev` with an MCP client, read back with
//! `quiver ctl search stats`; they survive a graceful restart (written at
//! shutdown) and a crash (searches reach disk on their own, without a
//! describe or call after them); `quiver ctl search reset` forgets them for
//! good; the routes answer no browser and no foreign `Host`.

use crate::support;

use std::{
    path::Path,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use support::{QuiverDev, call, connect, quiver_bin, write_file};

const ZERO_HIT: &str = "xyzzy plugh frobnicate";
const ZERO_HIT_BEFORE_CRASH: &str = "qwertzuiop asdfghjkl";

/// `quiver dev` in search mode on `data`, with `edge_config` as its `[edge]` table.
///
/// Lexical ranking: only a search that shows nothing keeps its words, and
/// whether the sentence model shows something for nonsense depends on
/// whether it has embedded the view yet (it does so in the background), not
/// on what these tests are about.
fn start(data: &Path, dir: &Path, edge_config: &str) -> QuiverDev {
    let config = write_file(dir, "quiver.toml", &format!("[edge]\n{edge_config}\n"));
    let no_model = dir.join("no-model");
    QuiverDev::start_with_env(
        &[
            "--mode",
            "search",
            "--data",
            data.to_str().expect("utf-8 path"),
            "--config",
            config.to_str().expect("utf-8 path"),
        ],
        &[("QUIVER_SEARCH_MODEL_DIR", no_model.as_path())],
    )
}

/// Runs `quiver ctl --edge <dev> <args>` with the operator token `quiver
/// dev` wrote in its data directory; returns (success, stdout, stderr).
fn ctl_search(dev: &QuiverDev, data: &Path, args: &[&str]) -> (bool, String, String) {
    let token = data.join("console-operator.token");
    let output = std::process::Command::new(quiver_bin())
        .arg("ctl")
        .args(args)
        .args(["--edge", &dev.authority(), "--operator-token-file"])
        .arg(token)
        .output()
        .expect("run quiver ctl");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `quiver ctl -o json search stats --tenant default`: that tenant's stats.
fn stats(dev: &QuiverDev, data: &Path) -> Value {
    let (ok, stdout, stderr) = ctl_search(
        dev,
        data,
        &["-o", "json", "search", "stats", "--tenant", "default"],
    );
    assert!(ok, "ctl search stats failed: {stderr}");
    let body: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"));
    body["tenants"][0].clone()
}

fn zero_hit_queries(stats: &Value) -> Vec<String> {
    strings(stats, "zero_hit_queries", "query")
}

fn never_called(stats: &Value) -> Vec<String> {
    strings(stats, "found_never_called", "tool")
}

fn strings(stats: &Value, list: &str, key: &str) -> Vec<String> {
    stats[list]
        .as_array()
        .unwrap_or_else(|| panic!("no {list} in {stats}"))
        .iter()
        .map(|e| e[key].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Waits (bounded) until a signals file under `data` holds `needle`.
fn wait_on_disk(data: &Path, needle: &str) {
    let dir = data.join("search/signals");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = std::fs::read_dir(&dir).into_iter().flatten().any(|entry| {
            entry
                .ok()
                .and_then(|e| std::fs::read_to_string(e.path()).ok())
                .is_some_and(|text| text.contains(needle))
        });
        if found {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "`{needle}` never reached {}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ctl_search_stats_shows_zero_hits_and_uncalled_tools_across_restarts_until_reset() {
    let data = tempfile::tempdir().expect("temp dir");
    let dir = tempfile::tempdir().expect("temp dir");
    // An hour between periodic writes: only the shutdown flush can save
    // what the first run learned.
    let dev = start(data.path(), dir.path(), "search_signal_flush_secs = 3600");

    eprintln!("--- search, call the best hit, search for nonsense, describe in code mode");
    let client = connect(&dev.mode_url("search")).await;
    let found = call(
        &client,
        "search_tools",
        json!({"query": "open an issue in a repository", "limit": 3}),
    )
    .await;
    let results = found.structured_content.expect("structured results")["results"]
        .as_array()
        .expect("results")
        .clone();
    assert!(results.len() >= 2, "{results:?}");
    assert_eq!(results[0]["name"], "github__create_issue");
    let key = |r: &Value| {
        format!(
            "{}/{}",
            r["server"].as_str().unwrap_or_default(),
            r["tool"].as_str().unwrap_or_default()
        )
    };
    let passed_over: Vec<String> = results[1..].iter().map(key).collect();
    let called = call(
        &client,
        "call_tool",
        json!({"name": "github__create_issue", "arguments": {"owner": "o", "repo": "r", "title": "t"}}),
    )
    .await;
    assert_ne!(called.is_error, Some(true), "{called:?}");
    let nothing = call(&client, "search_tools", json!({"query": ZERO_HIT})).await;
    assert_eq!(
        nothing.structured_content.expect("structured")["results"],
        json!([])
    );
    client.cancel().await.expect("close");

    let before_describe = stats(&dev, data.path());
    let code = connect(&dev.mode_url("code")).await;
    let hits = call(
        &code,
        "search",
        json!({"query": "weather forecast for a city", "limit": 1}),
    )
    .await;
    let hit = hits.structured_content.expect("structured")["results"][0]["name"].clone();
    assert_eq!(hit, "weather__get_forecast");
    let described = call(
        &code,
        "describe",
        json!({"names": ["weather__get_forecast"]}),
    )
    .await;
    assert_ne!(described.is_error, Some(true), "{described:?}");
    code.cancel().await.expect("close");

    eprintln!(
        "--- ctl search stats: the zero-hit query, the tools passed over, not the one called"
    );
    let first = stats(&dev, data.path());
    assert_eq!(first["tenant"], "default");
    assert_eq!(zero_hit_queries(&first), [ZERO_HIT]);
    assert_eq!(first["zero_hit_queries"][0]["count"], 1);
    let uncalled = never_called(&first);
    for tool in &passed_over {
        assert!(uncalled.contains(tool), "{tool} missing from {uncalled:?}");
    }
    assert!(
        !uncalled.contains(&"github/create_issue".to_owned()),
        "{uncalled:?}"
    );
    // The describe of a tool the search showed taught an association.
    assert_eq!(
        first["associations"].as_u64(),
        before_describe["associations"].as_u64().map(|n| n + 1),
        "before {before_describe}, after {first}"
    );
    let (ok, table, stderr) = ctl_search(&dev, data.path(), &["search", "stats"]);
    assert!(ok, "{stderr}");
    assert!(table.contains("tenant default"), "{table}");
    assert!(table.contains(ZERO_HIT), "{table}");
    assert!(table.contains(&passed_over[0]), "{table}");

    eprintln!("--- the routes answer the operator's tools only");
    let http = support::http();
    let base = format!("http://{}", dev.authority());
    let from_page = http
        .post(format!("{base}/search/reset/default"))
        .header("Origin", "http://evil.example")
        .send()
        .await
        .expect("POST");
    assert_eq!(from_page.status(), 403);
    let rebound = http
        .get(format!("{base}/search/stats"))
        .header("Host", "evil.example")
        .send()
        .await
        .expect("GET");
    assert_eq!(rebound.status(), 403);
    // From this machine, to its own Host, but without the operator token:
    // another local process (a stdio upstream) reads no tenant's queries.
    let no_token = http
        .get(format!("{base}/search/stats"))
        .send()
        .await
        .expect("GET");
    assert_eq!(no_token.status(), 403);
    let wrong_token = http
        .get(format!("{base}/search/stats"))
        .bearer_auth("not-the-operator-token")
        .send()
        .await
        .expect("GET");
    assert_eq!(wrong_token.status(), 403);
    assert_eq!(
        stats(&dev, data.path()),
        first,
        "a refused reset changed nothing"
    );

    eprintln!("--- graceful restart (no periodic write in between): the stats are still there");
    dev.stop_gracefully();
    let dev = start(data.path(), dir.path(), "");
    assert_eq!(stats(&dev, data.path()), first);

    eprintln!("--- a search alone reaches disk by itself; a crash keeps it");
    let client = connect(&dev.mode_url("search")).await;
    call(
        &client,
        "search_tools",
        json!({"query": ZERO_HIT_BEFORE_CRASH}),
    )
    .await;
    client.cancel().await.expect("close");
    wait_on_disk(data.path(), ZERO_HIT_BEFORE_CRASH);
    drop(dev); // SIGKILL
    let dev = start(data.path(), dir.path(), "");
    let mut expected = vec![ZERO_HIT.to_owned(), ZERO_HIT_BEFORE_CRASH.to_owned()];
    expected.sort();
    assert_eq!(zero_hit_queries(&stats(&dev, data.path())), expected);

    eprintln!("--- a tenant name is carried whole (path-encoded)");
    let (ok, odd, stderr) = ctl_search(
        &dev,
        data.path(),
        &["-o", "json", "search", "stats", "--tenant", "a/b c?d"],
    );
    assert!(ok, "{stderr}");
    assert!(odd.contains("\"tenant\": \"a/b c?d\""), "{odd}");

    eprintln!("--- ctl search reset forgets them, on disk too");
    let (ok, out, stderr) = ctl_search(
        &dev,
        data.path(),
        &["search", "reset", "--tenant", "default"],
    );
    assert!(ok, "{stderr}");
    assert!(out.contains("tenant default forgotten"), "{out}");
    let cleared = stats(&dev, data.path());
    assert!(zero_hit_queries(&cleared).is_empty(), "{cleared}");
    assert!(never_called(&cleared).is_empty(), "{cleared}");
    assert_eq!(cleared["associations"], 0);
    drop(dev);
    let dev = start(data.path(), dir.path(), "");
    let (ok, all, stderr) = ctl_search(&dev, data.path(), &["-o", "json", "search", "stats"]);
    assert!(ok, "{stderr}");
    assert_eq!(
        serde_json::from_str::<Value>(&all).expect("JSON"),
        json!({"tenants": []})
    );
}

#[test]
fn ctl_search_names_the_edge_it_cannot_reach() {
    // `ctl` only connects, so there is no port for it to choose: the test
    // holds one (bound, not listening) until the end, so connections to it
    // are refused and no other process can take it meanwhile.
    let nobody = support::HeldPort::new();
    let output = std::process::Command::new(quiver_bin())
        .args(["ctl", "search", "stats", "--edge", &nobody.addr.to_string()])
        .output()
        .expect("run quiver ctl");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot reach the edge") && stderr.contains("--edge"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_scripts_searches_and_calls_teach_search_as_direct_ones_do() {
    let data = tempfile::tempdir().expect("temp dir");
    let dir = tempfile::tempdir().expect("temp dir");
    let dev = start(data.path(), dir.path(), "");
    let code = connect(&dev.mode_url("code")).await;
    // One script: search, then call the best hit by its namespace path.
    let script = r#"
        const hits = await search("open an issue in a repository", 3);
        const made = await tools.github.create_issue({owner: "o", repo: "r", title: "t"});
        return {hits: hits.map(h => h.name), made: made !== undefined};
    "#;
    let ran = call(&code, "execute", json!({"code": script})).await;
    assert_ne!(ran.is_error, Some(true), "{ran:?}");
    let value = ran.structured_content.expect("structured result");
    let hits: Vec<String> = value["result"]["hits"]
        .as_array()
        .unwrap_or_else(|| panic!("no hits in {value}"))
        .iter()
        .map(|h| h.as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        hits.first().map(String::as_str),
        Some("github__create_issue"),
        "{hits:?}"
    );
    code.cancel().await.expect("close");

    let stats = stats(&dev, data.path());
    let uncalled = never_called(&stats);
    // The script's search recorded what it showed; its call took the tool
    // it made out of "found, never called".
    assert!(
        !uncalled.contains(&"github/create_issue".to_owned()),
        "{uncalled:?}"
    );
    assert_eq!(uncalled.len(), hits.len() - 1, "{uncalled:?} vs {hits:?}");
}
