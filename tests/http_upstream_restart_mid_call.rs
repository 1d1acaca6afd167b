//! A Streamable HTTP upstream whose process dies during a call and comes back
//! on the same address (the test holds the listening socket and hands it to
//! each process, so the address never changes hands). The interrupted call
//! fails (not a success, not a hang) and is not sent again; the calls after it
//! reach the new process.

use crate::support;

use std::{
    net::TcpListener,
    os::fd::{AsFd, AsRawFd},
    process::{Child, Command},
    time::{Duration, Instant},
};

use rmcp::{
    RoleClient, ServiceExt,
    model::{CallToolRequest, CallToolRequestParams, ClientRequest, ServerResult},
    service::{NotificationContext, PeerRequestOptions},
    transport::StreamableHttpClientTransport,
};
use serde_json::{Value, json};
use support::{call, spawn_with_banner, start_with_config, test_kit_bin, text};

/// A mock upstream process serving on the test's socket (killed on drop).
struct UpstreamProcess(Child);

impl UpstreamProcess {
    /// Starts `quiver-test-kit mock-upstream --listen-fd` on `socket`: only this child
    /// inherits it (the flag is cleared again once it is spawned).
    fn serve_on(socket: &TcpListener) -> UpstreamProcess {
        let fd = socket.as_fd();
        let inheritable = |yes: bool| {
            let flags = if yes {
                nix::fcntl::FdFlag::empty()
            } else {
                nix::fcntl::FdFlag::FD_CLOEXEC
            };
            nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETFD(flags))
                .expect("set the socket's close-on-exec flag");
        };
        let mut command = Command::new(test_kit_bin());
        command.args(["mock-upstream", "--demo", "--server", "weather"]);
        command.args(["--listen-fd", &fd.as_raw_fd().to_string()]);
        inheritable(true);
        let (child, banner) = spawn_with_banner(&mut command, "mock-upstream");
        inheritable(false);
        let addr = socket.local_addr().expect("the socket's address");
        assert!(
            banner.contains(&format!("http://{addr}/mcp")),
            "serves on the held socket: {banner}"
        );
        UpstreamProcess(child)
    }

    /// `kill -9`, and reaped.
    fn kill(mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for UpstreamProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Reports that progress arrived (the upstream has started the call).
#[derive(Clone)]
struct ProgressWatcher(tokio::sync::mpsc::UnboundedSender<()>);

impl rmcp::ClientHandler for ProgressWatcher {
    async fn on_progress(
        &self,
        _params: rmcp::model::ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.0.send(());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn http_upstream_restarted_mid_call_fails_the_call_without_resending_it_and_serves_later_calls()
 {
    let socket = TcpListener::bind("127.0.0.1:0").expect("a loopback socket");
    let first = UpstreamProcess::serve_on(&socket);
    // A call timeout far beyond the test's deadlines: the interrupted call
    // must end because the upstream went away, not because it took too long.
    let config = format!(
        "[[upstream]]\nid = \"h\"\ntransport = \"http\"\nurl = \"http://{}/mcp\"\ncall_timeout_ms = 600000\n",
        socket.local_addr().expect("address")
    );
    let (dev, _dir) = start_with_config(&config, &["--mode", "passthrough"]);
    quiver_upstream::install_crypto_provider();
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel();
    let client = ProgressWatcher(started_tx)
        .serve(StreamableHttpClientTransport::from_uri(dev.url.clone()))
        .await
        .expect("MCP client connects");

    eprintln!("--- a long call is running on the upstream");
    let mut params = CallToolRequestParams::new("h__quiver_test_sleep");
    params.arguments = json!({"ms": 300000}).as_object().cloned();
    let interrupted = client
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("send the long call");
    tokio::time::timeout(Duration::from_secs(30), started.recv())
        .await
        .expect("the upstream reported the call started")
        .expect("progress channel open");

    eprintln!("--- its process is killed; a new one serves the same address");
    first.kill();
    let _second = UpstreamProcess::serve_on(&socket);

    eprintln!("--- calls are made until one succeeds; the interrupted call ends meanwhile");
    let later_calls = async {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let result = call(&client, "h__get_forecast", json!({"city": "Oslo"})).await;
            if result.is_error != Some(true) {
                return result;
            }
            assert!(
                Instant::now() < deadline,
                "no call succeeded within a minute of the restart: {}",
                text(&result)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let interrupted =
        async { tokio::time::timeout(Duration::from_secs(60), interrupted.await_response()).await };
    let (answered, interrupted) = tokio::join!(later_calls, interrupted);
    let answer: Value = serde_json::from_str(&text(&answered)).expect("the mock's JSON echo");
    assert_eq!(
        answer["arguments"]["city"], "Oslo",
        "the new process answered: {answer}"
    );
    match interrupted {
        Err(_) => panic!("the interrupted call was still waiting a minute after the restart"),
        Ok(Ok(ServerResult::CallToolResult(result))) => assert_eq!(
            result.is_error,
            Some(true),
            "the interrupted call cannot have succeeded: {}",
            text(&result)
        ),
        Ok(other) => panic!("the interrupted call ended without a tool result: {other:?}"),
    }

    eprintln!("--- the new process never received the interrupted call");
    let stats = call(&client, "h__quiver_test_stats", json!({})).await;
    let stats: Value = serde_json::from_str(&text(&stats)).expect("the mock's stats");
    assert_eq!(
        stats["calls"].get("quiver_test_sleep"),
        None,
        "calls are never sent twice: {stats}"
    );
    assert!(
        stats["calls"]["get_forecast"].as_u64() >= Some(1),
        "{stats}"
    );
    client.cancel().await.expect("close");
}
