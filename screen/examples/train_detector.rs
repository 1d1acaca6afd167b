//! Trains the detector's classifier (`screen/detector/classifier.json`)
//! over the shipped token table, from the screening corpus's train split and
//! the public tool catalogues (`quiver_screen::detector::dataset`), and
//! prints out-of-fold figures on that training data (folds by group): the
//! only figures tuning may look at. Test figures are `quiver bench
//! screening`'s.
//!
//! ```sh
//! cargo run -p quiver-screen --example train_detector            # writes the artifact
//! cargo run -p quiver-screen --example train_detector -- --check # compares with it
//! ```
//!
//! For tuning on those figures only: `HIDDEN`, `EPOCHS`, `L2`, `LR` override
//! the settings, `DRY=1` writes nothing, `VERBOSE=1` lists misses, flags and
//! the highest-scoring benign MCP tools.

use std::path::Path;

use quiver_screen::detector::{
    Classifier, TokenTable, dataset, hex_sha256,
    train::{self, Settings},
};

/// The shipped classifier's name.
const NAME: &str = "quiver-detector-1";

fn main() -> anyhow::Result<()> {
    let check = std::env::args().any(|a| a == "--check");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let table_bytes = std::fs::read(root.join("screen/detector/tokens.bin"))?;
    let table = TokenTable::from_bytes(&table_bytes)?;
    let cases = dataset::training_cases(&root)?;
    let started = std::time::Instant::now();
    let examples = dataset::examples(&table, &cases);
    // Overrides for tuning (on the out-of-fold figures only).
    let env = |k: &str| std::env::var(k).ok();
    let mut settings = Settings::default();
    if let Some(v) = env("HIDDEN") {
        settings.hidden = v.parse()?;
    }
    if let Some(v) = env("EPOCHS") {
        settings.epochs = v.parse()?;
    }
    if let Some(v) = env("L2") {
        settings.l2 = v.parse()?;
    }
    if let Some(v) = env("LR") {
        settings.learning_rate = v.parse()?;
    }
    let pieces: usize = examples.iter().map(|e| e.pieces.len()).sum();
    eprintln!(
        "{} definitions ({} poisoned), {pieces} pieces, in {:.1?}",
        examples.len(),
        examples.iter().filter(|e| e.poisoned).count(),
        started.elapsed()
    );
    let (classifier, oof) = train::train(
        &examples,
        quiver_screen::detector::input_len(&table),
        &settings,
        NAME,
        &hex_sha256(&table_bytes),
        &format!(
            "screen/corpus train split ({} poisoned, {} benign) and {} public catalogues ({}); {:?}",
            cases.iter().filter(|c| c.poisoned()).count(),
            cases
                .iter()
                .filter(|c| !c.poisoned()
                    && c.split == "train"
                    && !dataset::CATALOGUES.contains(&c.source.as_str()))
                .count(),
            dataset::CATALOGUES.len(),
            dataset::CATALOGUES.join(", "),
            settings
        ),
    );
    eprintln!(
        "trained in {:.1?}; thresholds high {:.3}, medium {:.3}",
        started.elapsed(),
        classifier.high,
        classifier.medium
    );
    // Out-of-fold figures on the training data.
    let (mut held, mut poisoned, mut flagged, mut benign) = (0, 0, 0, 0);
    for ((score, example), case) in oof.iter().zip(&examples).zip(&cases) {
        let Some(score) = score else { continue };
        if example.poisoned {
            poisoned += 1;
            if *score >= classifier.high {
                held += 1;
            } else if env("VERBOSE").is_some() {
                eprintln!("out of fold, missed {} ({score:.3})", case.id);
            }
        } else {
            benign += 1;
            if *score >= classifier.high {
                flagged += 1;
                if env("VERBOSE").is_some() {
                    eprintln!("out of fold, flagged {} ({score:.3})", case.id);
                }
            }
        }
    }
    println!(
        "out of fold: {held} of {poisoned} poisoned held, {flagged} of {benign} benign flagged high"
    );
    if env("VERBOSE").is_some() {
        let mut mcp: Vec<(f32, &str)> = oof
            .iter()
            .zip(&examples)
            .zip(&cases)
            .filter(|((_, e), _)| e.mcp && !e.poisoned)
            .filter_map(|((s, _), c)| Some(((*s)?, c.id.as_str())))
            .collect();
        mcp.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (s, id) in mcp.iter().take(15) {
            eprintln!("out of fold, MCP benign {id} ({s:.3})");
        }
    }
    // Recall at fixed false-positive rates, out of fold.
    let mut benign_scores: Vec<f32> = oof
        .iter()
        .zip(&examples)
        .filter(|(_, e)| !e.poisoned)
        .filter_map(|(s, _)| *s)
        .collect();
    benign_scores.sort_by(|a, b| b.total_cmp(a));
    for rate in [0.002f32, 0.005, 0.01, 0.02] {
        let t = benign_scores[(rate * benign_scores.len() as f32) as usize];
        let (mut h, mut n) = (0, 0);
        let (mut hc, mut nc) = (0, 0);
        for ((s, e), c) in oof.iter().zip(&examples).zip(&cases) {
            if let (Some(s), true) = (s, e.poisoned) {
                n += 1;
                if *s > t {
                    h += 1;
                }
                if c.source != "bastioncorpus" {
                    nc += 1;
                    if *s > t {
                        hc += 1;
                    }
                }
            }
        }
        println!(
            "  at {:.1} % benign: {h}/{n} poisoned ({hc}/{nc} of the corpus's), threshold {t:.3}",
            rate * 100.0
        );
    }
    let path = root.join("screen/detector/classifier.json");
    let text = serde_json::to_string(&classifier)? + "\n";
    if env("DRY").is_some() {
        return Ok(());
    }
    if check {
        let shipped: Classifier = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
        anyhow::ensure!(
            shipped == classifier,
            "the shipped classifier differs from a fresh training run"
        );
        println!("the shipped classifier is what training produces");
    } else {
        std::fs::write(&path, text)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
