//! `quiver mock-upstream`: the demo upstream. Serves one server of a
//! catalogue file (or of the built-in demo catalogue) as a real MCP server,
//! over stdio or Streamable HTTP; a call answers with deterministic JSON
//! naming the server, the tool and the arguments. `quiver dev` without
//! upstreams runs one per demo server. Quiver's own tests use the test kit's
//! mock instead (`quiver-test-kit mock-upstream`), which adds tools that
//! crash, hang or answer at length on purpose.

use anyhow::Context as _;
use clap::Args;
use quiver_demo::{DemoServer, ServeArgs};

use super::logging;

/// Arguments of `quiver mock-upstream`.
#[derive(Args, Debug)]
pub struct MockUpstreamArgs {
    #[command(flatten)]
    serve: ServeArgs,
}

/// Runs the demo upstream until its client goes away.
pub async fn run(args: MockUpstreamArgs) -> anyhow::Result<()> {
    let _telemetry = logging::init("mock-upstream", &Default::default(), "warn")?;
    let args = args.serve;
    let demo = DemoServer::new(&args.load()?, args.page_size);
    match args.listen {
        None => quiver_demo::serve_stdio(demo).await?,
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("binding {addr}"))?;
            quiver_demo::serve_http("mock-upstream", listener, quiver_demo::http_router(demo))
                .await?;
        }
    }
    Ok(())
}
