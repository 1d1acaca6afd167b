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
    sync::{Arc, OnceLock},
};

use super::{
    SearchDoc,
    embedder::{Embedder, EmbedderError},
    vector_cache::{VectorCache, VectorCacheError, vector_key},
};
use crate::error_chain::ErrorChain;

/// Characters of a description that go into a tool's embedding text.
const DESCRIPTION_CHARS: usize = 600;

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
        Ok(SemanticModel { embedder, cache })
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
    /// otherwise.
    pub fn doc_vectors(&self, docs: &[SearchDoc]) -> Result<Vec<f32>, EmbedderError> {
        let texts: Vec<String> = docs.iter().map(embedding_text).collect();
        let keys: Vec<_> = texts
            .iter()
            .map(|t| vector_key(self.embedder.id(), t))
            .collect();
        let mut missing: Vec<usize> = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            if self.cache.get(key).is_none() && !missing.iter().any(|&m| keys[m] == *key) {
                missing.push(i);
            }
        }
        if !missing.is_empty() {
            let batch: Vec<&str> = missing.iter().map(|&i| texts[i].as_str()).collect();
            let vectors = self.embedder.embed(&batch)?;
            let entries = missing.iter().map(|&i| keys[i]).zip(vectors).collect();
            if let Err(e) = self.cache.insert(entries) {
                tracing::warn!("search: tool vectors not saved to disk: {}", ErrorChain(&e));
            }
        }
        let dim = self.dim();
        let mut matrix = Vec::with_capacity(docs.len() * dim);
        for key in &keys {
            match self.cache.get(key) {
                Some(v) => matrix.extend_from_slice(&v),
                None => return Err(EmbedderError::Run("a tool vector went missing".into())),
            }
        }
        Ok(matrix)
    }

    /// The vector of a query.
    pub fn query_vector(&self, query: &str) -> Result<Vec<f32>, EmbedderError> {
        self.embedder.embed_one(query)
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

/// Loads the model for this process, once; later calls return the first
/// outcome. `None` for `model_dir` means search stays lexical. Either way
/// the outcome is logged once.
pub fn install(model_dir: Option<&Path>, cache_dir: Option<&Path>) -> Option<Arc<SemanticModel>> {
    INSTALLED
        .get_or_init(|| {
            let Some(dir) = model_dir else {
                tracing::info!("search: lexical ranking only (no search model configured)");
                return None;
            };
            match SemanticModel::load(dir, cache_dir) {
                Ok(model) => {
                    tracing::info!(
                        model = %dir.display(),
                        cached_vectors = model.cache().len(),
                        "search: hybrid lexical + semantic ranking"
                    );
                    Some(Arc::new(model))
                }
                Err(e) => {
                    tracing::warn!("search: lexical ranking only: {}", ErrorChain(&e));
                    None
                }
            }
        })
        .clone()
}

/// The model [`install`]ed in this process, if any.
pub fn installed() -> Option<Arc<SemanticModel>> {
    INSTALLED.get().cloned().flatten()
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
