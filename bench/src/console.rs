//! `quiver bench console`: what the web console costs to open and use as a
//! tenant's catalogue grows. One `quiver dev` per size (the demo catalogue,
//! then the public catalogue's tools copied as needed); every request goes
//! over HTTP on loopback as a browser's would, one at a time. The first
//! screen adds up, one after another, what a browser needs before the tool
//! list shows (the page and its two assets, the session, the first page of
//! tools and the server list): an upper bound, since a browser fetches some
//! of them at once.

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use clap::Args;
use reqwest::header;

use crate::{
    execute_vs_call::{Dev, wait_for_tools},
    executor::{ms, percentile},
};

/// Arguments of `quiver bench console`.
#[derive(Args, Debug)]
pub struct ConsoleBenchArgs {
    /// Visible tools of each run, comma-separated: the demo catalogue's 16,
    /// then the real catalogue's tools copied as needed (see `--catalog`).
    #[arg(long, value_delimiter = ',', default_value = "16,527,2000,10000")]
    tools: Vec<usize>,
    /// The real catalogue the larger sizes are made of.
    #[arg(long, default_value = crate::catalog::DEFAULT_SOURCE)]
    catalog: PathBuf,
    /// Measurements of each request.
    #[arg(long, default_value_t = 50)]
    iterations: usize,
}

/// Searches a person might type, taken in turn.
const QUERIES: [&str; 4] = [
    "weather forecast for a city",
    "create a github issue",
    "search wikipedia articles",
    "convert time between timezones",
];

/// What one size measured, each sorted.
struct Measured {
    tools: usize,
    assets: Vec<Duration>,
    sign_in: Vec<Duration>,
    first_page: Vec<Duration>,
    deep_page: Vec<Duration>,
    search: Vec<Duration>,
    declaration: Vec<Duration>,
    first_screen: Vec<Duration>,
}

/// Times `request` (which must succeed).
async fn timed(request: reqwest::RequestBuilder) -> anyhow::Result<(Duration, String)> {
    let started = Instant::now();
    let response = request.send().await?;
    let status = response.status();
    let body = response.text().await?;
    let took = started.elapsed();
    if !status.is_success() {
        bail!("{status}: {body}");
    }
    Ok((took, body))
}

/// Iterations that sign in: below the console's sign-ins per credential a
/// minute (`PER_CREDENTIAL_PER_MINUTE`, 10), so none is refused.
const SIGN_INS: usize = 8;

/// Signs in anonymously (the edge's auth is `none`) and reads the session
/// back; the session cookie.
async fn sign_in(http: &reqwest::Client, api: &str) -> anyhow::Result<String> {
    let response = http
        .post(format!("{api}/session"))
        .json(&serde_json::json!({ "credential": "" }))
        .send()
        .await?;
    let status = response.status();
    let cookie = response
        .headers()
        .get(header::SET_COOKIE)
        .and_then(|c| c.to_str().ok())
        .and_then(|c| c.split(';').next())
        .map(str::to_string);
    let body = response.text().await?;
    let Some(cookie) = cookie.filter(|_| status.is_success()) else {
        bail!("signing in: {status}: {body}");
    };
    timed(
        http.get(format!("{api}/session"))
            .header(header::COOKIE, &cookie),
    )
    .await?;
    Ok(cookie)
}

async fn measure(dev: &Dev, tools: usize, iterations: usize) -> anyhow::Result<Measured> {
    let http = reqwest::Client::new();
    let base = &dev.base;
    let api = format!("{base}/console/api");
    let mut m = Measured {
        tools,
        assets: Vec::new(),
        sign_in: Vec::new(),
        first_page: Vec::new(),
        deep_page: Vec::new(),
        search: Vec::new(),
        declaration: Vec::new(),
        first_screen: Vec::new(),
    };
    let mut cookie = String::new();
    for i in 0..iterations {
        let mut assets = Duration::ZERO;
        for path in ["/console/", "/console/console.js", "/console/console.css"] {
            assets += timed(http.get(format!("{base}{path}"))).await?.0;
        }
        // The console takes a few sign-ins a minute per credential: the
        // first iterations sign in, the others keep the last session.
        let sign_in = if i < SIGN_INS {
            let started = Instant::now();
            cookie = sign_in(&http, &api).await?;
            Some(started.elapsed())
        } else {
            None
        };
        let get = |path: String| {
            http.get(format!("{api}{path}"))
                .header(header::COOKIE, &cookie)
        };
        let (first, _) = timed(get("/tools?limit=50".into())).await?;
        let (servers, _) = timed(get("/servers".into())).await?;
        let (deep, _) = timed(get(format!("/tools?offset={}&limit=50", tools / 2))).await?;
        let query = QUERIES[i % QUERIES.len()];
        let (search, body) = timed(get(format!("/tools?q={}", query.replace(' ', "+")))).await?;
        if !body.contains("\"tools\"") {
            bail!("a search answered {body}");
        }
        let (declaration, _) = timed(get("/tool?name=weather__get_forecast".into())).await?;
        m.assets.push(assets);
        m.first_page.push(first);
        m.deep_page.push(deep);
        m.search.push(search);
        m.declaration.push(declaration);
        if let Some(sign_in) = sign_in {
            m.sign_in.push(sign_in);
            m.first_screen.push(assets + sign_in + first + servers);
        }
    }
    for samples in [
        &mut m.assets,
        &mut m.sign_in,
        &mut m.first_page,
        &mut m.deep_page,
        &mut m.search,
        &mut m.declaration,
        &mut m.first_screen,
    ] {
        samples.sort();
    }
    Ok(m)
}

/// Runs every size and prints the table.
pub async fn run(args: ConsoleBenchArgs) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: this is a debug build; build with `cargo build --release` and run `target/release/quiver bench console` for numbers"
        );
    }
    quiver_upstream::install_crypto_provider();
    let dir = tempfile::tempdir().context("a directory for the catalogues")?;
    let mut results = Vec::new();
    for &tools in &args.tools {
        let catalog = crate::catalog::scaled_catalog(&args.catalog, tools, dir.path())?;
        let mut extra: Vec<String> = Vec::new();
        if let Some(catalog) = &catalog {
            extra.push("--catalog".into());
            extra.push(catalog.display().to_string());
        }
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        eprintln!("bench console: {tools} tools");
        let dev = Dev::start_with(&extra).await?;
        let passthrough = dev.connect("passthrough").await?;
        wait_for_tools(&passthrough, tools).await?;
        results.push(measure(&dev, tools, args.iterations.max(1)).await?);
    }
    let iterations = args.iterations.max(1);
    println!(
        "Console requests over loopback, one at a time, {iterations} of each per size (p50 / p95, ms); \
         sign-in and the first screen {} times (the console takes 10 sign-ins of one credential a \
         minute: the first iterations sign in, the others keep the last session):\n",
        iterations.min(SIGN_INS)
    );
    println!(
        "| tools | page + script + styles | sign-in + session | first page of 50 | a page mid-list | search | a declaration | first screen (sum) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    let cell = |s: &[Duration]| format!("{} / {}", ms(percentile(s, 0.5)), ms(percentile(s, 0.95)));
    for m in &results {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            m.tools,
            cell(&m.assets),
            cell(&m.sign_in),
            cell(&m.first_page),
            cell(&m.deep_page),
            cell(&m.search),
            cell(&m.declaration),
            cell(&m.first_screen),
        );
    }
    Ok(())
}
