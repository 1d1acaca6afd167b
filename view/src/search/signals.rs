//! What searches led to, per tenant: search → describe → call → success or
//! failure, and tools found but passed over. Later searches of the same
//! tenant are nudged towards tools that worked for similar queries and away
//! from tools that failed or were passed over. One tenant's signals never
//! touch another's ranking.
//!
//! Memory is bounded per tenant (associations, pending searches, zero-hit
//! queries and tool counts are capped), old signals fade with a half-life,
//! and each tenant's signals are one JSON file in the store's directory, so
//! they survive restarts and a reset deletes them. Recording only marks a
//! tenant changed; changed tenants are written by [`SignalStore::flush`]
//! (once a second by the flusher [`install`] starts, and at shutdown), so a
//! search never waits for the disk. This module never ranks: it hands
//! [`super::HybridIndex::search_adjusted`] a score adjustment per tool.

use std::{
    collections::{HashMap, HashSet, VecDeque},
    path::{Path, PathBuf},
    sync::{Arc, Mutex, OnceLock, Weak},
    time::Duration,
};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Analyzer;

/// Limits and rates of the store.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SignalConfig {
    /// Seconds after which a signal counts half. Default 14 days.
    pub half_life_secs: f64,
    /// Query → tool associations kept per tenant. Default 512.
    pub max_associations: usize,
    /// Recent searches a call can be matched to. Default 32.
    pub max_pending: usize,
    /// Distinct zero-hit queries kept per tenant. Default 128.
    pub max_zero_hit: usize,
    /// Tools with counts kept per tenant. Default 2048.
    pub max_tools: usize,
    /// Largest adjustment of a tool's score (scores are in `0..=1`). Default 0.15.
    pub max_adjustment: f32,
    /// A call is matched to a search at most this many seconds before it. Default 600.
    pub call_window_secs: u64,
}

impl Default for SignalConfig {
    fn default() -> Self {
        SignalConfig {
            half_life_secs: 14.0 * 86_400.0,
            max_associations: 512,
            max_pending: 32,
            max_zero_hit: 128,
            max_tools: 2048,
            max_adjustment: 0.15,
            call_window_secs: 600,
        }
    }
}

/// Weight of a successful call after a search that showed the tool.
const SUCCESS: f32 = 1.0;
/// Weight of a failed call.
const FAILURE: f32 = -0.5;
/// Weight of a `describe` of a shown tool (interest, not yet proof).
const DESCRIBED: f32 = 0.3;
/// Weight given to tools shown above the one called (found, passed over).
const PASSED_OVER: f32 = -0.1;
/// Query similarity below which an association says nothing about a query.
/// Similarity is the Jaccard index of analysed terms or, when both queries
/// were embedded, the larger of that and their rescaled cosine.
const MIN_SIMILARITY: f32 = 0.25;
/// Cosine of two query vectors that counts as no similarity; cosines above
/// it are rescaled to `0..=1` (MiniLM puts unrelated sentences near 0.1–0.3
/// and paraphrases above 0.7).
const COSINE_FLOOR: f32 = 0.5;
/// Share of the largest adjustment that a tool's record of successful calls
/// alone (whatever the query) can earn.
const PRIOR_SHARE: f32 = 0.0;

/// One tenant's signals (what is persisted).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct TenantSignals {
    tenant: String,
    associations: Vec<Association>,
    pending: VecDeque<PendingSearch>,
    zero_hit: Vec<ZeroHit>,
    tools: HashMap<String, ToolCounts>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Association {
    /// Analysed query terms, sorted and distinct.
    terms: Vec<String>,
    /// The query's vector, when a model embedded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    vector: Option<QueryVector>,
    tool: String,
    /// Weight as of `at`.
    weight: f32,
    at: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct PendingSearch {
    terms: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    vector: Option<QueryVector>,
    shown: Vec<String>,
    at: u64,
}

/// A unit query vector quantised to one signed byte per dimension (a
/// quarter of the memory, a cosine within about 0.01), kept as hex in files.
#[derive(Debug, Clone, PartialEq)]
struct QueryVector(Vec<i8>);

impl QueryVector {
    fn quantise(v: &[f32]) -> QueryVector {
        QueryVector(
            v.iter()
                .map(|x| (x * 127.0).round().clamp(-127.0, 127.0) as i8)
                .collect(),
        )
    }

    /// Cosine with a unit vector `q`.
    fn cosine(&self, q: &[f32]) -> f32 {
        if self.0.len() != q.len() {
            return 0.0;
        }
        let (dot, norm) = self
            .0
            .iter()
            .zip(q)
            .fold((0.0f32, 0.0f32), |(dot, norm), (&a, &b)| {
                let a = f32::from(a);
                (dot + a * b, norm + a * a)
            });
        if norm == 0.0 { 0.0 } else { dot / norm.sqrt() }
    }
}

impl Serialize for QueryVector {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = self.0.iter().map(|&x| x as u8).collect();
        serializer.serialize_str(&hex::encode(bytes))
    }
}

impl<'de> Deserialize<'de> for QueryVector {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        let bytes = hex::decode(text).map_err(serde::de::Error::custom)?;
        Ok(QueryVector(bytes.into_iter().map(|b| b as i8).collect()))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct ZeroHit {
    query: String,
    count: u32,
    at: u64,
}

/// What happened to one tool for a tenant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCounts {
    /// Times shown in search results.
    pub shown: u32,
    /// Times described.
    pub described: u32,
    /// Calls that succeeded.
    pub succeeded: u32,
    /// Calls that failed.
    pub failed: u32,
    /// Last event, seconds since the epoch.
    pub at: u64,
}

/// What `quiver ctl search stats` shows for a tenant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TenantStats {
    /// The tenant.
    pub tenant: String,
    /// Queries that found nothing, most frequent first.
    pub zero_hit_queries: Vec<ZeroHitQuery>,
    /// Tools shown by searches but never called, most shown first.
    pub found_never_called: Vec<UncalledTool>,
    /// Query → tool associations held.
    pub associations: usize,
}

/// A query that found nothing, and how often it was asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZeroHitQuery {
    /// The query as sent (trimmed).
    pub query: String,
    /// Times asked.
    pub count: u32,
}

/// A tool searches showed that was never called.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UncalledTool {
    /// `server/tool`.
    pub tool: String,
    /// Times shown in search results.
    pub shown: u32,
}

/// Per-tenant outcome signals, optionally persisted in a directory.
#[derive(Debug)]
pub struct SignalStore {
    dir: Option<PathBuf>,
    config: SignalConfig,
    tenants: Mutex<HashMap<String, TenantSignals>>,
    /// Tenants changed since their file was last written.
    dirty: Mutex<HashSet<String>>,
    /// Held while files are written or removed, so that an older snapshot
    /// never lands after a newer one or after a reset.
    disk: Mutex<()>,
}

impl SignalStore {
    /// A store in memory only.
    pub fn in_memory(config: SignalConfig) -> SignalStore {
        SignalStore {
            dir: None,
            config,
            tenants: Mutex::default(),
            dirty: Mutex::default(),
            disk: Mutex::default(),
        }
    }

    /// The store persisted in `dir` (created if missing), with every tenant
    /// file in it loaded. A file that does not parse is skipped and named in
    /// the log (it is replaced at that tenant's next save).
    pub fn open(dir: &Path, config: SignalConfig) -> anyhow::Result<SignalStore> {
        use anyhow::Context;
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the search signals directory {}", dir.display()))?;
        let mut tenants = HashMap::new();
        for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
            let path = entry?.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let parsed = std::fs::read(&path)
                .map_err(anyhow::Error::from)
                .and_then(|b| Ok(serde_json::from_slice::<TenantSignals>(&b)?));
            match parsed {
                Ok(signals) => {
                    tenants.insert(signals.tenant.clone(), signals);
                }
                Err(e) => tracing::warn!("search signals: skipping {}: {e:#}", path.display()),
            }
        }
        Ok(SignalStore {
            dir: Some(dir.to_owned()),
            config,
            tenants: Mutex::new(tenants),
            dirty: Mutex::default(),
            disk: Mutex::default(),
        })
    }

    /// Records a search and the tools it showed (`server/tool`), best first.
    pub fn record_search(&self, tenant: &str, query: &str, shown: &[String], now: u64) {
        self.record_embedded_search(tenant, query, None, shown, now);
    }

    /// Like [`SignalStore::record_search`], with the query's unit vector
    /// (from the search itself), so that later queries worded differently
    /// but meaning the same learn from this one.
    pub fn record_embedded_search(
        &self,
        tenant: &str,
        query: &str,
        vector: Option<&[f32]>,
        shown: &[String],
        now: u64,
    ) {
        let terms = query_terms(query);
        let vector = vector.map(QueryVector::quantise);
        let config = self.config;
        self.update(tenant, |t| {
            if shown.is_empty() {
                let query = query.trim().to_owned();
                match t.zero_hit.iter_mut().find(|z| z.query == query) {
                    Some(z) => {
                        z.count += 1;
                        z.at = now;
                    }
                    None => {
                        if t.zero_hit.len() >= config.max_zero_hit {
                            let oldest = (0..t.zero_hit.len()).min_by_key(|&i| t.zero_hit[i].at);
                            if let Some(i) = oldest {
                                t.zero_hit.swap_remove(i);
                            }
                        }
                        t.zero_hit.push(ZeroHit {
                            query,
                            count: 1,
                            at: now,
                        });
                    }
                }
                return;
            }
            for tool in shown {
                counts(t, tool, now, config.max_tools).shown += 1;
            }
            if t.pending.len() >= config.max_pending {
                t.pending.pop_front();
            }
            t.pending.push_back(PendingSearch {
                terms,
                vector,
                shown: shown.to_vec(),
                at: now,
            });
        });
    }

    /// Records a `describe` of `tool`.
    pub fn record_describe(&self, tenant: &str, tool: &str, now: u64) {
        let config = self.config;
        self.update(tenant, |t| {
            counts(t, tool, now, config.max_tools).described += 1;
            if let Some(search) =
                matching_search(t, tool, now, config.call_window_secs).map(|(s, _)| s.clone())
            {
                associate(t, &config, &search, tool, DESCRIBED, now);
            }
        });
    }

    /// Records a call of `tool` and whether it succeeded. The latest search
    /// that showed the tool learns from it; tools it showed above this one
    /// were passed over.
    pub fn record_call(&self, tenant: &str, tool: &str, success: bool, now: u64) {
        let config = self.config;
        self.update(tenant, |t| {
            let c = counts(t, tool, now, config.max_tools);
            if success {
                c.succeeded += 1;
            } else {
                c.failed += 1;
            }
            let Some((search, position)) =
                matching_search(t, tool, now, config.call_window_secs).map(|(s, p)| (s.clone(), p))
            else {
                return;
            };
            let weight = if success { SUCCESS } else { FAILURE };
            associate(t, &config, &search, tool, weight, now);
            if success {
                for other in &search.shown[..position] {
                    associate(t, &config, &search, other, PASSED_OVER, now);
                }
            }
        });
    }

    /// The adjustment of each tool's score (`server/tool` → value in
    /// `-max..=max`) for `query` by `tenant`; tools not named are unchanged.
    pub fn adjustments(&self, tenant: &str, query: &str, now: u64) -> HashMap<String, f32> {
        self.embedded_adjustments(tenant, query, None, now)
    }

    /// Like [`SignalStore::adjustments`], with the query's unit vector:
    /// past queries count by meaning as well as by shared words.
    pub fn embedded_adjustments(
        &self,
        tenant: &str,
        query: &str,
        vector: Option<&[f32]>,
        now: u64,
    ) -> HashMap<String, f32> {
        let terms = query_terms(query);
        let tenants = self.lock();
        let Some(t) = tenants.get(tenant) else {
            return HashMap::new();
        };
        let mut raw: HashMap<&str, f32> = HashMap::new();
        for a in &t.associations {
            let mut similarity = jaccard(&terms, &a.terms);
            if let (Some(q), Some(past)) = (vector, &a.vector) {
                let semantic = (past.cosine(q) - COSINE_FLOOR) / (1.0 - COSINE_FLOOR);
                similarity = similarity.max(semantic);
            }
            if similarity >= MIN_SIMILARITY {
                *raw.entry(&a.tool).or_default() +=
                    similarity * decayed(a.weight, a.at, now, &self.config);
            }
        }
        let max = self.config.max_adjustment;
        let mut out: HashMap<String, f32> = raw
            .into_iter()
            .map(|(tool, v)| (tool.to_owned(), (1.0 - PRIOR_SHARE) * max * v.tanh()))
            .collect();
        // A tool that keeps working for this tenant earns a little whatever
        // the query; the lexical and semantic match still decide relevance.
        for (tool, c) in &t.tools {
            if c.succeeded > 0 {
                let record = (c.succeeded as f32 - c.failed as f32).max(0.0);
                let prior = PRIOR_SHARE * max * (record / (record + 3.0));
                let prior = decayed(prior, c.at, now, &self.config);
                if prior > 0.0 {
                    *out.entry(tool.clone()).or_default() += prior;
                }
            }
        }
        out
    }

    /// Zero-hit queries and tools found but never called, for `tenant`.
    pub fn stats(&self, tenant: &str) -> TenantStats {
        let tenants = self.lock();
        let Some(t) = tenants.get(tenant) else {
            return TenantStats {
                tenant: tenant.to_owned(),
                ..TenantStats::default()
            };
        };
        let mut zero_hit: Vec<ZeroHitQuery> = t
            .zero_hit
            .iter()
            .map(|z| ZeroHitQuery {
                query: z.query.clone(),
                count: z.count,
            })
            .collect();
        zero_hit.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.query.cmp(&b.query)));
        let mut never: Vec<UncalledTool> = t
            .tools
            .iter()
            .filter(|(_, c)| c.shown > 0 && c.succeeded + c.failed == 0)
            .map(|(tool, c)| UncalledTool {
                tool: tool.clone(),
                shown: c.shown,
            })
            .collect();
        never.sort_by(|a, b| b.shown.cmp(&a.shown).then_with(|| a.tool.cmp(&b.tool)));
        TenantStats {
            tenant: tenant.to_owned(),
            zero_hit_queries: zero_hit,
            found_never_called: never,
            associations: t.associations.len(),
        }
    }

    /// Tenants with signals, sorted.
    pub fn tenants(&self) -> Vec<String> {
        let mut names: Vec<String> = self.lock().keys().cloned().collect();
        names.sort();
        names
    }

    /// Forgets everything learned for `tenant`, on disk too.
    pub fn reset(&self, tenant: &str) -> anyhow::Result<()> {
        let _disk = lock(&self.disk);
        self.lock().remove(tenant);
        lock(&self.dirty).remove(tenant);
        if let Some(path) = self.path_of(tenant) {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(anyhow::anyhow!("removing {}: {e}", path.display()));
                }
            }
        }
        Ok(())
    }

    /// Writes the signals of every tenant changed since its last write
    /// (nothing for a store in memory). A tenant whose file cannot be
    /// written stays marked and is tried again at the next flush.
    pub fn flush(&self) -> anyhow::Result<()> {
        if self.dir.is_none() {
            return Ok(());
        }
        let _disk = lock(&self.disk);
        let changed: Vec<String> = lock(&self.dirty).drain().collect();
        let mut first_error = None;
        for tenant in changed {
            // Serialised under the lock, written outside it: a search waits
            // for a copy, never for the disk.
            let Some(bytes) = self.lock().get(&tenant).map(serde_json::to_vec) else {
                continue;
            };
            let written = bytes
                .map_err(anyhow::Error::from)
                .and_then(|bytes| self.write(&tenant, &bytes));
            if let Err(e) = written {
                lock(&self.dirty).insert(tenant);
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn update(&self, tenant: &str, f: impl FnOnce(&mut TenantSignals)) {
        let mut tenants = self.lock();
        let t = tenants
            .entry(tenant.to_owned())
            .or_insert_with(|| TenantSignals {
                tenant: tenant.to_owned(),
                ..TenantSignals::default()
            });
        f(t);
        drop(tenants);
        if self.dir.is_some() {
            let mut dirty = lock(&self.dirty);
            if !dirty.contains(tenant) {
                dirty.insert(tenant.to_owned());
            }
        }
    }

    fn write(&self, tenant: &str, bytes: &[u8]) -> anyhow::Result<()> {
        let Some(path) = self.path_of(tenant) else {
            return Ok(());
        };
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, bytes)
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &path)
            .map_err(|e| anyhow::anyhow!("renaming {}: {e}", tmp.display()))?;
        Ok(())
    }

    /// One file per tenant, named by a hash so any tenant name is a safe file name.
    fn path_of(&self, tenant: &str) -> Option<PathBuf> {
        let digest = Sha256::digest(tenant.as_bytes());
        let dir = self.dir.as_ref()?;
        Some(dir.join(format!("{}.json", hex::encode(&digest[..12]))))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, TenantSignals>> {
        lock(&self.tenants)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

static INSTALLED: OnceLock<Arc<SignalStore>> = OnceLock::new();

/// Opens this process's store once (in `dir`, or in memory when `None`);
/// later calls return the first. A directory that cannot be used is logged
/// and the store is kept in memory. A persisted store gets a flusher thread
/// writing changed tenants every `flush_every` (at most one write per tenant
/// per interval, whatever the search rate; a crash loses at most that much);
/// call [`flush_installed`] at shutdown for the last changes.
pub fn install(dir: Option<&Path>, flush_every: Duration) -> Arc<SignalStore> {
    INSTALLED
        .get_or_init(|| {
            let store = match dir {
                Some(dir) => SignalStore::open(dir, SignalConfig::default()).unwrap_or_else(|e| {
                    tracing::warn!("search signals kept in memory only: {e:#}");
                    SignalStore::in_memory(SignalConfig::default())
                }),
                None => SignalStore::in_memory(SignalConfig::default()),
            };
            let store = Arc::new(store);
            if store.dir.is_some() {
                spawn_flusher(Arc::downgrade(&store), flush_every);
            }
            store
        })
        .clone()
}

/// Writes `store`'s changed tenants every `interval` until it is dropped.
fn spawn_flusher(store: Weak<SignalStore>, interval: Duration) {
    let spawned = std::thread::Builder::new()
        .name("search-signals".into())
        .spawn(move || {
            loop {
                std::thread::sleep(interval);
                let Some(store) = store.upgrade() else {
                    return;
                };
                if let Err(e) = store.flush() {
                    tracing::warn!("search signals not saved (retrying): {e:#}");
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("search signals are written only at shutdown: no flusher thread ({e})");
    }
}

/// The store [`install`]ed in this process, if any.
pub fn installed() -> Option<Arc<SignalStore>> {
    INSTALLED.get().cloned()
}

/// Writes the installed store's last changes (at shutdown); failures are logged.
pub fn flush_installed() {
    if let Some(store) = installed()
        && let Err(e) = store.flush()
    {
        tracing::warn!("search signals: the last changes were not saved: {e:#}");
    }
}

/// Seconds since the Unix epoch (signals are stamped with it).
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn counts<'a>(t: &'a mut TenantSignals, tool: &str, now: u64, max: usize) -> &'a mut ToolCounts {
    if !t.tools.contains_key(tool) && t.tools.len() >= max {
        // Forget the tool least recently seen.
        if let Some(oldest) = t
            .tools
            .iter()
            .min_by_key(|(_, c)| c.at)
            .map(|(k, _)| k.clone())
        {
            t.tools.remove(&oldest);
        }
    }
    let c = t.tools.entry(tool.to_owned()).or_default();
    c.at = now;
    c
}

/// The latest search within the window that showed `tool`, and its position.
fn matching_search<'a>(
    t: &'a TenantSignals,
    tool: &str,
    now: u64,
    window: u64,
) -> Option<(&'a PendingSearch, usize)> {
    t.pending
        .iter()
        .rev()
        .filter(|s| now.saturating_sub(s.at) <= window)
        .find_map(|s| s.shown.iter().position(|x| x == tool).map(|p| (s, p)))
}

fn associate(
    t: &mut TenantSignals,
    config: &SignalConfig,
    search: &PendingSearch,
    tool: &str,
    weight: f32,
    now: u64,
) {
    if search.terms.is_empty() && search.vector.is_none() {
        return;
    }
    if let Some(a) = t
        .associations
        .iter_mut()
        .find(|a| a.tool == tool && a.terms == search.terms && a.vector == search.vector)
    {
        a.weight = decayed(a.weight, a.at, now, config) + weight;
        a.at = now;
        return;
    }
    if t.associations.len() >= config.max_associations {
        // Forget the association that says least today.
        let weakest = (0..t.associations.len()).min_by(|&i, &j| {
            let w = |k: usize| {
                decayed(t.associations[k].weight, t.associations[k].at, now, config).abs()
            };
            w(i).total_cmp(&w(j))
        });
        if let Some(i) = weakest {
            t.associations.swap_remove(i);
        }
    }
    t.associations.push(Association {
        terms: search.terms.clone(),
        vector: search.vector.clone(),
        tool: tool.to_owned(),
        weight,
        at: now,
    });
}

fn decayed(weight: f32, at: u64, now: u64, config: &SignalConfig) -> f32 {
    let age = now.saturating_sub(at) as f64;
    (weight as f64 * 0.5f64.powf(age / config.half_life_secs)) as f32
}

/// Analysed terms of a query, sorted and distinct.
fn query_terms(query: &str) -> Vec<String> {
    let mut terms = Vec::new();
    Analyzer::new().analyze(query, |term, _| terms.push(term.to_owned()));
    terms.sort_unstable();
    terms.dedup();
    terms
}

fn jaccard(a: &[String], b: &[String]) -> f32 {
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let common = a.iter().filter(|t| b.binary_search(t).is_ok()).count();
    common as f32 / (a.len() + b.len() - common) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: u64 = 86_400;

    fn shown(tools: &[&str]) -> Vec<String> {
        tools.iter().map(|t| (*t).to_owned()).collect()
    }

    #[test]
    fn a_successful_call_lifts_the_tool_for_similar_queries_of_that_tenant_only() {
        let store = SignalStore::in_memory(SignalConfig::default());
        let now = 1_000 * DAY;
        store.record_search(
            "a",
            "convert a word document to pdf",
            &shown(&["x/docx", "x/pdf"]),
            now,
        );
        store.record_call("a", "x/pdf", true, now + 5);
        let a = store.adjustments("a", "convert word document into pdf", now + 10);
        assert!(a["x/pdf"] > 0.0, "{a:?}");
        // Shown above the tool that worked: passed over.
        assert!(a["x/docx"] < 0.0, "{a:?}");
        assert!(
            a.values()
                .all(|v| v.abs() <= SignalConfig::default().max_adjustment)
        );
        // Another tenant is untouched.
        assert!(
            store
                .adjustments("b", "convert word document into pdf", now + 10)
                .is_empty()
        );
        // An unrelated query gets only the small per-tool prior.
        let other = store.adjustments("a", "weather in paris", now + 10);
        assert!(other.get("x/pdf").copied().unwrap_or(0.0) < a["x/pdf"]);
        assert!(!other.contains_key("x/docx"));
    }

    /// A unit vector along `axis` tilted towards `other` by `tilt`.
    fn unit(axis: usize, other: usize, tilt: f32) -> Vec<f32> {
        let mut v = [0.0f32; 8];
        v[axis] = 1.0;
        v[other] += tilt;
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / norm).collect()
    }

    #[test]
    fn embedded_queries_learn_from_past_queries_that_mean_the_same_in_other_words() {
        let store = SignalStore::in_memory(SignalConfig::default());
        let now = 1_000 * DAY;
        let asked = unit(0, 1, 0.0);
        store.record_embedded_search(
            "a",
            "forecast tomorrow",
            Some(&asked),
            &shown(&["w/f"]),
            now,
        );
        store.record_call("a", "w/f", true, now);
        // No word in common; a cosine of about 0.95: the same question.
        let paraphrase = unit(0, 1, 0.33);
        let near = store.embedded_adjustments("a", "will it rain", Some(&paraphrase), now);
        assert!(near["w/f"] > 0.0, "{near:?}");
        // Without vectors only the words count: nothing.
        assert!(store.adjustments("a", "will it rain", now).is_empty());
        // An unrelated meaning (cosine 0) teaches nothing either.
        let unrelated = unit(2, 3, 0.0);
        assert!(
            store
                .embedded_adjustments("a", "will it rain", Some(&unrelated), now)
                .is_empty()
        );
        // Nor another tenant.
        assert!(
            store
                .embedded_adjustments("b", "will it rain", Some(&paraphrase), now)
                .is_empty()
        );
    }

    #[test]
    fn query_vectors_survive_a_round_trip_through_a_file() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let now = 1_000 * DAY;
        let v = unit(1, 4, 0.2);
        {
            let store = SignalStore::open(dir.path(), SignalConfig::default())?;
            store.record_embedded_search("a", "alpha", Some(&v), &shown(&["s/t"]), now);
            store.record_call("a", "s/t", true, now);
            store.flush()?;
        }
        let store = SignalStore::open(dir.path(), SignalConfig::default())?;
        let a = store.embedded_adjustments("a", "omega", Some(&v), now);
        assert!(a["s/t"] > 0.0, "{a:?}");
        Ok(())
    }

    #[test]
    fn failures_push_down_and_signals_fade() {
        let store = SignalStore::in_memory(SignalConfig::default());
        let now = 1_000 * DAY;
        store.record_search("a", "send an email", &shown(&["m/send"]), now);
        store.record_call("a", "m/send", false, now);
        assert!(store.adjustments("a", "send an email", now)["m/send"] < 0.0);
        store.record_search("a", "list files", &shown(&["f/ls"]), now);
        store.record_call("a", "f/ls", true, now);
        let fresh = store.adjustments("a", "list files", now)["f/ls"];
        let later = store.adjustments("a", "list files", now + 28 * DAY)["f/ls"];
        assert!(later > 0.0 && later < fresh * 0.5, "{fresh} then {later}");
    }

    #[test]
    fn a_call_long_after_the_search_teaches_nothing_about_the_query() {
        let store = SignalStore::in_memory(SignalConfig::default());
        store.record_search("a", "list files", &shown(&["f/ls"]), 0);
        store.record_call("a", "f/ls", true, 10_000);
        assert_eq!(store.stats("a").associations, 0);
    }

    #[test]
    fn memory_is_bounded() {
        let config = SignalConfig {
            max_associations: 16,
            max_pending: 4,
            max_zero_hit: 8,
            max_tools: 32,
            ..SignalConfig::default()
        };
        let store = SignalStore::in_memory(config);
        for i in 0..500u64 {
            let tool = format!("s/t{i}");
            store.record_search(
                "a",
                &format!("query number {i} word{i}"),
                std::slice::from_ref(&tool),
                i,
            );
            store.record_call("a", &tool, true, i);
            store.record_search("a", &format!("nothing {i}"), &[], i);
        }
        let tenants = store.lock();
        let t = &tenants["a"];
        assert!(t.associations.len() <= 16);
        assert!(t.pending.len() <= 4);
        assert!(t.zero_hit.len() <= 8);
        assert!(t.tools.len() <= 32);
    }

    #[test]
    fn signals_persist_and_reset_removes_them() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let now = 1_000 * DAY;
        {
            let store = SignalStore::open(dir.path(), SignalConfig::default())?;
            store.record_search(
                "tenant/with odd name",
                "create an issue",
                &shown(&["gh/create", "gh/list"]),
                now,
            );
            store.record_search("tenant/with odd name", "qwxz", &[], now);
            store.record_call("tenant/with odd name", "gh/create", true, now);
            store.record_search("b", "create an issue", &shown(&["gh/list"]), now);
            store.flush()?;
        }
        let store = SignalStore::open(dir.path(), SignalConfig::default())?;
        assert_eq!(store.tenants(), ["b", "tenant/with odd name"]);
        assert!(store.adjustments("tenant/with odd name", "create issue", now)["gh/create"] > 0.0);
        let stats = store.stats("tenant/with odd name");
        assert_eq!(
            stats.zero_hit_queries,
            [ZeroHitQuery {
                query: "qwxz".into(),
                count: 1
            }]
        );
        assert_eq!(
            stats.found_never_called,
            [UncalledTool {
                tool: "gh/list".into(),
                shown: 1
            }]
        );
        store.reset("tenant/with odd name")?;
        assert!(
            store
                .adjustments("tenant/with odd name", "create issue", now)
                .is_empty()
        );
        let store = SignalStore::open(dir.path(), SignalConfig::default())?;
        assert_eq!(store.tenants(), ["b"]);
        Ok(())
    }

    #[test]
    fn searches_alone_reach_disk_at_the_next_flush_and_nothing_before() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let store = SignalStore::open(dir.path(), SignalConfig::default())?;
        store.record_search("a", "nothing matches this", &[], 5);
        store.record_search("a", "weather", &shown(&["w/now"]), 5);
        // Recording never writes: the search path does not wait for the disk.
        assert_eq!(std::fs::read_dir(dir.path())?.count(), 0);
        store.flush()?;
        let files = || -> anyhow::Result<Vec<PathBuf>> {
            Ok(std::fs::read_dir(dir.path())?
                .map(|e| e.map(|e| e.path()))
                .collect::<Result<_, _>>()?)
        };
        let written = files()?;
        assert_eq!(written.len(), 1, "{written:?}");
        let saved = std::fs::read(&written[0])?;
        // Nothing changed since: the next flush writes nothing.
        std::fs::remove_file(&written[0])?;
        store.flush()?;
        assert!(files()?.is_empty());
        std::fs::write(&written[0], saved)?;
        let reopened = SignalStore::open(dir.path(), SignalConfig::default())?;
        let stats = reopened.stats("a");
        assert_eq!(stats.zero_hit_queries[0].query, "nothing matches this");
        assert_eq!(stats.found_never_called[0].tool, "w/now");
        Ok(())
    }

    #[test]
    fn a_flush_after_a_reset_does_not_bring_the_tenant_back() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let store = SignalStore::open(dir.path(), SignalConfig::default())?;
        store.record_search("a", "qwxz", &[], 5);
        store.flush()?;
        store.record_search("a", "qwxz again", &[], 6);
        store.reset("a")?;
        store.flush()?;
        assert_eq!(std::fs::read_dir(dir.path())?.count(), 0);
        assert!(
            SignalStore::open(dir.path(), SignalConfig::default())?
                .tenants()
                .is_empty()
        );
        Ok(())
    }
}
