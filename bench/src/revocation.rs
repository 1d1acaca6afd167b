//! `quiver bench revocation`: how long a revoked API key keeps working. It
//! starts a real `quiver dev --auth required`, then, for each round, issues a
//! key, checks the edge accepts it, revokes it through the operator API and
//! sends requests with it until the edge refuses one; the time from the
//! revocation's acknowledgement to the first refusal is the figure.

use std::time::{Duration, Instant};

use anyhow::bail;
use clap::Args;
use quiver_control_plane::{
    admin::{AdminAnswer, AdminRequest, KeyRequester},
    client::AdminClient,
    tenant::TenantPatch,
};

use crate::{
    execute_vs_call::Dev,
    executor::{ms, percentile},
};

/// Arguments of `quiver bench revocation`.
#[derive(Args, Debug)]
pub struct RevocationArgs {
    /// Keys issued and revoked.
    #[arg(long, default_value_t = 50)]
    rounds: usize,
}

/// Runs the benchmark and prints its table.
pub async fn run(args: RevocationArgs) -> anyhow::Result<()> {
    let dev = Dev::start_with(&["--auth", "required"]).await?;
    let control_plane = dev.control_plane()?;
    let mut admin = AdminClient::new(vec![control_plane], None);
    admin
        .call(&AdminRequest::TenantCreate {
            id: "bench".into(),
            patch: TenantPatch::default(),
        })
        .await?;
    quiver_upstream::install_crypto_provider();
    let http = reqwest::Client::new();
    let url = format!("{}/mcp", dev.base);
    let status = |key: String| {
        let http = http.clone();
        let url = url.clone();
        async move {
            http.post(&url)
                .header("authorization", format!("Bearer {key}"))
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
                .send()
                .await
                .map(|r| r.status().as_u16())
        }
    };
    let mut latencies = Vec::with_capacity(args.rounds);
    let mut requests = 0usize;
    for _ in 0..args.rounds {
        let AdminAnswer::KeyIssue(issued) = admin
            .call(&AdminRequest::KeyIssue {
                tenant: "bench".into(),
                requester: KeyRequester::Operator,
            })
            .await?
        else {
            bail!("unexpected answer to key issue");
        };
        // Wait until the new key works (it travels the same way).
        let deadline = Instant::now() + Duration::from_secs(10);
        while status(issued.key.clone()).await? == 401 {
            if Instant::now() > deadline {
                bail!("a new key was not accepted within 10 s");
            }
        }
        admin
            .call(&AdminRequest::KeyRevoke {
                requester: KeyRequester::Operator,
                tenant: "bench".into(),
                key_id: issued.key_id.clone(),
            })
            .await?;
        let acknowledged = Instant::now();
        loop {
            requests += 1;
            if status(issued.key.clone()).await? == 401 {
                break;
            }
            if acknowledged.elapsed() > Duration::from_secs(10) {
                bail!("a revoked key still worked 10 s after the acknowledged revocation");
            }
        }
        latencies.push(acknowledged.elapsed());
    }
    latencies.sort();
    println!("## Key revocation: acknowledged write to the edge's first refusal");
    println!();
    println!(
        "{} keys issued and revoked through the operator API against `quiver dev --auth required` (one edge, one control-plane node, loopback); {requests} requests sent after the acknowledgements.",
        args.rounds
    );
    println!();
    println!("| p50 | p99 | max |");
    println!("|---|---|---|");
    println!(
        "| {} ms | {} ms | {} ms |",
        ms(percentile(&latencies, 0.50)),
        ms(percentile(&latencies, 0.99)),
        ms(latencies.last().copied().unwrap_or_default()),
    );
    Ok(())
}
