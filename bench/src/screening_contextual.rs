//! An experiment beside the shipped detector, in `quiver bench screening`:
//! the same network and training, but over each piece's sentence vector
//! from the full all-MiniLM-L6-v2 (context taken into account) instead of
//! the distilled table. It says how much of the detector's gap is its
//! representation, and what closing it that way would cost per definition.
//! Skipped (said so) when the model is not installed.

use std::time::Instant;

use quiver_screen::detector::{
    Detector, dataset,
    dataset::{Case, PieceTexts},
    train::{self, Settings},
};
use quiver_view::search::{Embedder, semantic::default_model_dir};

/// Pieces of `cases` with their sentence vectors from `embedder`.
fn embedded(
    embedder: &Embedder,
    shipped: &Detector,
    cases: &[Case],
) -> anyhow::Result<Vec<PieceTexts>> {
    let texts: Vec<Vec<String>> = cases
        .iter()
        .map(|c| {
            dataset::piece_texts(shipped.table(), &c.tool)
                .into_iter()
                .map(|(t, _)| t)
                .collect()
        })
        .collect();
    let flat: Vec<&str> = texts.iter().flatten().map(String::as_str).collect();
    let mut vectors = embedder.embed(&flat)?.into_iter();
    Ok(texts
        .into_iter()
        .map(|ts| {
            ts.into_iter()
                .map(|t| (t, vectors.next().unwrap_or_default()))
                .collect()
        })
        .collect())
}

/// Prints the experiment's table.
pub(super) fn run(
    root: &std::path::Path,
    rules: &dyn Fn(&Case) -> bool,
    poisoned: &[Case],
) -> anyhow::Result<()> {
    println!("\n### Experiment: the same detector over the full model's sentence vectors\n");
    let Some(dir) = default_model_dir().filter(|d| d.join("model.safetensors").is_file()) else {
        println!("Skipped: no model installed (scripts/install-model.sh).");
        return Ok(());
    };
    let embedder = Embedder::load(&dir)?;
    let shipped = Detector::shipped();
    let training = dataset::training_cases(root)?;
    let started = Instant::now();
    let pieces = embedded(&embedder, shipped, &training)?;
    let count: usize = pieces.iter().map(Vec::len).sum();
    let per_piece = started.elapsed().as_secs_f64() / count.max(1) as f64;
    let examples = dataset::examples_from(&training, pieces);
    let (classifier, _) = train::train(
        &examples,
        embedder.dim(),
        &Settings::default(),
        "contextual",
        "-",
        "experiment",
    );
    let corpus = root.join("screen/corpus");
    let paraphrased = dataset::corpus_file(&corpus.join("paraphrased.jsonl"))?;
    let test: Vec<Case> = poisoned
        .iter()
        .filter(|c| c.split == "test" && c.textual())
        .cloned()
        .collect();
    let unseen: Vec<Case> = dataset::real_tools(root)?
        .into_iter()
        .filter(|c| c.split == "test")
        .collect();
    // Per case: whether the rules hold it, and per piece the shipped
    // detector's score and the contextual one's.
    let scored = |cases: &[Case]| -> anyhow::Result<Vec<Scored>> {
        let contextual = embedded(&embedder, shipped, cases)?;
        Ok(cases
            .iter()
            .zip(contextual)
            .map(|(c, vectors)| {
                let table = dataset::piece_texts(shipped.table(), &c.tool);
                let pieces = table
                    .iter()
                    .zip(&vectors)
                    .map(|((_, t), (_, v))| (shipped.classifier().score(t), classifier.score(v)))
                    .collect();
                (rules(c), pieces)
            })
            .collect())
    };
    let (paraphrases, test, unseen) = (scored(&paraphrased)?, scored(&test)?, scored(&unseen)?);
    let per_definition = per_piece * count as f64 / training.len().max(1) as f64;
    println!(
        "Trained on the same data ({count} pieces embedded at {:.2} ms each: about {:.1} s for 10,000 definitions on this machine, against the table's well under one); threshold from out-of-fold scores as shipped ({:.3}).\n",
        per_piece * 1000.0,
        per_definition * 10_000.0,
        classifier.high
    );
    println!(
        "| threshold | corpus test, detector | paraphrases, detector | paraphrases, both | real tools (held-out half) flagged |"
    );
    println!("|---:|---:|---:|---:|---:|");
    let pct = |n: usize, of: usize| crate::screening_detector::percent(n, of);
    for t in [0.80f32, 0.90, 0.95, classifier.high] {
        let held = |s: &[Scored], with_rules: bool| {
            s.iter()
                .filter(|(r, pieces)| pieces.iter().any(|(_, x)| *x >= t) || (with_rules && *r))
                .count()
        };
        let label = if t == classifier.high {
            format!("{t:.3} (out of fold)")
        } else {
            format!("{t:.2}")
        };
        let flagged = held(&unseen, false);
        println!(
            "| {label} | {:.1} % | {:.1} % | {:.1} % | {flagged} ({:.1} %) |",
            pct(held(&test, false), test.len()),
            pct(held(&paraphrases, false), paraphrases.len()),
            pct(held(&paraphrases, true), paraphrases.len()),
            pct(flagged, unseen.len())
        );
    }
    // A cascade: the table's detector as a first pass, the full model only
    // on the pieces it scores at least `first`.
    println!(
        "\nAs a cascade: only pieces the shipped detector scores at least the first threshold go to the model (at the out-of-fold threshold above); the model's time is the share sent times the pieces' embedding time.\n"
    );
    println!(
        "| first threshold | real tools' pieces sent to the model | model time for 10,000 definitions | corpus test | paraphrases | paraphrases, with rules | real tools (held-out half) flagged |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let t = classifier.high;
    for first in [0.2f32, 0.4, 0.6, 0.8] {
        let hit = |pieces: &[(f32, f32)]| pieces.iter().any(|(a, b)| *a >= first && *b >= t);
        let held = |s: &[Scored], with_rules: bool| {
            s.iter()
                .filter(|(r, p)| hit(p) || (with_rules && *r))
                .count()
        };
        let all: usize = unseen.iter().map(|(_, p)| p.len()).sum();
        let sent: usize = unseen
            .iter()
            .flat_map(|(_, p)| p.iter())
            .filter(|(a, _)| *a >= first)
            .count();
        let share = sent as f64 / all.max(1) as f64;
        let flagged = held(&unseen, false);
        println!(
            "| {first:.1} | {:.1} % | {:.1} s | {:.1} % | {:.1} % | {:.1} % | {flagged} ({:.1} %) |",
            share * 100.0,
            share * per_definition * 10_000.0,
            pct(held(&test, false), test.len()),
            pct(held(&paraphrases, false), paraphrases.len()),
            pct(held(&paraphrases, true), paraphrases.len()),
            pct(flagged, unseen.len())
        );
    }
    Ok(())
}

/// Whether the rules hold a case, and per piece (the shipped detector's
/// score, the contextual one's).
type Scored = (bool, Vec<(f32, f32)>);
