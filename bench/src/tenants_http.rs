//! `quiver bench tenants` at scale, over HTTP: thousands of tenants, each
//! with its own key and policy, served by one real `quiver dev --auth
//! required` over a 10,000-tool catalogue with the sentence model loaded.
//! Each tenant's request is what a new client does: `initialize`, then
//! `search_tools`, then the session's `DELETE`, over loopback HTTP from this
//! process (the server is another process). It measures the server's
//! resident memory per view once the vectors are in, a tenant's first
//! request, the first request right after a manifest change, and the same
//! with the view cap at 100 (views evicted and derived again under load).

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use quiver_control_plane::{
    admin::{AdminAnswer, AdminRequest, KeyRequester},
    client::AdminClient,
    tenant::TenantPatch,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::executor::{percentile, rss_kib};

/// Settings of the HTTP scale measurement.
#[derive(Debug, Clone)]
pub(crate) struct ScaleSettings {
    /// Tenants, one key each.
    pub(crate) tenants: usize,
    /// Tools in the catalogue `quiver dev` serves.
    pub(crate) tools: usize,
    /// The public catalogue the tools are copied from.
    pub(crate) catalog: PathBuf,
    /// The small view cap of the eviction scenario.
    pub(crate) small_cap: usize,
    /// Seed of the policies and of the order tenants come in.
    pub(crate) seed: u64,
    /// Labelled queries (their text is what tenants search for).
    pub(crate) queries: PathBuf,
}

/// How much of the catalogue a tenant sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Every server but two of its own.
    Broad,
    /// Three servers.
    Narrow,
}

impl Shape {
    fn describe(self) -> &'static str {
        match self {
            Shape::Broad => "broad (every server but 2)",
            Shape::Narrow => "narrow (3 servers)",
        }
    }

    /// The servers tenant `i` sees.
    fn servers(self, servers: &[String], i: usize, rng: &mut SplitMix64) -> Vec<String> {
        match self {
            Shape::Broad => {
                let hidden = [rng.below(servers.len()), rng.below(servers.len())];
                (0..servers.len())
                    .filter(|s| !hidden.contains(s))
                    .map(|s| servers[s].clone())
                    .collect()
            }
            Shape::Narrow => (0..3)
                .map(|k| servers[(i * 7 + k * 13 + rng.below(5)) % servers.len()].clone())
                .collect(),
        }
    }
}

/// A `quiver dev` started by this benchmark on a data directory it keeps
/// across restarts (tenants and tool vectors survive).
struct ScaleDev {
    child: tokio::process::Child,
    mcp: String,
    metrics: String,
    control_plane: String,
}

impl ScaleDev {
    async fn start(
        data: &Path,
        catalog: &Path,
        max_views: Option<usize>,
    ) -> anyhow::Result<ScaleDev> {
        let exe = crate::quiver::binary()?;
        let mut command = tokio::process::Command::new(exe);
        command
            .args(["dev", "--listen", "127.0.0.1:0", "--auth", "required"])
            .args(["--control-plane-listen", "127.0.0.1:0"])
            .args(["--admin-listen", "127.0.0.1:0", "--data"])
            .arg(data)
            .arg("--catalog")
            .arg(catalog);
        if let Some(max_views) = max_views {
            let config = data.with_extension("toml");
            std::fs::write(&config, format!("[edge]\nmax_views = {max_views}\n"))
                .context("writing the view cap's config")?;
            command.arg("--config").arg(config);
        }
        let mut child = command
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("starting quiver dev")?;
        let stdout = child.stdout.take().context("quiver dev's stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let banner = tokio::time::timeout(Duration::from_secs(300), lines.next_line())
            .await
            .context("quiver dev printed no startup line in 300 s")??
            .context("quiver dev exited before it was ready")?;
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let word = |key: &str| -> anyhow::Result<String> {
            banner
                .split_whitespace()
                .skip_while(|w| *w != key)
                .nth(1)
                .map(|w| w.trim_end_matches([';', ',']).to_string())
                .with_context(|| format!("no `{key}` in the startup line: {banner}"))
        };
        let mcp = banner
            .split_whitespace()
            .find(|w| w.starts_with("http://") && w.ends_with("/mcp"))
            .with_context(|| format!("no MCP URL in: {banner}"))?
            .to_string();
        Ok(ScaleDev {
            metrics: format!("{}/metrics", word("admin")?.trim_end_matches('/')),
            control_plane: word("plane")?,
            mcp,
            child,
        })
    }

    /// Stops the process and waits until it has exited (its data directory
    /// is free again).
    async fn stop(mut self) {
        let _ = self.child.kill().await;
    }

    fn rss_mib(&self) -> f64 {
        self.child
            .id()
            .and_then(rss_kib)
            .map_or(0.0, |kib| kib as f64 / 1024.0)
    }

    /// The value of gauge `name` on `/metrics` (0 when absent).
    async fn metric(&self, http: &reqwest::Client, name: &str) -> anyhow::Result<f64> {
        let text = http.get(&self.metrics).send().await?.text().await?;
        Ok(text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (key, value) = l.rsplit_once(' ')?;
                let bare = key.split('{').next()?;
                (bare == name).then(|| value.parse::<f64>().ok()).flatten()
            })
            .sum())
    }

    /// Waits until `/metrics` says `name` is `wanted` (`until` decides).
    async fn until(
        &self,
        http: &reqwest::Client,
        name: &str,
        what: &str,
        until: impl Fn(f64) -> bool,
    ) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(900);
        loop {
            let value = self.metric(http, name).await.unwrap_or(f64::NAN);
            if until(value) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("waited 900 s for {what}: {name} is {value}");
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Waits until resident memory holds still (within 1 MiB over 3 s):
    /// background work (embedding, discovery) has settled.
    async fn settle(&self) -> f64 {
        let mut last = self.rss_mib();
        let mut still = 0;
        let deadline = Instant::now() + Duration::from_secs(120);
        while still < 6 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let now = self.rss_mib();
            still = if (now - last).abs() < 1.0 {
                still + 1
            } else {
                0
            };
            last = now;
        }
        last
    }
}

/// One tenant's request as a new client makes it: `initialize`, the
/// `initialized` notification, `search_tools`, and the session's `DELETE`.
/// Returns the time until the search's answer, and the number of hits.
async fn first_request(
    http: &reqwest::Client,
    url: &str,
    key: &str,
    query: &str,
) -> anyhow::Result<(Duration, usize)> {
    let started = Instant::now();
    let post = |body: Value, session: Option<&str>| {
        let mut request = http
            .post(url)
            .header("authorization", format!("Bearer {key}"))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string());
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send()
    };
    let init = post(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "bench-tenants", "version": "1"}}}),
        None,
    )
    .await?;
    if !init.status().is_success() {
        bail!("initialize answered {}", init.status());
    }
    let session = init
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .context("no session id")?;
    answer(init).await?;
    post(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        Some(&session),
    )
    .await?;
    let search = post(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "search_tools", "arguments": {"query": query}}}),
        Some(&session),
    )
    .await?;
    let result = answer(search).await?;
    let elapsed = started.elapsed();
    if result["result"]["isError"] == true || result.get("error").is_some() {
        bail!("search_tools failed: {result}");
    }
    let hits = result["result"]["structuredContent"]["results"]
        .as_array()
        .map_or(0, Vec::len);
    http.delete(url)
        .header("authorization", format!("Bearer {key}"))
        .header("mcp-session-id", &session)
        .send()
        .await?;
    Ok((elapsed, hits))
}

/// The JSON-RPC answer in a response (JSON, or the first `data:` of SSE).
async fn answer(response: reqwest::Response) -> anyhow::Result<Value> {
    let sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let body = response.text().await?;
    let json = if sse {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .find(|d| d.contains("\"id\""))
            .unwrap_or("null")
            .to_string()
    } else {
        body
    };
    serde_json::from_str(&json).with_context(|| format!("not JSON-RPC: {json}"))
}

/// What one pass of requests measured.
struct Pass {
    latencies: Vec<Duration>,
    empty: usize,
}

impl Pass {
    fn cell(&self) -> String {
        format!(
            "{:.2} / {:.2} / {:.2}",
            ms(percentile(&self.latencies, 0.5)),
            ms(percentile(&self.latencies, 0.99)),
            ms(self.latencies.last().copied().unwrap_or_default())
        )
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Every tenant's request once, in a seeded order, one at a time.
async fn pass(
    http: &reqwest::Client,
    dev: &ScaleDev,
    keys: &[String],
    queries: &[String],
    seed: u64,
) -> anyhow::Result<Pass> {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    let mut rng = SplitMix64(seed);
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let mut latencies = Vec::with_capacity(keys.len());
    let mut empty = 0;
    for (n, &i) in order.iter().enumerate() {
        let query = &queries[(i + n) % queries.len()];
        let (took, hits) = first_request(http, &dev.mcp, &keys[i], query)
            .await
            .with_context(|| format!("tenant t{i}"))?;
        latencies.push(took);
        empty += usize::from(hits == 0);
    }
    latencies.sort();
    Ok(Pass { latencies, empty })
}

/// Creates `count` tenants of `shape` (search mode, one key each) through
/// eight admin connections at once; returns their keys in tenant order.
async fn create_tenants(
    control_plane: &str,
    servers: &[String],
    shape: Shape,
    count: usize,
    seed: u64,
) -> anyhow::Result<Vec<String>> {
    let mut rng = SplitMix64(seed);
    let policies: Vec<Vec<String>> = (0..count)
        .map(|i| shape.servers(servers, i, &mut rng))
        .collect();
    let lanes = 8;
    let mut tasks = Vec::new();
    for lane in 0..lanes {
        let mut admin = AdminClient::new(vec![control_plane.to_string()], None);
        let mine: Vec<(usize, Vec<String>)> = policies
            .iter()
            .enumerate()
            .filter(|(i, _)| i % lanes == lane)
            .map(|(i, p)| (i, p.clone()))
            .collect();
        tasks.push(tokio::spawn(async move {
            let mut keys = Vec::new();
            for (i, servers) in mine {
                let id = format!("t{i}");
                admin
                    .call(&AdminRequest::TenantCreate {
                        id: id.clone(),
                        patch: TenantPatch {
                            mode: Some("search".into()),
                            servers: Some(servers),
                            ..TenantPatch::default()
                        },
                    })
                    .await
                    .with_context(|| format!("creating tenant {id}"))?;
                let AdminAnswer::KeyIssue(issued) = admin
                    .call(&AdminRequest::KeyIssue {
                        tenant: id.clone(),
                        requester: KeyRequester::Operator,
                    })
                    .await?
                else {
                    bail!("unexpected answer to key issue");
                };
                keys.push((i, issued.key));
            }
            anyhow::Ok(keys)
        }));
    }
    let mut keys = vec![String::new(); count];
    for task in tasks {
        for (i, key) in task.await.context("a tenant-creating task")?? {
            keys[i] = key;
        }
    }
    Ok(keys)
}

/// Waits until `key` is accepted (the tenants reached the edge).
async fn until_accepted(http: &reqwest::Client, dev: &ScaleDev, key: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if first_request(http, &dev.mcp, key, "weather forecast")
            .await
            .is_ok()
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("a tenant's key was not accepted within 300 s");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// One row of the table.
struct Row {
    shape: Shape,
    what: String,
    views: f64,
    pass: Pass,
    rss_before: f64,
    rss_after: f64,
    per_view_kib: Option<f64>,
    /// What the views hold of their own, by the server's own count.
    counted_kib: f64,
    evictions: f64,
}

/// Runs every scenario and prints the table.
pub(crate) async fn run(settings: &ScaleSettings) -> anyhow::Result<()> {
    quiver_upstream::install_crypto_provider();
    let dir = tempfile::tempdir().context("a directory for the catalogue and data")?;
    let catalog = crate::catalog::scaled_catalog(&settings.catalog, settings.tools, dir.path())?
        .context("the catalogue must be larger than the demo's")?;
    let queries: Vec<String> = quiver_view::search::eval::load_queries(&settings.queries)?
        .into_iter()
        .map(|q| q.query)
        .collect();
    anyhow::ensure!(
        !queries.is_empty(),
        "no queries in {}",
        settings.queries.display()
    );
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(4)
        .build()
        .context("an HTTP client")?;
    let mut rows = Vec::new();
    let mut model_line = String::new();
    for shape in [Shape::Broad, Shape::Narrow] {
        let data = dir.path().join(format!("{shape:?}").to_lowercase());
        eprintln!("bench tenants: {} — starting quiver dev", shape.describe());
        let dev = ScaleDev::start(&data, &catalog, None).await?;
        let tools = settings.tools as f64;
        dev.until(&http, "quiver_search_index_tools", "the catalogue", |v| {
            v >= tools
        })
        .await?;
        dev.until(
            &http,
            "quiver_search_index_semantic",
            "the tool vectors",
            |v| v == 1.0,
        )
        .await?;
        let mut admin = AdminClient::new(vec![dev.control_plane.clone()], None);
        let AdminAnswer::UpstreamList(upstreams) = admin.call(&AdminRequest::UpstreamList).await?
        else {
            bail!("unexpected answer to upstream list");
        };
        let servers: Vec<String> = upstreams.iter().map(|u| u.id.clone()).collect();
        eprintln!(
            "bench tenants: creating {} tenants over {} servers",
            settings.tenants,
            servers.len()
        );
        let created = Instant::now();
        let keys = create_tenants(
            &dev.control_plane,
            &servers,
            shape,
            settings.tenants,
            settings.seed,
        )
        .await?;
        eprintln!(
            "bench tenants: created in {:.0} s",
            created.elapsed().as_secs_f64()
        );
        until_accepted(&http, &dev, &keys[keys.len() - 1]).await?;
        // Every query embedded once, so that what follows measures views,
        // not the model (the query cache holds 1,024).
        for query in &queries {
            first_request(&http, &dev.mcp, &keys[0], query).await?;
        }
        let views_before = dev.metric(&http, "quiver_views").await?;
        let rss_before = dev.settle().await;
        let first = pass(&http, &dev, &keys, &queries, settings.seed ^ 1).await?;
        let views = dev.metric(&http, "quiver_views").await? - views_before;
        let rss_after = dev.settle().await;
        let whole = rss_after;
        rows.push(Row {
            shape,
            what: "each tenant's first request".into(),
            views,
            per_view_kib: (views > 0.0).then(|| (rss_after - rss_before) * 1024.0 / views),
            counted_kib: dev.metric(&http, "quiver_views_bytes").await?
                / 1024.0
                / dev.metric(&http, "quiver_views").await?.max(1.0),
            pass: first,
            rss_before,
            rss_after,
            evictions: dev.metric(&http, "quiver_views_evictions_total").await?,
        });
        let warm = pass(&http, &dev, &keys, &queries, settings.seed ^ 2).await?;
        rows.push(Row {
            shape,
            what: "each tenant's second request (view held)".into(),
            views: dev.metric(&http, "quiver_views").await?,
            counted_kib: dev.metric(&http, "quiver_views_bytes").await?
                / 1024.0
                / dev.metric(&http, "quiver_views").await?.max(1.0),
            per_view_kib: None,
            pass: warm,
            rss_before: rss_after,
            rss_after: dev.settle().await,
            evictions: dev.metric(&http, "quiver_views_evictions_total").await?,
        });
        // A manifest change: one upstream removed.
        let removed = servers[servers.len() / 2].clone();
        let before_change = dev.metric(&http, "quiver_search_index_tools").await?;
        admin
            .call(&AdminRequest::UpstreamRemove {
                id: removed.clone(),
            })
            .await
            .with_context(|| format!("removing upstream {removed}"))?;
        dev.until(
            &http,
            "quiver_search_index_tools",
            "the new manifest",
            |v| v < before_change,
        )
        .await?;
        let rss_before = dev.rss_mib();
        let changed = pass(&http, &dev, &keys, &queries, settings.seed ^ 3).await?;
        rows.push(Row {
            shape,
            what: format!("right after a manifest change (upstream `{removed}` removed)"),
            views: dev.metric(&http, "quiver_views").await?,
            counted_kib: dev.metric(&http, "quiver_views_bytes").await?
                / 1024.0
                / dev.metric(&http, "quiver_views").await?.max(1.0),
            per_view_kib: None,
            pass: changed,
            rss_before,
            rss_after: dev.settle().await,
            evictions: dev.metric(&http, "quiver_views_evictions_total").await?,
        });
        if model_line.is_empty() {
            model_line = format!(
                "{:.0} tools in the index after the change; whole process {whole:.0} MiB after the first pass",
                dev.metric(&http, "quiver_search_index_tools").await?
            );
        }
        dev.stop().await;
        // The same tenants, the view cap at `small_cap`.
        let dev = ScaleDev::start(&data, &catalog, Some(settings.small_cap)).await?;
        dev.until(
            &http,
            "quiver_search_index_semantic",
            "the tool vectors",
            |v| v == 1.0,
        )
        .await?;
        until_accepted(&http, &dev, &keys[0]).await?;
        for query in &queries {
            first_request(&http, &dev.mcp, &keys[0], query).await?;
        }
        let rss_before = dev.settle().await;
        let capped = pass(&http, &dev, &keys, &queries, settings.seed ^ 4).await?;
        rows.push(Row {
            shape,
            what: format!(
                "each tenant's first request, view cap {}",
                settings.small_cap
            ),
            views: dev.metric(&http, "quiver_views").await?,
            counted_kib: dev.metric(&http, "quiver_views_bytes").await?
                / 1024.0
                / dev.metric(&http, "quiver_views").await?.max(1.0),
            per_view_kib: None,
            pass: capped,
            rss_before,
            rss_after: dev.settle().await,
            evictions: dev.metric(&http, "quiver_views_evictions_total").await?,
        });
        dev.stop().await;
    }
    println!(
        "## Tenants at scale over HTTP: {} tenants × {} tools, model loaded\n\n\
         One `quiver dev --auth required` (release build) over the {}-tool catalogue of \
         `bench/src/catalog.rs` (demo + LiveMCPBench definitions, ~75 mock-upstream processes); the \
         sentence model loaded and every tool vector in before any tenant comes. {} tenants in \
         search mode, one API key each, created through the admin API. A request is a new \
         client's `initialize` + `notifications/initialized` + `search_tools` (a query from \
         tests/data/search/queries.json, each embedded once beforehand) + `DELETE`, over \
         loopback HTTP from the benchmark's process, one at a time, tenants in a seeded random \
         order; latency to the search's answer. Memory is the server process's VmRSS, read \
         once it holds still. {model_line}.\n",
        settings.tenants, settings.tools, settings.tools, settings.tenants,
    );
    println!(
        "| views | requests | p50 / p99 / max ms | views held | evictions | RSS before → after MiB | RSS growth per view KiB | a view's own KiB (counted) | no hits |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for row in &rows {
        println!(
            "| {} | {} | {} | {:.0} | {:.0} | {:.0} → {:.0} | {} | {:.1} | {} |",
            row.shape.describe(),
            row.what,
            row.pass.cell(),
            row.views,
            row.evictions,
            row.rss_before,
            row.rss_after,
            row.per_view_kib.map_or("—".into(), |k| format!("{k:.1}")),
            row.counted_kib,
            row.pass.empty,
        );
    }
    Ok(())
}

/// A small seeded generator (SplitMix64).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}
