//! Every code block of README.md and deploy/README.md, run as a newcomer runs
//! it: shell blocks in one terminal session against a real `quiver dev` (or
//! the real cluster and fleet the block starts), Python blocks with the `mcp`
//! package, the code-mode script through `execute`, client configurations
//! against the flags and endpoints they name, and sample output against what
//! the command really prints. Each block is listed here with what it must do;
//! a block added, removed or reordered in either file fails the test until it
//! is listed, so nothing in them goes unrun.
//!
//! The blocks use the documented default ports (8080, 7400, 7401-7403, 2379,
//! 9464, 7443…), so these tests run alone (`.config/nextest.toml`).

use crate::support;

use serde_json::{Value, json};
use support::{
    doc_session::{CommandRun, DocSession},
    markdown_blocks::{CodeBlock, code_blocks, matches_sample},
};

/// What a block must do.
enum Check {
    /// Shell commands, every one exiting 0 unless listed in `may_fail`
    /// (a part of the command, and what its output must say instead).
    /// `fresh` stops the servers earlier blocks started first.
    Shell {
        fresh: bool,
        expect: &'static [&'static str],
        absent: &'static [&'static str],
        may_fail: &'static [(&'static str, &'static str)],
    },
    /// A Python program that must exit 0 and print `expect`, not `absent`.
    Python {
        expect: &'static [&'static str],
        absent: &'static [&'static str],
    },
    /// A sample start-up line: the session starts `command` (after stopping
    /// the servers before it) and its real start-up line must match.
    StartupLine { command: &'static str },
    /// Sample output of the block before: every line must match a line it
    /// printed.
    OutputOfPrevious,
    /// An `mcpServers` client configuration: a `url` must serve MCP on the
    /// running `quiver dev`; a `command` must be `quiver dev` with flags it
    /// accepts.
    ClientConfig,
    /// A code-mode script, run by `execute` on the running `quiver dev`.
    Script { expect: &'static [&'static str] },
    /// Run elsewhere, as said.
    Elsewhere(&'static str),
}

/// A listed block: how its text starts, and its check.
struct Listed {
    starts: &'static str,
    check: Check,
}

const fn shell(expect: &'static [&'static str]) -> Check {
    Check::Shell {
        fresh: false,
        expect,
        absent: &[],
        may_fail: &[],
    }
}

/// A shell block that starts its own `quiver dev`.
const fn fresh_shell(expect: &'static [&'static str]) -> Check {
    Check::Shell {
        fresh: true,
        expect,
        absent: &[],
        may_fail: &[],
    }
}

const README: &[Listed] = &[
    Listed {
        starts: "scripts/dev.sh",
        check: Check::Elsewhere(
            "scripts/test.sh is what CI runs (.ci/run); scripts/dev.sh runs the install \
             scripts scripts/test.sh runs too, builds the release binary this test stands \
             in for, and starts the `quiver dev` the next block starts",
        ),
    },
    Listed {
        starts: "quiver dev: serving 16 tools",
        check: Check::StartupLine {
            command: "target/release/quiver dev",
        },
    },
    Listed {
        starts: "target/release/quiver ctl cluster status",
        check: shell(&["acme", "weather", "canonical"]),
    },
    Listed {
        starts: "npx -y @modelcontextprotocol/inspector",
        check: shell(&["search_tools", "get_forecast", "Lisbon"]),
    },
    Listed {
        starts: "import asyncio\nfrom mcp import ClientSession",
        check: Check::Python {
            expect: &["weather__get_forecast", "github__"],
            absent: &[],
        },
    },
    Listed {
        starts: "{\n  \"mcpServers\": {\n    \"quiver\": { \"url\"",
        check: Check::ClientConfig,
    },
    Listed {
        starts: "{\n  \"mcpServers\": {\n    \"quiver\": {\n      \"command\"",
        check: Check::ClientConfig,
    },
    Listed {
        starts: "target/release/quiver dev --auth required\n",
        check: fresh_shell(&["401", "resource_metadata"]),
    },
    Listed {
        starts: "import asyncio, os",
        check: Check::Python {
            expect: &["weather__get_forecast"],
            absent: &["github__", "notes__"],
        },
    },
    Listed {
        starts: "target/release/quiver ctl tenant update a --rate-limit",
        check: shell(&["budget"]),
    },
    Listed {
        starts: "target/release/quiver dev --config deploy/quiver.toml",
        check: fresh_shell(&["demo-weather"]),
    },
    Listed {
        starts: "scripts/cluster.sh up",
        check: Check::Shell {
            fresh: true,
            expect: &["http://127.0.0.1:8081/mcp", "ok"],
            // READY `-` would say a node never reported its readiness.
            absent: &["  -\n"],
            may_fail: &[],
        },
    },
    Listed {
        starts: "target/release/quiver dev --auth required --grpc-listen",
        check: fresh_shell(&["get_forecast"]),
    },
    Listed {
        starts: "target/release/quiver dev\ncurl -s http://127.0.0.1:8080/readyz",
        check: fresh_shell(&["quiver_manifest_version"]),
    },
    Listed {
        starts: "target/release/quiver dev --auth required --admin-listen",
        check: fresh_shell(&["quiver_manifest_version"]),
    },
    Listed {
        starts: "OTEL_EXPORTER_OTLP_ENDPOINT",
        check: fresh_shell(&["(code mode)"]),
    },
    Listed {
        starts: "// the body of an async function",
        check: Check::Script {
            expect: &["Lisbon", "two calls done"],
        },
    },
];

const DEPLOY_README: &[Listed] = &[
    Listed {
        starts: "quiver control-plane --node-id 1",
        check: shell(&["node 1 serving", "node 3 serving"]),
    },
    Listed {
        starts: "export QUIVER_CTL_ENDPOINTS",
        check: shell(&["leader 1"]),
    },
    Listed {
        starts: "leader 1  term 1",
        check: Check::OutputOfPrevious,
    },
    Listed {
        starts: "# A stdio MCP server",
        check: Check::Shell {
            fresh: false,
            expect: &["acme", "github"],
            absent: &[],
            // mcp.example.com is a placeholder: nothing answers there, so no
            // schema of its tools ever changed and there is nothing to approve.
            may_fail: &[("upstream approve github", "has no quarantined changes")],
        },
    },
    Listed {
        starts: "quiver ctl snapshot save",
        check: shell(&["saved .quiver/backup.qbackup", "a valid backup", "tenants"]),
    },
    Listed {
        starts: "quiver control-plane --node-id 1 --listen 127.0.0.1:7411",
        check: shell(&["node 1 serving", "\"acme\""]),
    },
    Listed {
        starts: "etcd --data-dir .quiver/etcd &",
        check: shell(&["quiver executor"]),
    },
    Listed {
        starts: "quiver edge --listen 127.0.0.1:8080",
        check: Check::Shell {
            fresh: false,
            expect: &["edge@127.0.0.1:8080", "executor@127.0.0.1:7070", "ok"],
            absent: &["  -\n"],
            may_fail: &[],
        },
    },
    Listed {
        starts: "scripts/cluster.sh up",
        check: fresh_shell(&["http://127.0.0.1:8082/mcp", "executor"]),
    },
    Listed {
        starts: "docker build -f deploy/Dockerfile",
        check: Check::Elsewhere(
            "needs Docker Hub and quay.io, which no machine here reaches; the same Dockerfile and compose file run through scripts/compose.sh in tests/compose_fleet.rs",
        ),
    },
    Listed {
        starts: "scripts/compose.sh up",
        check: Check::Elsewhere(
            "needs a container engine and takes minutes: tests/compose_fleet.rs runs up and down, and scripts/test.sh runs it when an engine answers",
        ),
    },
    Listed {
        starts: "podman exec quiver_cp1_1",
        check: Check::Elsewhere(
            "tests/compose_fleet.rs runs `cluster verify` in cp1's container, as here",
        ),
    },
];

fn read(file: &str) -> Vec<CodeBlock> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let text = std::fs::read_to_string(&path).expect("read the documentation");
    code_blocks(&text)
}

fn describe(runs: &[CommandRun]) -> String {
    runs.iter()
        .map(|r| format!("$ {}\n[exit {:?}]\n{}", r.command, r.status, r.output))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs every block of `file` in one session, checking each against `listed`.
async fn run_file(file: &str, listed: &[Listed]) {
    let blocks = read(file);
    let found: Vec<String> = blocks
        .iter()
        .map(|b| format!("{file}:{} ```{}", b.line, b.lang))
        .collect();
    assert_eq!(
        blocks.len(),
        listed.len(),
        "{file} has {} code blocks, this test lists {}: list each with its check\n{found:#?}",
        blocks.len(),
        listed.len()
    );
    let mut session = DocSession::new();
    let mut previous_output = String::new();
    for (block, listed) in blocks.iter().zip(listed) {
        let at = format!("{file}:{}", block.line);
        assert!(
            block.text.starts_with(listed.starts),
            "{at}: the block starts {:?}, expected {:?}: list it in order",
            block.text.lines().next().unwrap_or(""),
            listed.starts
        );
        match &listed.check {
            Check::Shell {
                fresh,
                expect,
                absent,
                may_fail,
            } => {
                if *fresh {
                    session.stop_servers();
                }
                let runs = session.run_shell(&block.text);
                let all = describe(&runs);
                for run in &runs {
                    let allowed = may_fail.iter().find(|(c, _)| run.command.contains(c));
                    match (run.status, allowed) {
                        (None | Some(0), _) => {}
                        (Some(_), Some((_, says))) => assert!(
                            run.output.contains(says),
                            "{at}: `{}` failed without saying {says:?}:\n{all}",
                            run.command
                        ),
                        (Some(code), None) => panic!(
                            "{at}: `{}` exited {code}:\n{all}\n\nservers:\n{}",
                            run.command,
                            session.server_logs()
                        ),
                    }
                }
                for want in *expect {
                    assert!(all.contains(want), "{at}: no {want:?} in\n{all}");
                }
                for unwanted in *absent {
                    assert!(!all.contains(unwanted), "{at}: {unwanted:?} in\n{all}");
                }
                previous_output = runs
                    .iter()
                    .map(|r| r.output.as_str())
                    .collect::<Vec<_>>()
                    .join("\n");
            }
            Check::Python { expect, absent } => {
                let run = session.run_python(&block.text);
                assert_eq!(run.status, Some(0), "{at}: {}", run.output);
                for want in *expect {
                    assert!(
                        run.output.contains(want),
                        "{at}: no {want:?} in\n{}",
                        run.output
                    );
                }
                for unwanted in *absent {
                    assert!(
                        !run.output.contains(unwanted),
                        "{at}: {unwanted:?} in\n{}",
                        run.output
                    );
                }
                previous_output = run.output;
            }
            Check::StartupLine { command } => {
                session.stop_servers();
                let line = session.start_server(command);
                let sample = block.text.trim();
                assert!(
                    matches_sample(sample, &line),
                    "{at}: the sample start-up line\n{sample}\nis not what `{command}` prints:\n{line}"
                );
            }
            Check::OutputOfPrevious => {
                for sample in block.text.lines().filter(|l| !l.trim().is_empty()) {
                    assert!(
                        previous_output.lines().any(|l| matches_sample(sample, l)),
                        "{at}: no line like\n{sample}\nin what the block before printed:\n{previous_output}"
                    );
                }
            }
            Check::ClientConfig => check_client_config(&at, &block.text).await,
            Check::Script { expect } => {
                let client = support::connect("http://127.0.0.1:8080/code/mcp").await;
                let result = support::call(&client, "execute", json!({ "code": block.text })).await;
                let text = support::text(&result);
                assert_ne!(result.is_error, Some(true), "{at}: {text}");
                for want in *expect {
                    assert!(text.contains(want), "{at}: no {want:?} in\n{text}");
                }
            }
            Check::Elsewhere(why) => assert!(!why.is_empty()),
        }
    }
}

/// A URL entry serves MCP on the running `quiver dev`; a command entry runs
/// `quiver dev` with flags its `--help` lists.
async fn check_client_config(at: &str, text: &str) {
    let config: Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{at}: not JSON: {e}"));
    let servers = config["mcpServers"]
        .as_object()
        .unwrap_or_else(|| panic!("{at}: no mcpServers object"));
    for (name, server) in servers {
        if let Some(url) = server["url"].as_str() {
            let client = support::connect(url).await;
            let tools = client.list_all_tools().await.expect("tools/list");
            assert!(!tools.is_empty(), "{at}: {name} lists no tools");
            continue;
        }
        let command = server["command"]
            .as_str()
            .unwrap_or_else(|| panic!("{at}: {name} has neither url nor command"));
        assert!(command.ends_with("/quiver"), "{at}: {command}");
        let args: Vec<&str> = server["args"]
            .as_array()
            .expect("args")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(args.first(), Some(&"dev"), "{at}");
        let help = std::process::Command::new(support::quiver_bin())
            .args(["dev", "--help"])
            .output()
            .expect("quiver dev --help");
        let help = String::from_utf8_lossy(&help.stdout);
        for flag in args.iter().filter(|a| a.starts_with("--")) {
            assert!(
                help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n")),
                "{at}: `quiver dev` has no {flag}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_readme_block_runs_as_written() {
    run_file("README.md", README).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_deploy_readme_block_runs_as_written() {
    run_file("deploy/README.md", DEPLOY_README).await;
}
