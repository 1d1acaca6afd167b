//! Quiver's test kit, the `quiver-test-kit` binary: what Quiver's own tests
//! and scripts run besides `quiver`, kept out of the shipped binary.
//!
//! - `mock-upstream`: the demo upstream with test hooks (tools that crash,
//!   hang, fail with secrets in their message, add a tool, meet other calls,
//!   answer at length or report the credentials they saw; a resource and a
//!   prompt), over stdio, HTTP or an inherited listening socket.
//! - `conformance-client URL`: the client the official MCP conformance suite
//!   drives (scripts/conformance.sh), Quiver's own upstream client.

mod conformance_client;
mod mock_upstream;

use clap::{Parser, Subcommand};

/// Quiver's test kit: a mock upstream with test hooks and the conformance client.
#[derive(Parser)]
#[command(name = "quiver-test-kit", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve one server of a catalog file (or of the demo catalog) with the test hooks.
    MockUpstream(mock_upstream::MockUpstreamArgs),
    /// The client the MCP conformance suite drives (see scripts/conformance.sh).
    ConformanceClient(conformance_client::ConformanceClientArgs),
}

/// Runs the command line's subcommand.
pub fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    if let Command::ConformanceClient(_) = &cli.command
        && let Some((name, secret)) = conformance_client::context_secret()
    {
        // SAFETY: no other thread exists yet, so nothing reads the
        // environment concurrently.
        unsafe { std::env::set_var(name, secret) };
    }
    quiver_upstream::install_crypto_provider();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::MockUpstream(args) => mock_upstream::run(args).await,
            Command::ConformanceClient(args) => conformance_client::run(args).await,
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
