//! The semantic side of search: an [`Embedder`] plus the [`VectorCache`] of
//! tool vectors, one per process, shared by every view. It turns tools and
//! queries into vectors; ranking with them is [`super::HybridIndex`]'s job.
//!
//! A process installs its model once at start ([`install`]); views built
//! afterwards rank semantically. Without a model (none configured, files
//! missing, or a build without the `semantic` feature) search is lexical and
//! the reason is logged once.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex, OnceLock, Weak, mpsc},
    time::Instant,
};

use super::{
    SearchDoc,
    adapter::QueryAdapter,
    embedder::{Embedder, EmbedderError},
    vector_cache::{VectorCache, VectorCacheError, VectorKey, vector_key},
};
use crate::error_chain::ErrorChain;

/// Characters of a description that go into a tool's embedding text.
const DESCRIPTION_CHARS: usize = 600;

/// Definitions embedded between two checks that a background build is
/// still wanted (and two appends to the cache).
const BACKGROUND_CHUNK: usize = 64;

/// Query vectors kept, by query text: agents repeat searches (and scripts
/// search in loops), and a query's embedding costs milliseconds.
const QUERY_CACHE: usize = 1024;

/// Longest query (bytes) whose vector is kept: the cache's memory stays
/// bounded whatever clients search for (the model reads 64 tokens anyway).
const MAX_CACHED_QUERY: usize = 1024;

/// Why a model and its vector cache could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SemanticModelError {
    /// The model could not be loaded.
    #[error(transparent)]
    Embedder(#[from] EmbedderError),
    /// The vector cache could not be opened.
    #[error(transparent)]
    Cache(#[from] VectorCacheError),
}

/// A loaded model and its vector cache.
#[derive(Debug)]
pub struct SemanticModel {
    embedder: Embedder,
    cache: VectorCache,
    /// Jobs for the background thread that embeds new definitions (started
    /// on first use).
    background: Mutex<Option<mpsc::Sender<BackgroundJob>>>,
    /// Recent query vectors, by text (at most `query_cache_size`).
    queries: Mutex<QueryVectors>,
    query_cache_size: usize,
    /// Applied to every query vector (the shipped one when it was trained
    /// for this model).
    adapter: Option<QueryAdapter>,
}

/// Recent query vectors, oldest first out.
#[derive(Debug, Default)]
struct QueryVectors {
    vectors: std::collections::HashMap<String, Arc<[f32]>>,
    order: std::collections::VecDeque<String>,
}

/// Vectors a view waits for: built off the request path, in order.
struct BackgroundJob {
    texts: Vec<String>,
    /// The cache keys of `texts`.
    keys: Vec<VectorKey>,
    /// Whether the view still exists (a newer manifest may have replaced it).
    wanted: Box<dyn Fn() -> bool + Send>,
    /// Receives the `texts.len() × dim` matrix.
    ready: Box<dyn FnOnce(Vec<f32>) + Send>,
}

impl SemanticModel {
    /// Loads the model in `model_dir`; vectors are cached under `cache_dir`
    /// (in memory only when `None`).
    pub fn load(
        model_dir: &Path,
        cache_dir: Option<&Path>,
    ) -> Result<SemanticModel, SemanticModelError> {
        let embedder = Embedder::load(model_dir)?;
        let cache = match cache_dir {
            Some(dir) => VectorCache::open(dir, embedder.id(), embedder.dim())?,
            None => VectorCache::in_memory(embedder.dim()),
        };
        // The shipped adapter was trained for one model; another model
        // runs without it.
        let adapter = QueryAdapter::shipped()
            .ok()
            .filter(|a| a.model() == embedder.id() && a.dim() == embedder.dim());
        Ok(SemanticModel {
            embedder,
            cache,
            background: Mutex::new(None),
            queries: Mutex::default(),
            query_cache_size: QUERY_CACHE,
            adapter,
        })
    }

    /// The same model with `adapter` on its queries (`None`: raw query
    /// vectors). An adapter of another length is not applied.
    pub fn with_adapter(mut self, adapter: Option<QueryAdapter>) -> SemanticModel {
        self.adapter = adapter.filter(|a| a.dim() == self.embedder.dim());
        self.queries = Mutex::default();
        self
    }

    /// The adapter applied to queries, if any.
    pub fn adapter(&self) -> Option<&QueryAdapter> {
        self.adapter.as_ref()
    }

    /// The same model keeping at most `entries` query vectors (0: none, so
    /// that every query is embedded, as benchmarks of the embedding need).
    pub fn with_query_cache(mut self, entries: usize) -> SemanticModel {
        self.query_cache_size = entries;
        self
    }

    /// The embedder.
    pub fn embedder(&self) -> &Embedder {
        &self.embedder
    }

    /// The vector cache.
    pub fn cache(&self) -> &VectorCache {
        &self.cache
    }

    /// Length of every vector.
    pub fn dim(&self) -> usize {
        self.embedder.dim()
    }

    /// The vectors of `docs`, row after row (`docs.len() × dim`): from the
    /// cache where a tool's text was embedded before, computed (and cached)
    /// otherwise, on the calling thread.
    pub fn doc_vectors(&self, docs: &[SearchDoc]) -> Result<Vec<f32>, EmbedderError> {
        let texts = self.document_texts(docs);
        let keys = self.keys(&texts);
        self.embed_missing(&texts, &keys, usize::MAX, || true)?;
        self.assemble(&keys)
            .ok_or_else(|| EmbedderError::Run("a tool vector went missing".into()))
    }

    /// The vectors of `docs` now if every one is cached already; otherwise
    /// `None`, and this model's background thread builds them (jobs in the
    /// order given) and hands the matrix to `ready`. `wanted` is asked
    /// between chunks: once it says no (the view was replaced), the rest is
    /// left to whoever wants it next; what was embedded stays cached. A
    /// failure is logged and `ready` is never called (the view stays
    /// lexical).
    pub fn vectors_now_or_later(
        self: &Arc<Self>,
        docs: &[SearchDoc],
        wanted: impl Fn() -> bool + Send + 'static,
        ready: impl FnOnce(Vec<f32>) + Send + 'static,
    ) -> Option<Vec<f32>> {
        let texts = self.document_texts(docs);
        let keys = self.keys(&texts);
        if let Some(matrix) = self.assemble(&keys) {
            return Some(matrix);
        }
        let job = BackgroundJob {
            texts,
            keys,
            wanted: Box::new(wanted),
            ready: Box::new(ready),
        };
        let mut background = self.background.lock().unwrap_or_else(|e| e.into_inner());
        let job = match background.as_ref() {
            None => job,
            Some(jobs) => match jobs.send(job) {
                Ok(()) => return None,
                Err(mpsc::SendError(job)) => job,
            },
        };
        let (jobs, queue) = mpsc::channel::<BackgroundJob>();
        let model = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name("quiver-embed".into())
            .spawn(move || background_thread(model, queue));
        match spawned {
            Ok(_) => {
                let _ = jobs.send(job);
                *background = Some(jobs);
            }
            Err(e) => {
                tracing::warn!("search: no thread to embed tools on ({e}); ranking lexically")
            }
        }
        None
    }

    /// What is embedded for each tool, marked as the model wants.
    pub(crate) fn document_texts(&self, docs: &[SearchDoc]) -> Vec<String> {
        let prefix = &self.embedder.inputs().document_prefix;
        docs.iter()
            .map(|doc| format!("{prefix}{}", embedding_text(doc)))
            .collect()
    }

    fn keys(&self, texts: &[String]) -> Vec<VectorKey> {
        texts
            .iter()
            .map(|t| vector_key(self.embedder.id(), t))
            .collect()
    }

    /// Embeds and caches the texts whose vectors are not cached, `chunk` at
    /// a time while `wanted()`; returns how many were embedded.
    fn embed_missing(
        &self,
        texts: &[String],
        keys: &[VectorKey],
        chunk: usize,
        wanted: impl Fn() -> bool,
    ) -> Result<usize, EmbedderError> {
        let mut seen = std::collections::HashSet::new();
        let mut missing: Vec<usize> = (0..keys.len())
            .filter(|&i| self.cache.get(&keys[i]).is_none() && seen.insert(keys[i]))
            .collect();
        // Similar lengths in one chunk: a batch pads to its longest text.
        missing.sort_by_key(|&i| texts[i].len());
        let mut embedded = 0;
        for part in missing.chunks(chunk.max(1)) {
            if !wanted() {
                break;
            }
            let batch: Vec<&str> = part.iter().map(|&i| texts[i].as_str()).collect();
            let vectors = self.embedder.embed(&batch)?;
            let entries = part.iter().map(|&i| keys[i]).zip(vectors).collect();
            if let Err(e) = self.cache.insert(entries) {
                tracing::warn!("search: tool vectors not saved to disk: {}", ErrorChain(&e));
            }
            embedded += part.len();
        }
        Ok(embedded)
    }

    /// The cached vectors of `keys`, row after row; `None` if one is missing.
    fn assemble(&self, keys: &[VectorKey]) -> Option<Vec<f32>> {
        let mut matrix = Vec::with_capacity(keys.len() * self.dim());
        for key in keys {
            matrix.extend_from_slice(&self.cache.get(key)?);
        }
        Some(matrix)
    }

    /// Query vectors kept now.
    pub fn cached_queries(&self) -> usize {
        self.queries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .vectors
            .len()
    }

    /// The vector a query is ranked with: the model's, through the query
    /// adapter when there is one.
    pub fn query_vector(&self, query: &str) -> Result<Vec<f32>, EmbedderError> {
        Ok(self.query_vectors(query)?.0)
    }

    /// The vector a query is ranked with and the model's own (the same
    /// without an adapter). Queries are compared with past queries (search
    /// signals) by the model's own vectors: the adapter is learned for
    /// queries against tools, and its signal settings were chosen on the
    /// model's space.
    pub fn query_vectors(&self, query: &str) -> Result<(Vec<f32>, Vec<f32>), EmbedderError> {
        let raw = self.raw_query_vector(query)?;
        let ranked = match &self.adapter {
            Some(adapter) => adapter.apply(&raw),
            None => raw.clone(),
        };
        Ok((ranked, raw))
    }

    /// The model's vector of a query. Repeated queries come from a small
    /// cache of recent ones.
    fn raw_query_vector(&self, query: &str) -> Result<Vec<f32>, EmbedderError> {
        if self.query_cache_size > 0 {
            let queries = self.queries.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(vector) = queries.vectors.get(query) {
                return Ok(vector.to_vec());
            }
        }
        let prefix = &self.embedder.inputs().query_prefix;
        let vector = if prefix.is_empty() {
            self.embedder.embed_one(query)?
        } else {
            self.embedder.embed_one(&format!("{prefix}{query}"))?
        };
        if self.query_cache_size > 0 && query.len() <= MAX_CACHED_QUERY {
            let mut queries = self.queries.lock().unwrap_or_else(|e| e.into_inner());
            if !queries.vectors.contains_key(query) {
                while queries.order.len() >= self.query_cache_size {
                    if let Some(oldest) = queries.order.pop_front() {
                        queries.vectors.remove(&oldest);
                    }
                }
                queries.order.push_back(query.to_owned());
                queries
                    .vectors
                    .insert(query.to_owned(), vector.as_slice().into());
            }
        }
        Ok(vector)
    }
}

/// Runs background jobs until the model is dropped.
fn background_thread(model: Weak<SemanticModel>, queue: mpsc::Receiver<BackgroundJob>) {
    while let Ok(job) = queue.recv() {
        let Some(model) = model.upgrade() else {
            return;
        };
        if !(job.wanted)() {
            continue;
        }
        let started = Instant::now();
        let outcome = model.embed_missing(&job.texts, &job.keys, BACKGROUND_CHUNK, &job.wanted);
        match outcome {
            Err(e) => tracing::warn!("search: tool vectors failed, ranking lexically: {e}"),
            Ok(embedded) => {
                if embedded > 0 {
                    tracing::info!(
                        "search: embedded {embedded} tool definitions in {:.1} s",
                        started.elapsed().as_secs_f64()
                    );
                }
                // Not all there: the view was replaced part way.
                if let Some(matrix) = model.assemble(&job.keys) {
                    (job.ready)(matrix);
                }
            }
        }
    }
}

/// What is embedded for a tool: its name in words and its description (cut
/// to a few sentences). The server is left out so that one definition has
/// one vector wherever it is served.
pub fn embedding_text(doc: &SearchDoc) -> String {
    let name = doc.name.replace(['_', '-', '.'], " ");
    let description = doc.description.trim();
    let cut = match description.char_indices().nth(DESCRIPTION_CHARS) {
        Some((at, _)) => &description[..at],
        None => description,
    };
    if cut.is_empty() {
        name
    } else {
        format!("{name}: {cut}")
    }
}

static INSTALLED: OnceLock<Option<Arc<SemanticModel>>> = OnceLock::new();
static RANKING: OnceLock<String> = OnceLock::new();

/// Where `scripts/install-model.sh` puts the model: `$QUIVER_SEARCH_MODEL_DIR`,
/// else `${XDG_CACHE_HOME:-$HOME/.cache}/quiver/models/all-MiniLM-L6-v2`.
pub fn default_model_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("QUIVER_SEARCH_MODEL_DIR") {
        return Some(PathBuf::from(dir));
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(cache.join("quiver/models/all-MiniLM-L6-v2"))
}

/// Which sentence model a process ranks with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSetting {
    /// Lexical ranking even if a model is installed.
    Off,
    /// The model in [`default_model_dir`] when one is there, else lexical.
    Default,
    /// The model in this directory (lexical, with a warning, if it cannot
    /// be loaded).
    Dir(PathBuf),
}

impl ModelSetting {
    /// The setting for a configuration's `search_semantic` switch and
    /// `search_model_dir`.
    pub fn from_config(enabled: bool, dir: Option<&Path>) -> ModelSetting {
        match (enabled, dir) {
            (false, _) => ModelSetting::Off,
            (true, Some(dir)) => ModelSetting::Dir(dir.to_owned()),
            (true, None) => ModelSetting::Default,
        }
    }
}

/// Loads the model for this process, once; later calls return the first
/// outcome. A missing or damaged model means lexical ranking, never a failed
/// start. Either way the outcome is logged once and [`ranking`] says it.
///
/// `adapter` false runs queries without the shipped query adapter
/// (`search_adapter = false`).
pub fn install(
    setting: &ModelSetting,
    adapter: bool,
    cache_dir: Option<&Path>,
) -> Option<Arc<SemanticModel>> {
    INSTALLED
        .get_or_init(|| {
            let (model, summary) = load_for(setting, adapter, cache_dir);
            let _ = RANKING.set(summary);
            model
        })
        .clone()
}

/// The model a setting names, and one line saying which ranking serves.
fn load_for(
    setting: &ModelSetting,
    adapter: bool,
    cache_dir: Option<&Path>,
) -> (Option<Arc<SemanticModel>>, String) {
    let (dir, configured) = match setting {
        ModelSetting::Off => {
            let line = "lexical (semantic ranking turned off by `search_semantic = false`)";
            tracing::info!("search: {line}");
            return (None, line.to_owned());
        }
        ModelSetting::Dir(dir) => (dir.clone(), true),
        ModelSetting::Default => match default_model_dir() {
            Some(dir) => (dir, false),
            None => {
                let line = "lexical (no HOME to find the search model under)";
                tracing::info!("search: {line}");
                return (None, line.to_owned());
            }
        },
    };
    if !configured && !dir.exists() {
        let line = format!(
            "lexical (no search model at {}; scripts/install-model.sh installs one)",
            dir.display()
        );
        tracing::info!("search: {line}");
        return (None, line);
    }
    match SemanticModel::load(&dir, cache_dir) {
        Ok(model) => {
            let model = if adapter {
                model
            } else {
                model.with_adapter(None)
            };
            let queries = match (model.adapter(), adapter) {
                (Some(a), _) => format!("query adapter {}", a.name()),
                (None, false) => "no query adapter (`search_adapter = false`)".to_owned(),
                (None, true) => {
                    "no query adapter (the shipped one is for another model)".to_owned()
                }
            };
            let line = format!(
                "hybrid (lexical + semantic, model {}, {queries}, {} tool vectors cached)",
                dir.display(),
                model.cache().len()
            );
            tracing::debug!("search: encoder kernels {}", model.embedder().kernel());
            tracing::info!("search: {line}");
            let model = Arc::new(model);
            let counted = Arc::downgrade(&model);
            quiver_telemetry::tables::watch("search.query_vectors", QUERY_CACHE, move || {
                counted.upgrade().map(|m| m.cached_queries())
            });
            (Some(model), line)
        }
        Err(e) => {
            let line = format!(
                "lexical (the search model cannot be used: {}; scripts/install-model.sh reinstalls it)",
                ErrorChain(&e)
            );
            tracing::warn!("search: {line}");
            (None, line)
        }
    }
}

/// The model [`install`]ed in this process, if any.
pub fn installed() -> Option<Arc<SemanticModel>> {
    INSTALLED.get().cloned().flatten()
}

/// Which ranking this process serves, for start-up lines: `hybrid (…)` or
/// `lexical (why)`; `lexical` before [`install`].
pub fn ranking() -> &'static str {
    RANKING.get().map_or("lexical", String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedding_text_is_name_words_and_description() {
        let doc = SearchDoc {
            name: "get_stock-price".into(),
            server: "finance".into(),
            description: "Current price of a ticker.".into(),
            ..SearchDoc::default()
        };
        assert_eq!(
            embedding_text(&doc),
            "get stock price: Current price of a ticker."
        );
        let long = SearchDoc {
            description: "é".repeat(2000),
            ..doc.clone()
        };
        assert_eq!(
            embedding_text(&long).chars().count(),
            "get stock price: ".len() + DESCRIPTION_CHARS
        );
        let bare = SearchDoc {
            description: " ".into(),
            ..doc
        };
        assert_eq!(embedding_text(&bare), "get stock price");
    }
}
