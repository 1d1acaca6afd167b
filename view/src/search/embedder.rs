//! Sentence embeddings on the CPU: a BERT-family model (all-MiniLM-L6-v2 by
//! default) run by `quiver-encoder` (weights packed once, no padding),
//! mean-pooled over the real tokens and L2-normalised, so the dot product of
//! two vectors is their cosine.
//!
//! It owns loading a model directory and turning text into vectors; it knows
//! nothing of tools, caching or ranking. It never downloads anything: the
//! model directory is put in place by `scripts/install-model.sh`.

use std::{
    fmt,
    path::{Path, PathBuf},
};

use sha2::{Digest, Sha256};

/// Files a model directory must hold.
pub const MODEL_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// An optional file of a model directory: how the model wants its inputs
/// marked (`{"query_prefix": "query: ", "document_prefix": "passage: "}`
/// for the E5 family). Without it, texts are embedded as they are.
pub const INPUT_FILE: &str = "quiver-model.json";

/// How a model wants queries and documents marked ([`INPUT_FILE`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelInputs {
    /// Put before every query.
    #[serde(default)]
    pub query_prefix: String,
    /// Put before every tool's text.
    #[serde(default)]
    pub document_prefix: String,
}

/// Tokens kept per text. Tool descriptions say what a tool does in their
/// first sentences; the rest costs time for nothing measurable: on the tune
/// splits of azure-mcp and MetaTool, 64 tokens rank as 128 did (hybrid MRR
/// 0.901 / 0.706 against 0.903 / 0.704) at about half the embedding time
/// of long descriptions.
pub const MAX_TOKENS: usize = 64;

/// Why a model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedderError {
    /// The directory lacks one of [`MODEL_FILES`].
    #[error(
        "model directory {dir}: `{file}` is missing; run scripts/install-model.sh or point `[edge] search_model_dir` at a directory holding {MODEL_FILES:?}"
    )]
    Missing {
        /// The model directory.
        dir: PathBuf,
        /// The missing file.
        file: &'static str,
    },
    /// A file could not be read or parsed.
    #[error("model directory {dir}: {message}")]
    Load {
        /// The model directory.
        dir: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The model failed on an input.
    #[error("embedding failed: {0}")]
    Run(String),
    /// This build has no semantic search.
    #[error(
        "this build of quiver has no semantic search (cargo feature `semantic` of quiver-view is off)"
    )]
    Disabled,
}

/// A loaded sentence-embedding model. `Send + Sync`: one is shared by every
/// view and thread.
pub struct Embedder {
    dir: PathBuf,
    id: String,
    dim: usize,
    inputs: ModelInputs,
    #[cfg(feature = "semantic")]
    inner: imp::Model,
}

impl fmt::Debug for Embedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Embedder")
            .field("dir", &self.dir)
            .field("id", &self.id)
            .field("dim", &self.dim)
            .finish()
    }
}

impl Embedder {
    /// Loads the model in `dir` (see [`MODEL_FILES`]).
    pub fn load(dir: &Path) -> Result<Embedder, EmbedderError> {
        for file in MODEL_FILES {
            if !dir.join(file).is_file() {
                return Err(EmbedderError::Missing {
                    dir: dir.to_owned(),
                    file,
                });
            }
        }
        let id = model_id(dir)?;
        let inputs = match std::fs::read_to_string(dir.join(INPUT_FILE)) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| EmbedderError::Load {
                dir: dir.to_owned(),
                message: format!("{INPUT_FILE}: {e}"),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => ModelInputs::default(),
            Err(e) => {
                return Err(EmbedderError::Load {
                    dir: dir.to_owned(),
                    message: format!("reading {INPUT_FILE}: {e}"),
                });
            }
        };
        #[cfg(feature = "semantic")]
        {
            let inner = imp::Model::load(dir)?;
            Ok(Embedder {
                dir: dir.to_owned(),
                id,
                dim: inner.dim(),
                inputs,
                inner,
            })
        }
        #[cfg(not(feature = "semantic"))]
        {
            let _ = (id, inputs);
            Err(EmbedderError::Disabled)
        }
    }

    /// The instruction set the encoder's kernels use on this CPU
    /// (`avx512`, `avx2+fma`, `portable`; `none` without the `semantic`
    /// feature).
    pub fn kernel(&self) -> &'static str {
        #[cfg(feature = "semantic")]
        {
            self.inner.kernel()
        }
        #[cfg(not(feature = "semantic"))]
        {
            "none"
        }
    }

    /// Where the model was loaded from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A short hash of the model's files: vectors cached under one id were
    /// made by this exact model and tokenizer.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Length of every vector.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// How the model wants its inputs marked.
    pub fn inputs(&self) -> &ModelInputs {
        &self.inputs
    }

    /// One unit-length vector per text, in order, on every core when there
    /// are many.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedderError> {
        #[cfg(feature = "semantic")]
        {
            self.inner.embed(texts)
        }
        #[cfg(not(feature = "semantic"))]
        {
            let _ = texts;
            Err(EmbedderError::Disabled)
        }
    }

    /// The model's word pieces, indexed by token id (for deriving per-token
    /// vectors, as the screening detector's table is).
    pub fn vocabulary(&self) -> Result<Vec<String>, EmbedderError> {
        #[cfg(feature = "semantic")]
        {
            Ok(self.inner.vocabulary())
        }
        #[cfg(not(feature = "semantic"))]
        {
            Err(EmbedderError::Disabled)
        }
    }

    /// One unit-length vector per sequence of token ids, taken as they are:
    /// nothing is added (no `[CLS]`/`[SEP]`) or cut.
    pub fn embed_ids(&self, batch: &[&[u32]]) -> Result<Vec<Vec<f32>>, EmbedderError> {
        #[cfg(feature = "semantic")]
        {
            self.inner.forward(batch)
        }
        #[cfg(not(feature = "semantic"))]
        {
            let _ = batch;
            Err(EmbedderError::Disabled)
        }
    }

    /// The vector of one text (a query): no padding at all.
    pub fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedderError> {
        let mut vectors = self.embed(&[text])?;
        vectors
            .pop()
            .ok_or_else(|| EmbedderError::Run("no vector".into()))
    }
}

/// SHA-256 over the config, the tokenizer and the weights' size, shortened.
/// Hashing all 90 MB of weights at every start would cost more than it guards.
fn model_id(dir: &Path) -> Result<String, EmbedderError> {
    let mut hash = Sha256::new();
    for file in ["config.json", "tokenizer.json"] {
        let bytes = std::fs::read(dir.join(file)).map_err(|e| EmbedderError::Load {
            dir: dir.to_owned(),
            message: format!("reading {file}: {e}"),
        })?;
        hash.update(&bytes);
    }
    // Vectors depend on how much of a text is kept.
    hash.update((MAX_TOKENS as u64).to_le_bytes());
    // Present only for models that mark their inputs.
    if let Ok(bytes) = std::fs::read(dir.join(INPUT_FILE)) {
        hash.update(&bytes);
    }
    let weights =
        std::fs::metadata(dir.join("model.safetensors")).map_err(|e| EmbedderError::Load {
            dir: dir.to_owned(),
            message: format!("reading model.safetensors: {e}"),
        })?;
    hash.update(weights.len().to_le_bytes());
    Ok(hex::encode(&hash.finalize()[..8]))
}

#[cfg(feature = "semantic")]
mod imp {
    use std::path::Path;

    use quiver_encoder::Encoder;
    use tokenizers::{Tokenizer, TruncationParams};

    use super::{EmbedderError, MAX_TOKENS};

    pub(super) struct Model {
        encoder: Encoder,
        tokenizer: Tokenizer,
        threads: usize,
    }

    fn load_error(dir: &Path, message: String) -> EmbedderError {
        EmbedderError::Load {
            dir: dir.to_owned(),
            message,
        }
    }

    fn run_error(e: impl std::fmt::Display) -> EmbedderError {
        EmbedderError::Run(e.to_string())
    }

    impl Model {
        pub(super) fn load(dir: &Path) -> Result<Model, EmbedderError> {
            let config = std::fs::read_to_string(dir.join("config.json"))
                .map_err(|e| load_error(dir, format!("reading config.json: {e}")))?;
            let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
                .map_err(|e| load_error(dir, format!("tokenizer.json: {e}")))?;
            // The shipped tokenizer pads every text to 128 tokens; the
            // encoder never pads.
            tokenizer.with_padding(None);
            tokenizer
                .with_truncation(Some(TruncationParams {
                    max_length: MAX_TOKENS,
                    ..TruncationParams::default()
                }))
                .map_err(|e| load_error(dir, format!("tokenizer.json: {e}")))?;
            let weights = std::fs::read(dir.join("model.safetensors"))
                .map_err(|e| load_error(dir, format!("reading model.safetensors: {e}")))?;
            let encoder =
                Encoder::load(&config, &weights).map_err(|e| load_error(dir, e.to_string()))?;
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            Ok(Model {
                encoder,
                tokenizer,
                threads,
            })
        }

        pub(super) fn dim(&self) -> usize {
            self.encoder.dim()
        }

        pub(super) fn kernel(&self) -> &'static str {
            self.encoder.kernel()
        }

        pub(super) fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedderError> {
            let mut encoded = Vec::with_capacity(texts.len());
            for text in texts {
                let encoding = self.tokenizer.encode(*text, true).map_err(run_error)?;
                encoded.push(encoding.get_ids().to_vec());
            }
            // Similar lengths together, for the encoder's cache locality.
            let mut order: Vec<usize> = (0..texts.len()).collect();
            order.sort_by_key(|&i| encoded[i].len());
            let ids: Vec<&[u32]> = order.iter().map(|&i| encoded[i].as_slice()).collect();
            let mut out = vec![Vec::new(); texts.len()];
            for (vector, &i) in self.forward(&ids)?.into_iter().zip(&order) {
                out[i] = vector;
            }
            Ok(out)
        }

        pub(super) fn vocabulary(&self) -> Vec<String> {
            let vocab = self.tokenizer.get_vocab(true);
            let mut words =
                vec![String::new(); vocab.values().map(|&i| i as usize + 1).max().unwrap_or(0)];
            for (word, id) in vocab {
                words[id as usize] = word;
            }
            words
        }

        /// Vectors of token-id sequences, on every core when there are many.
        pub(super) fn forward(&self, batch: &[&[u32]]) -> Result<Vec<Vec<f32>>, EmbedderError> {
            Ok(self.encoder.embed_ids(batch, self.threads))
        }
    }
}
