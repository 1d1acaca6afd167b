//! `scripts/cluster.sh up|status|down` as a new user runs it: three
//! control-plane nodes, etcd, two executors and two edges on loopback, with the
//! demo upstreams. An MCP client works through either edge, `cluster
//! verify` lists every edge and executor as `ok`, a session opened on one
//! edge is served by the other (its stash too) and survives the first
//! edge's `kill -9`, a deleted session's script stops within 250 ms, and
//! `down` stops everything.

use crate::support;

use std::{path::Path, process::Command};

use serde_json::json;
use support::{
    call, connect, ctl_until, quiver_bin,
    raw_session::{RawSession, run_forever, stopped_within_250_ms},
    text,
};

/// The script with this test's state directory, binary and ports.
fn cluster(state: &Path, offset: u32, verb: &str) -> (bool, String) {
    support::output_of(
        Command::new("bash")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/cluster.sh"))
            .arg(verb)
            .env("QUIVER_CLUSTER_DIR", state)
            .env("QUIVER_BIN", quiver_bin())
            .env("QUIVER_CLUSTER_PORT_OFFSET", offset.to_string()),
    )
}

/// Runs `down` however the test ends.
struct Down<'a>(&'a Path, u32);

impl Drop for Down<'_> {
    fn drop(&mut self) {
        let _ = cluster(self.0, self.1, "down");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cluster_up_serves_mcp_through_either_edge_and_down_stops_it() {
    let state = tempfile::tempdir().unwrap();
    // Ports away from the defaults and from other runs of this test, and
    // below 32768, where ephemeral ports start.
    let offset = 10_000 + (std::process::id() % 1000) * 10;
    let _down = Down(state.path(), offset);
    let (ok, up) = cluster(state.path(), offset, "up");
    assert!(ok, "{up}");
    let edges: Vec<String> = [8081, 8082]
        .iter()
        .map(|port| format!("http://127.0.0.1:{}", port + offset))
        .collect();
    for edge in &edges {
        assert!(up.contains(&format!("{edge}/mcp")), "{up}");
    }
    let endpoints: String = [7401, 7402, 7403]
        .iter()
        .map(|port| format!("127.0.0.1:{}", port + offset))
        .collect::<Vec<_>>()
        .join(",");
    assert!(up.contains(&endpoints), "{up}");

    eprintln!("--- an MCP client works through either edge, in passthrough and code mode");
    for edge in &edges {
        let passthrough = connect(&format!("{edge}/passthrough/mcp")).await;
        let forecast = call(
            &passthrough,
            "weather__get_forecast",
            json!({"city": "Oslo"}),
        )
        .await;
        assert_eq!(forecast.is_error, Some(false), "{}", text(&forecast));
        assert!(text(&forecast).contains("Oslo"), "{}", text(&forecast));
        let code = connect(&format!("{edge}/code/mcp")).await;
        let script = call(
            &code,
            "execute",
            json!({"code": "const [a, b] = await Promise.all([tools.weather.get_forecast({city: 'Rome'}), tools.weather.get_forecast({city: 'Oslo'})]); return [a, b].length;"}),
        )
        .await;
        assert_eq!(script.is_error, Some(false), "{}", text(&script));
    }

    eprintln!("--- every edge and executor registered in etcd, and edges route by it");
    let etcd = format!("127.0.0.1:{}", 2379 + offset);
    assert!(up.contains(&format!("http://{etcd}")), "{up}");
    let expected = [
        "/quiver/members/edge/edge-1",
        "/quiver/members/edge/edge-2",
        "/quiver/members/executor/executor-1",
        "/quiver/members/executor/executor-2",
    ];
    let mut members = Vec::new();
    // Registration runs beside serving: poll (bounded) until all four are in.
    for _ in 0..100 {
        members = support::etcd::keys(&etcd, "/quiver/members/").await;
        if members == expected {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(members, expected);
    for edge in &edges {
        let status: serde_json::Value = support::http()
            .get(format!("{edge}/status"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(status["membership"]["source"], "etcd", "{status}");
    }

    eprintln!("--- cluster verify lists every edge and executor as ok");
    let verify = ctl_until(&endpoints, &["cluster", "verify"], |ok, out| {
        ok && ["edge-1", "edge-2", "executor-1", "executor-2"]
            .iter()
            .all(|node| {
                out.lines()
                    .any(|l| l.starts_with(node) && l.split_whitespace().any(|w| w == "ok"))
            })
    });
    assert!(!verify.contains("mismatch"), "{verify}");

    eprintln!("--- cluster status --etcd lists what etcd holds beside the control plane");
    let both = support::ctl_json(&endpoints, &["cluster", "status", "--etcd", &etcd]);
    let canonical = both["control_plane"]["stub_hash"].as_str().unwrap();
    let mut registered: Vec<&str> = both["etcd_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            assert_eq!(m["stub_hash"], canonical, "{m}");
            assert_eq!(m["ready"], true, "{m}");
            m["node"].as_str().unwrap()
        })
        .collect();
    registered.sort_unstable();
    assert_eq!(
        registered,
        ["edge-1", "edge-2", "executor-1", "executor-2"],
        "{both}"
    );

    eprintln!("--- a session opened on edge 1 is served by edge 2, with its stash");
    let code_urls: Vec<String> = edges.iter().map(|e| format!("{e}/code/mcp")).collect();
    let (one, two) = (&code_urls[0], &code_urls[1]);
    let moving = RawSession::open(one, None).await;
    let set = "await stash.set('where', 'opened on edge 1'); return 1;";
    assert_eq!(
        moving
            .call(one, "execute", json!({"code": set}))
            .await
            .text(),
        "1"
    );
    let get = json!({"code": "return await stash.get('where');"});
    assert_eq!(
        moving.call(two, "execute", get.clone()).await.text(),
        "\"opened on edge 1\""
    );
    let orphan = RawSession::open(one, None).await;
    assert_eq!(
        orphan
            .call(one, "execute", json!({"code": set}))
            .await
            .text(),
        "1"
    );

    eprintln!("--- kill -9 one edge: clients continue through the other");
    let pid = std::fs::read_to_string(state.path().join("edge1.pid")).unwrap();
    assert!(
        Command::new("kill")
            .args(["-9", pid.trim()])
            .status()
            .unwrap()
            .success()
    );
    let survivor = connect(&format!("{}/code/mcp", edges[1])).await;
    let after = call(
        &survivor,
        "execute",
        json!({"code": "return 'still here';"}),
    )
    .await;
    assert_eq!(after.is_error, Some(false), "{}", text(&after));
    // The session the killed edge opened goes on through the survivor.
    assert_eq!(
        orphan.call(two, "execute", get).await.text(),
        "\"opened on edge 1\""
    );

    eprintln!("--- a deleted session's script stops within 250 ms");
    let probe = RawSession::open(two, None).await;
    let doomed = RawSession::open(two, None).await;
    stopped_within_250_ms(&probe, two, run_forever(two, &doomed), async {
        assert_eq!(doomed.delete(two).await, 204);
    })
    .await;
    let (_, status) = cluster(state.path(), offset, "status");
    assert!(status.contains("edge1: stopped"), "{status}");
    assert!(status.contains("edge2: running"), "{status}");
    assert!(status.contains("registered in etcd:"), "{status}");
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("executor-1") && l.contains("canonical")),
        "{status}"
    );

    eprintln!("--- down stops every process");
    let (ok, down) = cluster(state.path(), offset, "down");
    assert!(ok, "{down}");
    let (_, status) = cluster(state.path(), offset, "status");
    for name in [
        "etcd",
        "cp1",
        "cp2",
        "cp3",
        "executor1",
        "executor2",
        "edge1",
        "edge2",
    ] {
        assert!(status.contains(&format!("{name}: stopped")), "{status}");
    }
}
