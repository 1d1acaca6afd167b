//! deploy/compose.yaml on a real container engine, through
//! `scripts/compose.sh` as an operator runs it: the fleet comes up (etcd,
//! three control-plane nodes, two executors, two edges, the demo upstreams),
//! an MCP client runs a script through each edge, an executor and an edge
//! killed leave the others serving, restarted they rejoin (`cluster verify`
//! all ok), and `down` leaves no container, network or volume behind.
//!
//! Ignored in plain `cargo test`: it needs podman or Docker and takes a few
//! minutes. `scripts/test.sh` runs it when a container engine is there and
//! says when it is skipped.

use crate::support;

use std::{
    process::Command,
    time::{Duration, Instant},
};

use serde_json::json;
use support::{call, connect, output_of, text};

const PROJECT: &str = "quiver";

/// The engine `scripts/compose.sh` picks: `$QUIVER_ENGINE`, else docker when
/// it answers, else podman.
fn engine() -> String {
    if let Ok(engine) = std::env::var("QUIVER_ENGINE") {
        return engine;
    }
    let docker = Command::new("docker").arg("info").output();
    if docker.is_ok_and(|out| out.status.success()) {
        "docker".into()
    } else {
        "podman".into()
    }
}

/// `scripts/compose.sh VERB` with this build's binary in the image.
fn compose(verb: &str) -> String {
    let (ok, all) = output_of(
        Command::new("bash")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/compose.sh"))
            .arg(verb)
            .env("QUIVER_BIN", support::quiver_bin()),
    );
    assert!(ok, "compose.sh {verb} failed:\n{all}");
    all
}

/// Runs the engine with `args`: whether it succeeded, and what it said.
fn run(engine: &str, args: &[&str]) -> (bool, String) {
    output_of(Command::new(engine).args(args))
}

/// The container of a service of the fleet.
fn container(engine: &str, service: &str) -> String {
    let (ok, out) = run(
        engine,
        &[
            "ps",
            "-a",
            "-q",
            "--filter",
            &format!("label=com.docker.compose.project={PROJECT}"),
            "--filter",
            &format!("label=com.docker.compose.service={service}"),
        ],
    );
    assert!(ok, "{out}");
    out.lines()
        .next()
        .unwrap_or_else(|| panic!("no container for {service}"))
        .to_string()
}

/// Whether a service's `/readyz` answers 200 (asked inside its container).
fn ready(engine: &str, service: &str) -> bool {
    run(
        engine,
        &["exec", &container(engine, service), "quiver", "probe"],
    )
    .0
}

/// Runs `down` however the test ends.
struct Down;

impl Drop for Down {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/compose.sh"))
            .arg("down")
            .output();
    }
}

/// A script through an edge's code mode: two forecasts in parallel.
async fn script_through(edge: &str) -> Result<String, String> {
    let client = connect(&format!("{edge}/code/mcp")).await;
    let result = call(
        &client,
        "execute",
        json!({"code": "const [a, b] = await Promise.all([tools.weather.get_forecast({city: 'Rome'}), tools.weather.get_forecast({city: 'Oslo'})]); return JSON.stringify([a, b]);"}),
    )
    .await;
    let _ = client.cancel().await;
    match result.is_error {
        Some(false) if text(&result).contains("Rome") && text(&result).contains("Oslo") => {
            Ok(text(&result))
        }
        _ => Err(text(&result)),
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs a container engine (scripts/compose.sh install); scripts/test.sh runs it when one is there"]
async fn compose_fleet_serves_survives_a_killed_executor_and_edge_and_comes_down_clean() {
    let engine = engine();
    let _down = Down;
    let started = Instant::now();
    let up = compose("up");
    eprintln!("--- up in {:.0?}: {up}", started.elapsed());
    let edges = ["http://127.0.0.1:8081", "http://127.0.0.1:8082"];
    for edge in edges {
        assert!(up.contains(&format!("{edge}/mcp")), "{up}");
    }

    eprintln!("--- the image: `--help` by default, as an unprivileged user");
    let image = std::env::var("QUIVER_IMAGE").unwrap_or_else(|_| "quiver:0.1.0".into());
    let (ok, help) = run(
        &engine,
        &["run", "--rm", "--no-healthcheck", &image, "--help"],
    );
    assert!(ok && help.contains("Usage: quiver <COMMAND>"), "{help}");
    let (ok, user) = run(
        &engine,
        &[
            "run",
            "--rm",
            "--no-healthcheck",
            "--entrypoint",
            "id",
            &image,
            "-u",
        ],
    );
    assert!(
        ok && user.lines().any(|line| line.trim() == "10001"),
        "the image runs as uid {user}"
    );
    if engine == "podman" {
        // Podman without systemd never runs it by itself: run it once.
        let (ok, said) = run(
            &engine,
            &["healthcheck", "run", &container(&engine, "edge1")],
        );
        assert!(ok, "the image's healthcheck fails on a ready edge: {said}");
    }

    eprintln!("--- a script runs through each edge");
    for edge in edges {
        let answer = script_through(edge).await;
        assert!(answer.is_ok(), "{edge}: {answer:?}");
    }

    eprintln!("--- executor1 and edge1 killed: edge2 and executor2 serve");
    for service in ["executor1", "edge1"] {
        let (ok, out) = run(&engine, &["kill", &container(&engine, service)]);
        assert!(ok, "kill {service}: {out}");
    }
    for attempt in 0..5 {
        let answer = script_through(edges[1]).await;
        assert!(
            answer.is_ok(),
            "script {attempt} through edge2 with executor1 and edge1 killed: {answer:?}"
        );
    }

    eprintln!("--- restarted, they rejoin: cluster verify says ok for all four");
    for service in ["executor1", "edge1"] {
        let (ok, out) = run(&engine, &["start", &container(&engine, service)]);
        assert!(ok, "start {service}: {out}");
    }
    let cp1 = container(&engine, "cp1");
    let deadline = Instant::now() + Duration::from_secs(120);
    let verify = loop {
        let (ok, out) = run(
            &engine,
            &[
                "exec",
                &cp1,
                "quiver",
                "ctl",
                "--endpoints",
                "cp1:7401",
                "cluster",
                "verify",
            ],
        );
        let all_ok = ["edge1", "edge2", "executor1", "executor2"]
            .iter()
            .all(|node| {
                out.lines().any(|line| {
                    let words: Vec<&str> = line.split_whitespace().collect();
                    words.first() == Some(node)
                        && words.contains(&"ok")
                        && words.last() == Some(&"yes")
                })
            });
        if ok && all_ok && ready(&engine, "edge1") && ready(&engine, "executor1") {
            break out;
        }
        assert!(
            Instant::now() < deadline,
            "the restarted nodes did not rejoin within 120 s:\n{out}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(!verify.contains("mismatch"), "{verify}");
    let answer = script_through(edges[0]).await;
    assert!(answer.is_ok(), "edge1 after its restart: {answer:?}");

    eprintln!("--- down leaves no container, network or volume of the fleet");
    let started = Instant::now();
    compose("down");
    eprintln!("--- down in {:.0?}", started.elapsed());
    let label = format!("label=com.docker.compose.project={PROJECT}");
    for kind in [&["ps", "-a"][..], &["network", "ls"], &["volume", "ls"]] {
        let mut args = kind.to_vec();
        args.extend(["-q", "--filter", &label]);
        let (ok, out) = run(&engine, &args);
        assert!(ok && out.trim().is_empty(), "{kind:?} left: {out}");
    }
}
