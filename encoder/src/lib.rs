//! A BERT encoder's forward pass written for this workload: sentence vectors
//! of short texts, one query at a time on the request path and thousands of
//! tool texts when a catalogue arrives.
//!
//! General tensor libraries repack every weight matrix into their kernel's
//! layout on each call; for a query of a dozen tokens that repacking costs
//! more than the arithmetic. Here the weights are packed once when the model
//! loads ([`kernels::Dense`]). Texts of a batch are not padded: the dense
//! layers run over all their tokens at once and only attention looks at
//! sequence boundaries, so a batch costs what its real tokens cost.

mod kernels;

use std::collections::HashMap;

use kernels::Dense;

/// Tokens per forward pass when embedding many texts: enough that every
/// weight block is reused across many tokens, small enough that the
/// activations stay in cache.
const TOKENS_PER_PASS: usize = 512;

/// Why a model's weights do not make an encoder.
#[derive(Debug, thiserror::Error)]
pub enum EncoderError {
    /// A tensor the architecture needs is absent.
    #[error("tensor `{0}` is missing")]
    Missing(String),
    /// A tensor has an unexpected number of values.
    #[error("tensor `{name}` has {got} values, expected {want}")]
    Shape {
        /// The tensor.
        name: String,
        /// Its number of values.
        got: usize,
        /// What the configuration implies.
        want: usize,
    },
    /// The configuration is not one this encoder runs.
    #[error("unsupported configuration: {0}")]
    Config(String),
    /// `config.json` is not a BERT configuration.
    #[error("config.json: {0}")]
    ConfigJson(#[from] serde_json::Error),
    /// The weights file is not safetensors.
    #[error("model.safetensors: {0}")]
    Weights(#[from] safetensors::SafeTensorError),
    /// A tensor holds a type other than 32-bit floats.
    #[error("tensor `{name}` holds {dtype}, expected F32")]
    Dtype {
        /// The tensor.
        name: String,
        /// What it holds.
        dtype: String,
    },
}

/// The configuration fields the forward pass needs (a BERT `config.json`).
#[derive(Debug, Clone, serde::Deserialize)]
struct Config {
    hidden_size: usize,
    intermediate_size: usize,
    num_attention_heads: usize,
    num_hidden_layers: usize,
    max_position_embeddings: usize,
    #[serde(default = "default_eps")]
    layer_norm_eps: f64,
    #[serde(default = "default_act")]
    hidden_act: String,
}

fn default_eps() -> f64 {
    1e-12
}

fn default_act() -> String {
    "gelu".into()
}

struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

struct Layer {
    /// Query, key and value in one product (`3 × hidden` outputs).
    qkv: Dense,
    attention_out: Dense,
    attention_norm: Norm,
    up: Dense,
    down: Dense,
    output_norm: Norm,
}

/// The encoder's weights, packed.
pub struct Encoder {
    hidden: usize,
    heads: usize,
    eps: f32,
    max_positions: usize,
    /// `vocabulary × hidden`.
    words: Vec<f32>,
    /// `positions × hidden`, with token type 0's row already added.
    positions: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
    /// The kernels in use: the best this CPU runs unless chosen.
    isa: &'static kernels::Isa,
}

/// Named tensors as flat `f32` values.
type Tensors = HashMap<String, Vec<f32>>;

impl Encoder {
    /// Builds the encoder from a BERT `config.json` and its
    /// `model.safetensors` (32-bit float weights, names with or without a
    /// `bert.` prefix; tensors of other types, such as `position_ids`, are
    /// not read).
    pub fn load(config_json: &str, safetensors: &[u8]) -> Result<Encoder, EncoderError> {
        let config: Config = serde_json::from_str(config_json)?;
        let file = safetensors::SafeTensors::deserialize(safetensors)?;
        let mut tensors = Tensors::new();
        for (name, view) in file.tensors() {
            if name.ends_with("position_ids") {
                continue;
            }
            if view.dtype() != safetensors::Dtype::F32 {
                return Err(EncoderError::Dtype {
                    name,
                    dtype: format!("{:?}", view.dtype()),
                });
            }
            let values = view
                .data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            tensors.insert(name, values);
        }
        Encoder::new(&config, tensors)
    }

    fn new(config: &Config, mut tensors: Tensors) -> Result<Encoder, EncoderError> {
        if config.hidden_act != "gelu" {
            return Err(EncoderError::Config(format!(
                "hidden_act `{}` (only `gelu`)",
                config.hidden_act
            )));
        }
        let h = config.hidden_size;
        if config.num_attention_heads == 0 || !h.is_multiple_of(config.num_attention_heads) {
            return Err(EncoderError::Config(format!(
                "{} heads do not divide hidden size {h}",
                config.num_attention_heads
            )));
        }
        let t = &mut tensors;
        let words = take(t, "embeddings.word_embeddings.weight", h)?;
        let mut positions = take(
            t,
            "embeddings.position_embeddings.weight",
            h * config.max_position_embeddings,
        )?;
        let types = take(t, "embeddings.token_type_embeddings.weight", h)?;
        for row in positions.chunks_exact_mut(h) {
            row.iter_mut().zip(&types[..h]).for_each(|(p, t)| *p += t);
        }
        let embedding_norm = norm(t, "embeddings.LayerNorm", h)?;
        let i = config.intermediate_size;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for l in 0..config.num_hidden_layers {
            let p = format!("encoder.layer.{l}");
            let (qw, qb) = dense(t, &format!("{p}.attention.self.query"), h, h)?;
            let (kw, kb) = dense(t, &format!("{p}.attention.self.key"), h, h)?;
            let (vw, vb) = dense(t, &format!("{p}.attention.self.value"), h, h)?;
            let (ow, ob) = dense(t, &format!("{p}.attention.output.dense"), h, h)?;
            let (uw, ub) = dense(t, &format!("{p}.intermediate.dense"), h, i)?;
            let (dw, db) = dense(t, &format!("{p}.output.dense"), i, h)?;
            layers.push(Layer {
                qkv: Dense::pack(&[qw, kw, vw].concat(), [qb, kb, vb].concat(), h, 3 * h),
                attention_out: Dense::pack(&ow, ob, h, h),
                attention_norm: norm(t, &format!("{p}.attention.output.LayerNorm"), h)?,
                up: Dense::pack(&uw, ub, h, i),
                down: Dense::pack(&dw, db, i, h),
                output_norm: norm(t, &format!("{p}.output.LayerNorm"), h)?,
            });
        }
        Ok(Encoder {
            hidden: h,
            heads: config.num_attention_heads,
            eps: config.layer_norm_eps as f32,
            max_positions: config.max_position_embeddings,
            words,
            positions,
            embedding_norm,
            layers,
            isa: &kernels::kernels()[0],
        })
    }

    /// Length of every vector.
    pub fn dim(&self) -> usize {
        self.hidden
    }

    /// Which instruction set the dense layers use (`avx512`, `avx2+fma`
    /// or `portable`).
    pub fn kernel(&self) -> &'static str {
        self.isa.name()
    }

    /// The kernels this CPU can run, best first.
    pub fn kernels() -> Vec<&'static str> {
        kernels::kernels().iter().map(kernels::Isa::name).collect()
    }

    /// The same encoder with the kernels named `name` (one of
    /// [`Encoder::kernels`]); `None` when this CPU cannot run them.
    pub fn with_kernel(mut self, name: &str) -> Option<Encoder> {
        self.isa = kernels::kernels().iter().find(|k| k.name() == name)?;
        Some(self)
    }

    /// Mean-pooled, unit-length vectors of token-id sequences, in order,
    /// computed on up to `threads` threads (a query: one). Ids past the
    /// vocabulary read as id 0 (`[PAD]`); sequences longer than the model's
    /// positions are cut. Sequences of similar length should be next to
    /// each other only for cache locality: nothing is padded.
    pub fn embed_ids(&self, batch: &[&[u32]], threads: usize) -> Vec<Vec<f32>> {
        let total: usize = batch.iter().map(|ids| ids.len()).sum();
        let threads = threads.clamp(1, total.div_ceil(TOKENS_PER_PASS).max(1));
        if threads == 1 {
            return self.embed_serial(batch);
        }
        // Contiguous shares of about equal tokens, one per thread.
        let share = total.div_ceil(threads);
        let mut cuts = vec![0];
        let mut tokens = 0;
        for (i, ids) in batch.iter().enumerate() {
            tokens += ids.len();
            if tokens >= share * cuts.len() && i + 1 < batch.len() {
                cuts.push(i + 1);
            }
        }
        cuts.push(batch.len());
        std::thread::scope(|scope| {
            let workers: Vec<_> = cuts
                .windows(2)
                .map(|w| {
                    let part = &batch[w[0]..w[1]];
                    scope.spawn(move || self.embed_serial(part))
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    }

    fn embed_serial(&self, batch: &[&[u32]]) -> Vec<Vec<f32>> {
        let mut out = Vec::with_capacity(batch.len());
        let mut start = 0;
        while start < batch.len() {
            let mut end = start;
            let mut tokens = 0;
            while end < batch.len()
                && (end == start || tokens + batch[end].len() <= TOKENS_PER_PASS)
            {
                tokens += batch[end].len();
                end += 1;
            }
            out.extend(self.pass(&batch[start..end]));
            start = end;
        }
        out
    }

    /// One forward pass over the tokens of every sequence in `batch`.
    fn pass(&self, batch: &[&[u32]]) -> Vec<Vec<f32>> {
        let h = self.hidden;
        let lens: Vec<usize> = batch
            .iter()
            .map(|ids| ids.len().min(self.max_positions))
            .collect();
        let total: usize = lens.iter().sum();
        let vocabulary = self.words.len() / h;
        let mut x = vec![0.0f32; total * h];
        let mut row = 0;
        for (ids, &len) in batch.iter().zip(&lens) {
            for (p, &id) in ids[..len].iter().enumerate() {
                let id = if (id as usize) < vocabulary {
                    id as usize
                } else {
                    0
                };
                let word = &self.words[id * h..(id + 1) * h];
                let position = &self.positions[p * h..(p + 1) * h];
                let dst = &mut x[row * h..(row + 1) * h];
                for ((d, w), q) in dst.iter_mut().zip(word).zip(position) {
                    *d = w + q;
                }
                row += 1;
            }
        }
        self.norm(&mut x, &self.embedding_norm);
        let mut scratch = Scratch::new(total, h, self.layers.first());
        for layer in &self.layers {
            self.layer(layer, &mut x, &lens, &mut scratch);
        }
        let mut out = Vec::with_capacity(batch.len());
        let mut row = 0;
        for &len in &lens {
            let mut mean = vec![0.0f32; h];
            for t in row..row + len {
                mean.iter_mut()
                    .zip(&x[t * h..(t + 1) * h])
                    .for_each(|(m, v)| *m += v);
            }
            row += len;
            let count = len.max(1) as f32;
            mean.iter_mut().for_each(|m| *m /= count);
            let norm = mean.iter().map(|v| v * v).sum::<f32>().sqrt();
            if norm > 0.0 {
                mean.iter_mut().for_each(|m| *m /= norm);
            }
            out.push(mean);
        }
        out
    }

    fn norm(&self, x: &mut [f32], norm: &Norm) {
        kernels::layer_norm(x, &norm.gamma, &norm.beta, self.eps);
    }

    fn layer(&self, layer: &Layer, x: &mut [f32], lens: &[usize], s: &mut Scratch) {
        let h = self.hidden;
        layer.qkv.apply(self.isa, x, &mut s.qkv);
        self.attention(&s.qkv, lens, &mut s.context, &mut s.scores);
        layer
            .attention_out
            .apply(self.isa, &s.context, &mut s.projected);
        add(&mut s.projected, x);
        self.norm(&mut s.projected, &layer.attention_norm);
        layer.up.apply(self.isa, &s.projected, &mut s.inner);
        kernels::gelu(&mut s.inner);
        layer.down.apply(self.isa, &s.inner, x);
        add(x, &s.projected);
        self.norm(x, &layer.output_norm);
        debug_assert_eq!(x.len() % h, 0);
    }

    /// Scaled dot-product attention within each sequence, every head.
    fn attention(&self, qkv: &[f32], lens: &[usize], context: &mut [f32], scores: &mut Vec<f32>) {
        let h = self.hidden;
        let d = h / self.heads;
        let scale = 1.0 / (d as f32).sqrt();
        let stride = 3 * h;
        let mut first = 0;
        for &len in lens {
            scores.resize(len, 0.0);
            for head in 0..self.heads {
                let (qo, ko, vo) = (head * d, h + head * d, 2 * h + head * d);
                for i in 0..len {
                    let q = &qkv[(first + i) * stride + qo..][..d];
                    let mut max = f32::NEG_INFINITY;
                    for (j, score) in scores.iter_mut().enumerate() {
                        let k = &qkv[(first + j) * stride + ko..][..d];
                        let dot: f32 = q.iter().zip(k).map(|(a, b)| a * b).sum();
                        *score = dot * scale;
                        max = max.max(*score);
                    }
                    let mut sum = 0.0;
                    for score in scores.iter_mut() {
                        *score = kernels::exp(*score - max);
                        sum += *score;
                    }
                    let out = &mut context[(first + i) * h + head * d..][..d];
                    out.fill(0.0);
                    for (j, &p) in scores.iter().enumerate() {
                        let v = &qkv[(first + j) * stride + vo..][..d];
                        out.iter_mut().zip(v).for_each(|(o, v)| *o += p * v);
                    }
                    out.iter_mut().for_each(|o| *o /= sum);
                }
            }
            first += len;
        }
    }
}

/// Activations reused from layer to layer.
struct Scratch {
    qkv: Vec<f32>,
    context: Vec<f32>,
    projected: Vec<f32>,
    inner: Vec<f32>,
    scores: Vec<f32>,
}

impl Scratch {
    fn new(tokens: usize, hidden: usize, layer: Option<&Layer>) -> Scratch {
        let inner = layer.map_or(0, |l| l.up.output());
        debug_assert!(layer.is_none_or(|l| l.down.input() == inner));
        Scratch {
            qkv: vec![0.0; tokens * 3 * hidden],
            context: vec![0.0; tokens * hidden],
            projected: vec![0.0; tokens * hidden],
            inner: vec![0.0; tokens * inner],
            scores: Vec::new(),
        }
    }
}

fn add(x: &mut [f32], y: &[f32]) {
    x.iter_mut().zip(y).for_each(|(a, b)| *a += b);
}

/// A tensor by name (with or without a `bert.` prefix) whose length is a
/// non-zero multiple of `unit`.
fn take(tensors: &mut Tensors, name: &str, unit: usize) -> Result<Vec<f32>, EncoderError> {
    let value = tensors
        .remove(name)
        .or_else(|| tensors.remove(&format!("bert.{name}")))
        .ok_or_else(|| EncoderError::Missing(name.into()))?;
    if value.is_empty() || !value.len().is_multiple_of(unit) {
        return Err(EncoderError::Shape {
            name: name.into(),
            got: value.len(),
            want: unit,
        });
    }
    Ok(value)
}

/// A tensor of exactly `want` values.
fn exact(tensors: &mut Tensors, name: &str, want: usize) -> Result<Vec<f32>, EncoderError> {
    let value = take(tensors, name, want)?;
    if value.len() == want {
        Ok(value)
    } else {
        Err(EncoderError::Shape {
            name: name.into(),
            got: value.len(),
            want,
        })
    }
}

fn norm(tensors: &mut Tensors, prefix: &str, width: usize) -> Result<Norm, EncoderError> {
    Ok(Norm {
        gamma: exact(tensors, &format!("{prefix}.weight"), width)?,
        beta: exact(tensors, &format!("{prefix}.bias"), width)?,
    })
}

/// A linear layer's weight (`output × input`) and bias.
fn dense(
    tensors: &mut Tensors,
    prefix: &str,
    input: usize,
    output: usize,
) -> Result<(Vec<f32>, Vec<f32>), EncoderError> {
    Ok((
        exact(tensors, &format!("{prefix}.weight"), input * output)?,
        exact(tensors, &format!("{prefix}.bias"), output)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kernel this CPU runs gives the whole model's vectors within
    /// rounding of each other. Needs the installed model
    /// (scripts/install-model.sh), unless QUIVER_PARTIAL_TESTS=1 marks a
    /// local partial run.
    #[test]
    fn every_kernel_gives_the_same_vectors() {
        let dir = std::env::var_os("QUIVER_SEARCH_MODEL_DIR").map_or_else(
            || {
                std::path::PathBuf::from(std::env::var_os("HOME").expect("HOME is set"))
                    .join(".cache/quiver/models/all-MiniLM-L6-v2")
            },
            std::path::PathBuf::from,
        );
        let (Ok(config), Ok(weights)) = (
            std::fs::read_to_string(dir.join("config.json")),
            std::fs::read(dir.join("model.safetensors")),
        ) else {
            assert!(
                std::env::var_os("QUIVER_PARTIAL_TESTS").is_some_and(|v| v == "1"),
                "no model at {}: run scripts/install-model.sh",
                dir.display()
            );
            return;
        };
        let batch: Vec<Vec<u32>> = vec![
            vec![101, 2862, 2026, 2330, 4139, 11186, 102],
            vec![101, 102],
            (0..70).map(|i| 1000 + i * 37).collect(),
        ];
        let ids: Vec<&[u32]> = batch.iter().map(Vec::as_slice).collect();
        let best = Encoder::load(&config, &weights).expect("the model loads");
        let reference = best.embed_ids(&ids, 1);
        for name in Encoder::kernels() {
            let encoder = Encoder::load(&config, &weights)
                .expect("the model loads")
                .with_kernel(name)
                .expect("a listed kernel");
            assert_eq!(encoder.kernel(), name);
            for (got, want) in encoder.embed_ids(&ids, 2).iter().zip(&reference) {
                let most = got
                    .iter()
                    .zip(want)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0f32, f32::max);
                assert!(most < 1e-5, "{name}: {most}");
            }
        }
        assert!(
            Encoder::load(&config, &weights)
                .expect("the model loads")
                .with_kernel("no-such-kernel")
                .is_none()
        );
    }
}
