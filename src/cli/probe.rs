//! `quiver probe`: asks a role's admin listener whether it is ready, for
//! container healthchecks (the image carries no curl or wget).

use std::{net::SocketAddr, time::Duration};

use anyhow::{Context as _, bail};

/// Arguments of `quiver probe`.
#[derive(clap::Args)]
pub struct ProbeArgs {
    /// The admin listener to ask (the role's `--admin-listen`); an
    /// unspecified address (`0.0.0.0`, `::`) is asked on loopback.
    #[arg(long, env = "QUIVER_ADMIN_LISTEN")]
    admin: SocketAddr,
    /// The path to ask: `/readyz` (ready for traffic) or `/healthz` (alive).
    #[arg(long, default_value = "/readyz")]
    path: String,
    /// Seconds to wait for the answer.
    #[arg(long, default_value_t = 3)]
    timeout: u64,
}

/// Exits successfully when the listener answers 2xx; otherwise says what it
/// answered (its body names the check that fails) and fails.
pub async fn run(args: ProbeArgs) -> anyhow::Result<()> {
    let mut admin = args.admin;
    if admin.ip().is_unspecified() {
        admin.set_ip(match admin {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    let url = format!("http://{admin}{}", args.path);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(args.timeout))
        .build()
        .context("building the HTTP client")?;
    let response = client
        .get(&url)
        .send()
        .await
        .with_context(|| format!("{url} did not answer"))?;
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    if !status.is_success() {
        bail!("{url} answered {status}: {}", body.trim());
    }
    println!("{}", body.trim());
    Ok(())
}
