//! The encoder against a general tensor library's BERT (candle's, the one
//! Quiver ran before): the same model files, the same texts, vectors equal
//! up to rounding. Needs the model (scripts/install-model.sh), unless
//! QUIVER_PARTIAL_TESTS=1 marks a local partial run.

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use quiver_view::search::Embedder;

use crate::installed_model::model_dir;

/// Texts of every length a query or a tool text has, with words outside
/// the vocabulary, other scripts and punctuation.
fn texts() -> Vec<String> {
    let mut texts: Vec<String> = [
        "list my open pull requests",
        "x",
        "",
        "Créer un ticket JIRA pour le bug de connexion — priorité haute",
        "查询北京明天的天气",
        "get_weather: Returns the current weather for a city. Arguments: city (string), units (metric|imperial).",
        "🙂🙂🙂 ??? !!! ###",
    ]
    .map(String::from)
    .to_vec();
    let long: Vec<String> = (0..200).map(|i| format!("word{i} thing")).collect();
    texts.push(long.join(" "));
    texts
}

fn candle_vectors(dir: &std::path::Path, ids: &[Vec<u32>]) -> anyhow::Result<Vec<Vec<f32>>> {
    let config: Config = serde_json::from_str(&std::fs::read_to_string(dir.join("config.json"))?)?;
    let weights = std::fs::read(dir.join("model.safetensors"))?;
    let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)?;
    let bert = BertModel::load(vb, &config)?;
    let mut out = Vec::new();
    for ids in ids {
        let len = ids.len();
        let input = Tensor::from_vec(ids.clone(), (1, len), &Device::Cpu)?;
        let types = input.zeros_like()?;
        let hidden = bert.forward(&input, &types, None)?;
        let mean: Vec<f32> = (hidden.sum(1)? / len as f64)?.squeeze(0)?.to_vec1()?;
        let norm = mean.iter().map(|v| v * v).sum::<f32>().sqrt();
        out.push(mean.iter().map(|v| v / norm).collect());
    }
    Ok(out)
}

#[test]
fn the_encoder_gives_the_reference_vectors() -> anyhow::Result<()> {
    let Some(dir) = model_dir()? else {
        return Ok(());
    };
    let embedder = Embedder::load(&dir)?;
    let mut tokenizer = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json"))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(Some(tokenizers::TruncationParams {
            max_length: quiver_view::search::embedder::MAX_TOKENS,
            ..Default::default()
        }))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let texts = texts();
    let ids: Vec<Vec<u32>> = texts
        .iter()
        .map(|t| {
            tokenizer
                .encode(t.as_str(), true)
                .map(|e| e.get_ids().to_vec())
        })
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let reference = candle_vectors(&dir, &ids)?;
    // One at a time (a query), and all in one call (a catalogue, several
    // threads, no padding): both must match the reference.
    let batch: Vec<&str> = texts.iter().map(String::as_str).collect();
    let together = embedder.embed(&batch)?;
    for (i, text) in texts.iter().enumerate() {
        let alone = embedder.embed_one(text)?;
        for (how, got) in [("alone", &alone), ("in a batch", &together[i])] {
            let max_diff = got
                .iter()
                .zip(&reference[i])
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(
                max_diff < 2e-5,
                "{text:?} {how}: differs from the reference by {max_diff}"
            );
        }
    }
    Ok(())
}
