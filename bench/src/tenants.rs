//! `quiver bench tenants`: what authenticating an API key and resolving the
//! caller's view cost per request with many tenants over a large manifest, and
//! what the lazily built per-view search indexes hold in memory. It drives the
//! edge's own `auth` functions and `TenantViews` in this process; it measures
//! no HTTP, and each memory scenario runs in a child process of its own so that
//! heap freed by one scenario cannot hide the next one's growth.

use std::{
    collections::HashSet,
    hash::{DefaultHasher, Hash, Hasher},
    hint::black_box,
    path::{Path, PathBuf},
    process::Command,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::Context;
use clap::Args;
use quiver_edge::auth::{self, AuthRefusal};
use quiver_proto::{
    Manifest, ServerEntry,
    catalog::Catalog,
    tenant::{Tenant, TenantDirectory, hash_key},
};
use quiver_view::{
    TenantViews, ToolView,
    tenant_views::{DEFAULT_MAX_VIEWS, visible_tools},
};
use serde_json::{Value, json};

use crate::executor::{percentile, rss_kib};

/// Arguments of `quiver bench tenants`.
#[derive(Args, Debug)]
pub struct TenantsBenchArgs {
    /// Tenants, one API key each (also the tenants of the memory scenarios).
    #[arg(long, default_value_t = 1000)]
    tenants: usize,
    /// Tools in the manifest of the per-request measurement: the catalogue
    /// replicated under distinct server ids (`<server>-r<k>`), the last copy cut short.
    #[arg(long, default_value_t = 10_000)]
    tools: usize,
    /// Simulated requests, tenants drawn uniformly.
    #[arg(long, default_value_t = 200_000)]
    requests: usize,
    /// Tool catalogue (any file `quiver dev --catalog` reads); the memory
    /// scenarios use it once, unreplicated.
    #[arg(long, default_value = "../shared/datasets/livemcpbench/tools.json")]
    catalog: PathBuf,
    /// Seed of the policies, keys and tenant draws.
    #[arg(long, default_value_t = 0x7e4a_0001)]
    seed: u64,
    /// Runs one memory scenario and prints its figures as JSON (the benchmark
    /// starts itself with this, once per scenario).
    #[arg(long, hide = true)]
    memory_scenario: Option<usize>,
    /// Which measurements: `http` (tenants at scale through a real `quiver
    /// dev`, model loaded), `in-process` (authentication, view resolution
    /// and view memory, in this process), or `both`.
    #[arg(long, default_value = "both", value_parser = ["http", "in-process", "both"])]
    only: String,
    /// Tenants of the HTTP measurement.
    #[arg(long, default_value_t = 10_000)]
    http_tenants: usize,
    /// Tools of the HTTP measurement's catalogue (demo + copied definitions).
    #[arg(long, default_value_t = 10_000)]
    http_tools: usize,
    /// The public catalogue the HTTP measurement's tools are copied from.
    #[arg(long, default_value = crate::catalog::DEFAULT_SOURCE)]
    http_catalog: PathBuf,
    /// The small view cap of the HTTP measurement's eviction scenario.
    #[arg(long, default_value_t = 100)]
    small_cap: usize,
    /// Labelled queries whose text the HTTP measurement's tenants search for.
    #[arg(long, default_value = "tests/data/search/queries.json")]
    queries: PathBuf,
}

/// Runs the benchmark.
pub async fn run(args: TenantsBenchArgs) -> anyhow::Result<()> {
    if args.memory_scenario.is_none() && args.only != "in-process" {
        if cfg!(debug_assertions) {
            eprintln!(
                "warning: this is a debug build; use `cargo build --release --bin quiver --bin quiver-bench` for numbers"
            );
        }
        anyhow::ensure!(args.http_tenants > 0, "--http-tenants must be at least 1");
        crate::tenants_http::run(&crate::tenants_http::ScaleSettings {
            tenants: args.http_tenants,
            tools: args.http_tools,
            catalog: args.http_catalog.clone(),
            small_cap: args.small_cap.max(1),
            seed: args.seed,
            queries: args.queries.clone(),
        })
        .await?;
        if args.only == "http" {
            return Ok(());
        }
    }
    in_process(args)
}

/// The in-process measurements: per-request authentication and view
/// resolution, and the memory of the views.
fn in_process(args: TenantsBenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.tenants > 0, "--tenants must be at least 1");
    anyhow::ensure!(args.tools > 0, "--tools must be at least 1");
    anyhow::ensure!(args.requests > 0, "--requests must be at least 1");
    let catalog = load_catalog(&args.catalog)?;
    if let Some(index) = args.memory_scenario {
        return memory_scenario(&args, catalog, index);
    }
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: this is a debug build; use `cargo build --release --bin quiver --bin quiver-bench` for numbers"
        );
    }
    per_request(&args, &catalog)?;
    memory(&args)
}

pub(crate) fn load_catalog(path: &Path) -> anyhow::Result<Catalog> {
    if !path.exists() {
        anyhow::bail!(
            "no tool catalogue at {}: pass --catalog PATH (the LiveMCPBench catalogue is \
             livemcpbench/tools.json in the shared datasets folder next to the repository; \
             any file `quiver dev --catalog` reads will do)",
            path.display()
        );
    }
    let catalog = Catalog::load(path, "catalog")?;
    anyhow::ensure!(
        catalog.tool_count() > 0,
        "the catalogue {} holds no tools",
        path.display()
    );
    Ok(catalog)
}

/// The catalogue's servers copied under ids `<server>-r<k>` until `tools`
/// tools are reached (the last copy cut short). Every server is tagged
/// `team-<n>`, five servers to a tag, so that policies can select by tag.
pub(crate) fn replicated_entries(catalog: &Catalog, tools: usize) -> Vec<ServerEntry> {
    let mut entries = Vec::new();
    let mut left = tools;
    let mut replica = 0;
    while left > 0 {
        for server in &catalog.servers {
            let take = server.tools.len().min(left);
            if take == 0 {
                continue;
            }
            left -= take;
            let id = format!("{}-r{replica}", server.id);
            entries.push(ServerEntry {
                namespace: id.clone(),
                id,
                description: server.description.clone(),
                tags: vec![format!("team-{}", entries.len() / 5)],
                group: String::new(),
                validation: Default::default(),
                features: Vec::new(),
                tools: server.tools[..take].to_vec(),
                findings: Default::default(),
            });
        }
        replica += 1;
    }
    entries
}

/// What a tenant may see: the three policy fields of [`Tenant`].
#[derive(Debug, Clone, Default)]
struct Policy {
    servers: Vec<String>,
    tools: Vec<String>,
    tags: Vec<String>,
}

/// How much of the manifest a tenant's policy shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PolicyShape {
    /// A few servers: three by id, two by id narrowed by tool globs, one tag
    /// (five servers), or one upstream across its replicas by glob, in turn.
    Narrow,
    /// Every server but three, listed by id.
    Broad,
}

impl PolicyShape {
    fn describe(self) -> &'static str {
        match self {
            PolicyShape::Narrow => "narrow (a few servers)",
            PolicyShape::Broad => "broad (all servers but 3)",
        }
    }

    /// The `n`th policy of this shape over `manifest`.
    fn policy(self, manifest: &Manifest, n: usize, rng: &mut SplitMix64) -> Policy {
        let servers = &manifest.servers;
        let mut pick = || &servers[rng.below(servers.len())];
        match (self, n % 4) {
            (PolicyShape::Broad, _) => {
                let hidden: HashSet<usize> = (0..3).map(|_| rng.below(servers.len())).collect();
                Policy {
                    servers: (0..servers.len())
                        .filter(|i| !hidden.contains(i))
                        .map(|i| servers[i].id.clone())
                        .collect(),
                    ..Policy::default()
                }
            }
            (PolicyShape::Narrow, 0) => Policy {
                servers: (0..3).map(|_| pick().id.clone()).collect(),
                ..Policy::default()
            },
            (PolicyShape::Narrow, 1) => {
                let chosen = [pick(), pick()];
                let tools = chosen
                    .iter()
                    .map(|server| {
                        // A prefix of one of its tool names: never an empty set.
                        let tool = &manifest.tools[server.tools[rng.below(server.tools.len())]];
                        let prefix: String = tool.def.name.chars().take(3).collect();
                        format!("{}/{prefix}*", server.id)
                    })
                    .collect();
                Policy {
                    servers: chosen.iter().map(|s| s.id.clone()).collect(),
                    tools,
                    ..Policy::default()
                }
            }
            (PolicyShape::Narrow, 2) => Policy {
                tags: pick().tags.clone(),
                ..Policy::default()
            },
            (PolicyShape::Narrow, _) => {
                let id = &pick().id;
                let upstream = id.rsplit_once("-r").map_or(id.as_str(), |(base, _)| base);
                Policy {
                    servers: vec![format!("{upstream}-r*")],
                    ..Policy::default()
                }
            }
        }
    }
}

/// A tenant with `policy` and, if given, the one API key `key`. Built from
/// its serialised form, as the control plane replicates it: every field this
/// benchmark does not set keeps its default, whatever fields tenants gain.
fn tenant(id: &str, policy: &Policy, key: Option<&str>) -> anyhow::Result<Tenant> {
    let keys = match key {
        Some(key) => json!({"k": {"sha256": hash_key(key), "created_ms": 0}}),
        None => json!({}),
    };
    serde_json::from_value(json!({
        "id": id,
        "display_name": id,
        "servers": policy.servers,
        "tools": policy.tools,
        "tags": policy.tags,
        "keys": keys,
        "created_ms": 0,
        "updated_ms": 0,
    }))
    .with_context(|| format!("tenant {id} does not deserialise"))
}

/// One simulated request: the bearer credential of the `Authorization`
/// header, the API key checked, the tenant's view resolved.
fn serve(
    header: &str,
    directory: &TenantDirectory,
    views: &TenantViews,
) -> Result<Arc<ToolView>, AuthRefusal> {
    let key = auth::bearer(header).ok_or(AuthRefusal::Missing)?;
    let principal = auth::authenticate_key(key, directory)?;
    views
        .for_tenant(&principal.tenant)
        .ok_or_else(|| AuthRefusal::Invalid {
            reason: "no such tenant".into(),
        })
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let out = black_box(f());
    (out, started.elapsed())
}

/// Sorted request latencies.
struct Latencies(Vec<Duration>);

impl Latencies {
    fn new(mut samples: Vec<Duration>) -> Latencies {
        samples.sort();
        Latencies(samples)
    }

    fn p99(&self) -> Duration {
        percentile(&self.0, 0.99)
    }

    fn row(&self, what: &str) -> String {
        format!(
            "| {what} | {} | {} | {} | {} | {} |",
            self.0.len(),
            us(percentile(&self.0, 0.5)),
            us(self.p99()),
            us(self.0.last().copied().unwrap_or_default()),
            self.0.len() - self.0.partition_point(|d| *d <= TARGET),
        )
    }
}

fn us(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e6)
}

/// The 50 µs p99 budget of authentication plus view resolution.
const TARGET: Duration = Duration::from_micros(50);

fn per_request(args: &TenantsBenchArgs, catalog: &Catalog) -> anyhow::Result<()> {
    let manifest = Arc::new(Manifest::build(1, replicated_entries(catalog, args.tools)));
    let copies = args.tools.div_ceil(catalog.tool_count());
    let mut rng = SplitMix64(args.seed);
    let mut headers = Vec::with_capacity(args.tenants);
    let tenants: Vec<Tenant> = (0..args.tenants)
        .map(|i| {
            let key = format!("qk_t{i}_{:016x}{:016x}", rng.next_u64(), rng.next_u64());
            headers.push(format!("Bearer {key}"));
            let policy = PolicyShape::Narrow.policy(&manifest, i, &mut rng);
            tenant(&format!("t{i}"), &policy, Some(&key))
        })
        .collect::<anyhow::Result<_>>()?;
    let directory = Arc::new(TenantDirectory::new(tenants));
    let (views, all_view) = timed(|| TenantViews::new(manifest.clone(), directory.clone()));

    let mut seen = vec![false; args.tenants];
    let (mut cold, mut warm) = (Vec::new(), Vec::with_capacity(args.requests));
    let mut visible = 0;
    for _ in 0..args.requests {
        let i = rng.below(args.tenants);
        let (view, elapsed) = timed(|| serve(&headers[i], &directory, &views));
        let view = view.map_err(|e| anyhow::anyhow!("tenant t{i} refused: {e:?}"))?;
        if std::mem::replace(&mut seen[i], true) {
            warm.push(elapsed);
        } else {
            visible += view.len();
            cold.push(elapsed);
        }
    }
    let all = Latencies::new(cold.iter().chain(&warm).copied().collect());
    let (cold, warm) = (Latencies::new(cold), Latencies::new(warm));
    let views_built = views.views_built();

    let unknown: Vec<String> = (0..(args.requests / 10).max(1))
        .map(|_| {
            format!(
                "Bearer qk_nobody_{:016x}{:016x}",
                rng.next_u64(),
                rng.next_u64()
            )
        })
        .collect();
    let refused = Latencies::new(
        unknown
            .iter()
            .map(|header| {
                let (result, elapsed) = timed(|| serve(header, &directory, &views));
                anyhow::ensure!(result.is_err(), "an unknown key was accepted");
                Ok(elapsed)
            })
            .collect::<anyhow::Result<_>>()?,
    );

    // The two halves of a warm request, timed apart (tenants already served).
    let (mut auth_alone, mut view_alone) = (Vec::new(), Vec::new());
    for _ in 0..args.requests {
        let i = rng.below(args.tenants);
        if !seen[i] {
            continue;
        }
        let (principal, elapsed) = timed(|| {
            auth::bearer(&headers[i]).and_then(|key| auth::authenticate_key(key, &directory).ok())
        });
        let principal = principal.context("a known key was refused")?;
        auth_alone.push(elapsed);
        let (view, elapsed) = timed(|| views.for_tenant(&principal.tenant));
        view.context("a known tenant has no view")?;
        view_alone.push(elapsed);
    }

    // A tenant change elsewhere (a key issued, a tenant added) keeps the
    // indexes but forgets which tenant uses which: each tenant's next request
    // recomputes its visible set over the whole manifest.
    let after_change = views.with_tenants(directory.clone());
    let mut rechecked = Vec::new();
    for header in &headers {
        let (view, elapsed) = timed(|| serve(header, &directory, &after_change));
        view.map_err(|e| anyhow::anyhow!("refused after the change: {e:?}"))?;
        rechecked.push(elapsed);
    }
    let rebuilt = after_change.views_built().saturating_sub(views_built);

    let contended = warm_while_building(&manifest, &directory, &headers, args.seed)?;

    println!(
        "## Tenants: authentication and view resolution per request\n\n\
         Manifest: {} tools on {} servers, the {}-tool catalogue {} copied {copies}× under \
         distinct server ids (`<server>-r<k>`, the last copy cut short). {} tenants, one API key \
         each, policies in turn: 3 servers by id; 2 servers narrowed by tool globs; one tag \
         (5 servers); one upstream across its copies by glob. {} requests, tenants drawn \
         uniformly (seed {}), one at a time on one thread; lexical search (no sentence \
         model loaded here). Building the manifest's shared index and the view of every \
         tool (once per manifest version, before any request): {:.1} ms.\n",
        manifest.tools.len(),
        manifest.servers.len(),
        catalog.tool_count(),
        args.catalog.display(),
        args.tenants,
        args.requests,
        args.seed,
        all_view.as_secs_f64() * 1000.0,
    );
    println!("| request | requests | p50 µs | p99 µs | max µs | over 50 µs |");
    println!("|---|---:|---:|---:|---:|---:|");
    println!(
        "{}",
        warm.row("warm: `bearer` + `authenticate_key` + `for_tenant` (every request after a tenant's first)")
    );
    println!(
        "{}",
        cold.row(&format!(
            "cold: a tenant's first request ({views_built} views derived, {:.0} visible tools per tenant on average)",
            visible as f64 / cold.0.len().max(1) as f64
        ))
    );
    println!("{}", all.row("all requests, cold and warm"));
    println!("{}", refused.row("unknown key (refused)"));
    println!(
        "{}",
        Latencies::new(auth_alone)
            .row("warm, authentication alone (`bearer` + `authenticate_key`)")
    );
    println!(
        "{}",
        Latencies::new(view_alone).row("warm, view resolution alone (`for_tenant`)")
    );
    println!(
        "{}",
        Latencies::new(rechecked).row(&format!(
            "after a tenant change (`with_tenants`): each tenant's first request ({rebuilt} views derived again)"
        ))
    );
    if let Some(contended) = &contended {
        println!(
            "{}",
            contended.row("warm, while a second thread serves the other half of the tenants their first request")
        );
    }

    println!("\n## Tenants: against the target\n");
    println!("| target | measured | met |");
    println!("|---|---:|---|");
    let verdict = |d: Duration| if d < TARGET { "yes" } else { "no" };
    println!(
        "| authentication + view resolution < 50 µs p99 (warm) | {} µs | {} |",
        us(warm.p99()),
        verdict(warm.p99())
    );
    println!(
        "| the same over all requests, first requests included | {} µs | {} |",
        us(all.p99()),
        verdict(all.p99())
    );
    println!(
        "| a tenant's first request (builds or finds its view) < 50 µs p99 | {} µs | {} |",
        us(cold.p99()),
        verdict(cold.p99())
    );
    Ok(())
}

/// Warm requests for one half of the tenants while another thread serves
/// the other half their first request: `for_tenant` builds a view under the
/// lock every request takes. `None` with fewer than two tenants.
fn warm_while_building(
    manifest: &Arc<Manifest>,
    directory: &Arc<TenantDirectory>,
    headers: &[String],
    seed: u64,
) -> anyhow::Result<Option<Latencies>> {
    let half = headers.len() / 2;
    if half == 0 {
        return Ok(None);
    }
    let views = TenantViews::new(manifest.clone(), directory.clone());
    for header in &headers[..half] {
        serve(header, directory, &views).map_err(|e| anyhow::anyhow!("{e:?}"))?;
    }
    let done = AtomicBool::new(false);
    let samples = std::thread::scope(|scope| {
        scope.spawn(|| {
            for header in &headers[half..] {
                let _ = serve(header, directory, &views);
            }
            done.store(true, Ordering::Release);
        });
        let mut rng = SplitMix64(seed ^ 0xc0ffee);
        let mut samples = Vec::new();
        while !done.load(Ordering::Acquire) {
            let header = &headers[rng.below(half)];
            samples.push(timed(|| serve(header, directory, &views)).1);
        }
        samples
    });
    Ok(Some(Latencies::new(samples)))
}

/// One memory measurement: every tenant's view resolved once.
#[derive(Debug, Clone, Copy)]
struct MemoryScenario {
    shape: PolicyShape,
    /// Distinct visible sets among the tenants (the tenants take them in turn).
    sets: usize,
    max_views: usize,
}

/// The scenarios for `tenants` tenants: narrow and broad policies, each with
/// every tenant's set distinct (under the default cap and under a small one)
/// and with one set per 20 tenants.
fn memory_scenarios(tenants: usize) -> Vec<MemoryScenario> {
    let shared = (tenants / 20).clamp(1, 50);
    let small_cap = (tenants / 10).clamp(1, 100);
    [PolicyShape::Narrow, PolicyShape::Broad]
        .into_iter()
        .flat_map(|shape| {
            [
                (tenants, DEFAULT_MAX_VIEWS),
                (tenants, small_cap),
                (shared, DEFAULT_MAX_VIEWS),
            ]
            .map(|(sets, max_views)| MemoryScenario {
                shape,
                sets,
                max_views,
            })
        })
        .collect()
}

/// `sets` policies of `shape` with pairwise distinct, non-empty visible sets.
fn distinct_policies(
    manifest: &Manifest,
    shape: PolicyShape,
    sets: usize,
    seed: u64,
) -> anyhow::Result<Vec<Policy>> {
    let mut rng = SplitMix64(seed);
    let mut seen = HashSet::new();
    let mut policies = Vec::with_capacity(sets);
    let mut attempt = 0;
    while policies.len() < sets {
        anyhow::ensure!(
            attempt < sets * 100,
            "the catalogue gave only {} distinct visible sets of shape {shape:?} in {attempt} tries; use fewer --tenants",
            policies.len()
        );
        let policy = shape.policy(manifest, attempt, &mut rng);
        attempt += 1;
        // Only a hash of each set is kept: the sets themselves would take
        // heap the views then reuse, hiding part of their growth.
        let visible = visible_tools(manifest, &tenant("candidate", &policy, None)?);
        let mut hasher = DefaultHasher::new();
        visible.hash(&mut hasher);
        if !visible.is_empty() && seen.insert(hasher.finish()) {
            policies.push(policy);
        }
    }
    Ok(policies)
}

/// Hands the heap pages freed so far back to the kernel, so that the RSS
/// growth measured after this counts every page the views touch, including
/// pages the manifest's build freed and the views reuse.
fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: glibc's `malloc_trim` takes no pointers; it only returns
        // whole free pages of its own arenas to the kernel.
        unsafe { malloc_trim(0) };
    }
}

fn rss() -> anyhow::Result<u64> {
    rss_kib(std::process::id()).context("reading VmRSS from /proc/self/status")
}

/// The child side: one scenario, its figures printed as one JSON line.
fn memory_scenario(args: &TenantsBenchArgs, catalog: Catalog, index: usize) -> anyhow::Result<()> {
    let scenario = *memory_scenarios(args.tenants)
        .get(index)
        .with_context(|| format!("no memory scenario {index}"))?;
    let entries = replicated_entries(&catalog, args.tools);
    drop(catalog);
    release_free_heap();
    let start = rss()?;
    let manifest = Arc::new(Manifest::build(1, entries));
    release_free_heap();
    let with_manifest = rss()?;
    let policies = distinct_policies(&manifest, scenario.shape, scenario.sets, args.seed)?;
    let tenants: Vec<Tenant> = (0..args.tenants)
        .map(|i| tenant(&format!("t{i}"), &policies[i % policies.len()], None))
        .collect::<anyhow::Result<_>>()?;
    drop(policies);
    let directory = Arc::new(TenantDirectory::new(tenants));
    let views = TenantViews::new(manifest.clone(), directory).with_max_views(scenario.max_views);
    release_free_heap();
    let before = rss()?;
    let (mut visible, mut sharing) = (0, 0);
    for i in 0..args.tenants {
        // Not kept: a view held here would outlive its eviction.
        let view = views
            .for_tenant(&format!("t{i}"))
            .with_context(|| format!("tenant t{i} has no view"))?;
        visible += view.len();
        sharing += usize::from(Arc::ptr_eq(view.manifest(), &manifest));
    }
    // What the views keep, not the scratch their builds freed.
    release_free_heap();
    let after = rss()?;
    println!(
        "{}",
        json!({
            "manifest_tools": manifest.tools.len(),
            "manifest_kib": with_manifest.saturating_sub(start),
            "before_kib": before,
            "after_kib": after,
            "views_built": views.views_built(),
            "view_bytes": views.stats().bytes,
            "visible_tools": visible,
            "sharing_manifest": sharing,
        })
    );
    Ok(())
}

/// The parent side: every scenario in a fresh child process, one table.
fn memory(args: &TenantsBenchArgs) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("locating quiver-bench")?;
    let mut rows = Vec::new();
    let mut manifest_kib = 0;
    for (index, scenario) in memory_scenarios(args.tenants).into_iter().enumerate() {
        let output = Command::new(&exe)
            .args(["tenants", "--tenants", &args.tenants.to_string()])
            .args(["--tools", &args.tools.to_string()])
            .args(["--seed", &args.seed.to_string(), "--catalog"])
            .arg(&args.catalog)
            .args([
                "--memory-scenario",
                &index.to_string(),
                "--only",
                "in-process",
            ])
            .output()
            .with_context(|| format!("running {}", exe.display()))?;
        anyhow::ensure!(
            output.status.success(),
            "memory scenario {scenario:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        let figures: Value = stdout
            .lines()
            .last()
            .and_then(|line| serde_json::from_str(line).ok())
            .with_context(|| format!("memory scenario {scenario:?} printed {stdout:?}"))?;
        let field = |name: &str| figures[name].as_u64().unwrap_or(0);
        manifest_kib = field("manifest_kib");
        let views = field("views_built");
        let growth = field("after_kib").saturating_sub(field("before_kib"));
        rows.push(format!(
            "| {} | {} | {} | {} | {} | {:.0} | {} / {} | {:.1} | {:.1} | {} | {} |",
            scenario.shape.describe(),
            args.tenants,
            scenario.sets,
            if scenario.max_views == DEFAULT_MAX_VIEWS {
                format!("{DEFAULT_MAX_VIEWS} (default)")
            } else {
                scenario.max_views.to_string()
            },
            views,
            field("visible_tools") as f64 / args.tenants as f64,
            field("sharing_manifest"),
            args.tenants,
            field("before_kib") as f64 / 1024.0,
            growth as f64 / 1024.0,
            if views == 0 {
                "—".to_string()
            } else {
                format!("{:.1}", growth as f64 / views as f64)
            },
            if views == 0 {
                "—".to_string()
            } else {
                format!("{:.1}", field("view_bytes") as f64 / 1024.0 / views as f64)
            },
        ));
    }
    println!(
        "\n## Tenants: memory of the views ({} tenants × {} tools)\n\n\
         Each row is a fresh process: the manifest, its shared index and the view of every \
         tool are built, then every tenant's view is derived once. Resident memory (VmRSS) \
         before and after, the free heap handed back to the kernel (`malloc_trim`) before \
         each reading, so that the growth is what the views keep. Lexical search (no \
         sentence model). The manifest itself: {:.1} MiB resident, once, shared by every view.\n",
        args.tenants,
        args.tools,
        manifest_kib as f64 / 1024.0,
    );
    println!(
        "| policies | tenants | distinct visible sets | view cap | views derived | visible tools per tenant | views sharing the manifest | RSS before MiB | RSS growth MiB | growth per view KiB | a view's own KiB (counted) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        println!("{row}");
    }
    Ok(())
}

/// A small seeded generator (SplitMix64): reproducible policies, keys and draws.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0; the modulo bias is negligible here).
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}
