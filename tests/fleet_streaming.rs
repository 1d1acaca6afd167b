//! Streaming across the edge → executor hop, on real processes over
//! loopback: a control plane, a `quiver executor` holding the upstream (the
//! weather mock with its test hooks) and a `quiver edge` that holds none.
//! What the upstream sends during a call — progress notifications, a
//! sampling or an elicitation request — reaches the MCP client through the
//! edge, and the client's answer goes back to the upstream: for a direct
//! call in passthrough and for a tool call inside a code-mode script.
#![allow(deprecated)] // sampling: current in the protocol versions Quiver serves

use crate::support;

use support::{
    ControlPlaneProcess, EdgeProcess, ExecutorProcess, add_demo_upstream,
    session_client::{Seen, answer, call_with_token, first_items, open, rendezvous, via_script},
};

#[tokio::test(flavor = "multi_thread")]
async fn progress_sampling_and_elicitation_cross_the_hop_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let cp = ControlPlaneProcess::start(1, &dir.path().join("n1"), &["--bootstrap"]);
    add_demo_upstream(&cp.addr, "w", "weather", &["--test-hooks"]);
    let _executor = ExecutorProcess::start(&["--control-plane", &cp.addr, "--node-name", "exec"]);
    let edge = EdgeProcess::start(&cp.addr);
    edge.until("the executor takes work", |e| {
        e.iter().filter(|x| x["state"] == "ok").count() == 1
    })
    .await;

    eprintln!("--- passthrough: progress and an elicitation come back; the answer goes up");
    let (direct, mut seen) = open(&edge.url("passthrough"), "direct-client").await;
    let (token, result) = call_with_token(
        &direct,
        "w__quiver_test_rendezvous",
        rendezvous("p", 1, "P", 3, Some("elicitation")),
    )
    .await;
    let said = answer(&result, "passthrough");
    assert!(
        said["answers"][0]["answered"]
            .to_string()
            .contains("direct-client"),
        "the upstream got the client's answer: {said}"
    );
    let items = first_items(&mut seen, "direct-client", 4).await;
    let mut progress: Vec<String> = Vec::new();
    let mut elicited = 0;
    for item in items {
        match item {
            Seen::Progress(got, message) => {
                assert_eq!(got, token, "progress under the call's own token");
                progress.push(message);
            }
            Seen::Elicitation(asked) => {
                assert!(asked.contains("P asks #1"), "{asked}");
                elicited += 1;
            }
            Seen::Sampling(asked) => panic!("a sampling request nobody made: {asked}"),
        }
    }
    progress.sort();
    assert_eq!(progress, ["P 1/3", "P 2/3", "P 3/3"]);
    assert_eq!(elicited, 1);

    eprintln!("--- code mode: a script's tool call samples the client through the edge");
    let (code, mut seen) = open(&edge.url("code"), "script-client").await;
    let (_, result) = call_with_token(
        &code,
        "execute",
        via_script(&rendezvous("s", 1, "S", 2, Some("sampling"))),
    )
    .await;
    let said = answer(&result, "script");
    assert!(
        said.to_string().contains("sampled by script-client"),
        "the upstream got the client's sample: {said}"
    );
    let items = first_items(&mut seen, "script-client", 3).await;
    let sampled = items
        .iter()
        .filter(|i| matches!(i, Seen::Sampling(asked) if asked.contains("S asks #1")))
        .count();
    let progressed = items
        .iter()
        .filter(|i| matches!(i, Seen::Progress(_, m) if m.starts_with("S ")))
        .count();
    assert_eq!((sampled, progressed), (1, 2), "{items:?}");
}
