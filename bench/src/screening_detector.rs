//! The learned detector's part of `quiver bench screening`: figures that
//! cannot flatter it.
//!
//! - Leave one source out: for each of the corpus's four sources, a
//!   detector trained without any of that source's cases (the other three
//!   sources' cases of both splits, the injection texts and the public
//!   catalogues) screens every poisoned case of the left-out source.
//! - The paraphrase set (`screen/corpus/paraphrased.jsonl`): every poisoned
//!   test case rewritten by hand in other words and languages, written and
//!   committed before the detector was first trained.
//! - The poisoned test cases with invisible characters between all their
//!   letters, and with their description spread over three tools of one
//!   server.
//!
//! Each is reported for the rules alone, the shipped detector alone and
//! both (what screening does by default): a case counts as held when a
//! finding is high.

use quiver_proto::{ToolDef, finding::Severity};
use quiver_screen::{
    Catalogue, Screen,
    detector::{
        Detector, dataset,
        dataset::Case,
        input_len,
        train::{self, Settings},
    },
    worst,
};

/// Who screens: the rules, a detector, or both.
pub(super) struct Judges<'a> {
    pub screen: &'a Screen,
    pub catalogue: &'a Catalogue,
}

impl Judges<'_> {
    /// Whether the rules alone hold `tool` back.
    pub fn rules(&self, server: &str, tool: &ToolDef) -> bool {
        worst(&self.screen.scan_rules(server, tool, self.catalogue)) == Some(Severity::High)
    }

    /// Whether `detector` alone holds `tool` back.
    pub fn detector(detector: &Detector, tool: &ToolDef) -> bool {
        worst(&detector.findings(tool)) == Some(Severity::High)
    }
}

/// Held counts of one set of cases: rules, detector, both, of.
#[derive(Default, Clone, Copy)]
struct Held {
    rules: usize,
    detector: usize,
    both: usize,
    of: usize,
}

impl Held {
    fn add(&mut self, rules: bool, detector: bool) {
        self.of += 1;
        self.rules += rules as usize;
        self.detector += detector as usize;
        self.both += (rules || detector) as usize;
    }

    fn row(&self, label: &str) {
        let pct = |n: usize| percent(n, self.of);
        println!(
            "| {label} | {} | {}/{} ({:.1} %) | {}/{} ({:.1} %) | {}/{} ({:.1} %) |",
            self.of,
            self.rules,
            self.of,
            pct(self.rules),
            self.detector,
            self.of,
            pct(self.detector),
            self.both,
            self.of,
            pct(self.both)
        );
    }
}

fn header(first: &str) {
    println!("| {first} | cases | rules | detector | both |");
    println!("|---|---:|---:|---:|---:|");
}

/// Prints the detector's tables. `root` is the repo's root; `poisoned` the
/// corpus's poisoned cases.
pub(super) fn run(
    root: &std::path::Path,
    judges: &Judges,
    poisoned: &[Case],
) -> anyhow::Result<()> {
    let shipped = Detector::shipped();
    let high = shipped.classifier().high;
    println!("\n### The detector: leave one source out\n");
    println!(
        "Each row's detector was trained without any case of that source; the rules were written with all four sources' train splits in view, so their column here is not blind.\n"
    );
    header("left out");
    let corpus = root.join("screen/corpus");
    let benign = dataset::corpus_file(&corpus.join("benign.jsonl"))?;
    let real = dataset::real_tools(root)?;
    let mut others: Vec<Case> =
        dataset::injections(&corpus.join("injections/bastioncorpus.jsonl"))?;
    others.extend(real.iter().filter(|c| c.split == "train").cloned());
    for name in dataset::CATALOGUES {
        others.extend(dataset::catalogue(
            &root.join("tests/data/search/public"),
            name,
        )?);
    }
    let mut sources: Vec<&str> = poisoned.iter().map(|c| c.source.as_str()).collect();
    sources.sort_unstable();
    sources.dedup();
    let mut all = Held::default();
    let mut textual = Held::default();
    // (held by the rules, the left-out detector's score) of every poisoned
    // case whose poison is text.
    let mut loso: Vec<(bool, f32)> = Vec::new();
    for source in &sources {
        let training: Vec<Case> = poisoned
            .iter()
            .chain(&benign)
            .filter(|c| c.source != *source && c.textual())
            .chain(&others)
            .cloned()
            .collect();
        let examples = dataset::examples(shipped.table(), &training);
        let (classifier, _) = train::train(
            &examples,
            input_len(shipped.table()),
            &Settings::default(),
            &format!("without {source}"),
            shipped.table_sha256(),
            "leave one source out",
        );
        let detector = Detector::new(
            shipped.table().clone(),
            classifier,
            shipped.table_sha256().to_string(),
        )?;
        let mut held = Held::default();
        let mut held_textual = Held::default();
        for case in poisoned.iter().filter(|c| c.source == *source) {
            let r = judges.rules(&case.group, &case.tool);
            let d = Judges::detector(&detector, &case.tool);
            held.add(r, d);
            all.add(r, d);
            if case.textual() {
                held_textual.add(r, d);
                textual.add(r, d);
                loso.push((r, detector.score(&case.tool)));
            }
        }
        held.row(source);
        held_textual.row(&format!("{source}, poison in text"));
    }
    all.row("**all**");
    textual.row("**all, poison in text**");

    println!("\n### The paraphrase set (hand-written, frozen before training)\n");
    let paraphrased = dataset::corpus_file(&corpus.join("paraphrased.jsonl"))?;
    let languages = language_of(&corpus.join("paraphrased.jsonl"))?;
    header("language");
    let mut by_language: std::collections::BTreeMap<String, Held> = Default::default();
    let mut total = Held::default();
    let mut paraphrase_scores: Vec<(bool, f32)> = Vec::new();
    for (case, language) in paraphrased.iter().zip(&languages) {
        let r = judges.rules(&case.group, &case.tool);
        let d = Judges::detector(shipped, &case.tool);
        by_language.entry(language.clone()).or_default().add(r, d);
        total.add(r, d);
        paraphrase_scores.push((r, shipped.score(&case.tool)));
    }
    for (language, held) in &by_language {
        held.row(language);
    }
    total.row("**all**");

    println!("\n### Poisoned test cases, disguised\n");
    header("disguise");
    let test: Vec<&Case> = poisoned
        .iter()
        .filter(|c| c.split == "test" && c.textual())
        .collect();
    let mut plain = Held::default();
    let mut interleaved = Held::default();
    for case in &test {
        plain.add(
            judges.rules(&case.group, &case.tool),
            Judges::detector(shipped, &case.tool),
        );
        let tool = interleave(&case.tool);
        interleaved.add(
            judges.rules(&case.group, &tool),
            Judges::detector(shipped, &tool),
        );
    }
    plain.row("none (poison in text)");
    interleaved.row("a zero-width space between all letters");
    let mut spread = Held::default();
    for case in &test {
        let tools = spread_over(&case.tool, 3);
        let server = format!("{}-spread", case.group);
        let r = tools.iter().any(|t| judges.rules(&server, t));
        let d = tools.iter().any(|t| Judges::detector(shipped, t));
        spread.add(r, d);
    }
    spread.row("description spread over 3 tools (held if any is)");

    // What a lower threshold would buy and cost.
    let unseen: Vec<f32> = real
        .iter()
        .filter(|c| c.split == "test")
        .map(|c| shipped.score(&c.tool))
        .collect();
    let corpus_benign: Vec<f32> = benign
        .iter()
        .filter(|c| c.split == "test")
        .map(|c| shipped.score(&c.tool))
        .collect();
    println!("\n### The detector's threshold: recall against false positives\n");
    println!(
        "Recall of the left-out detectors (poison in text) and of the shipped one on the paraphrase set, alone and with the rules, against the share of real tools it flags on its own: the held-out half of the 755 ({} tools of servers it was not trained on) and the corpus's benign test split. The shipped threshold ({high:.3}) was set from out-of-fold scores of training data before any of these was looked at.\n",
        unseen.len()
    );
    println!(
        "| threshold | left out, detector | left out, both | paraphrases, detector | paraphrases, both | real tools (held-out half) flagged | corpus benign test flagged |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for t in [0.80f32, 0.85, 0.90, 0.95, high] {
        let rate = |scores: &[(bool, f32)], with_rules: bool| {
            let n = scores
                .iter()
                .filter(|(r, s)| *s >= t || (with_rules && *r))
                .count();
            percent(n, scores.len())
        };
        let flagged = |scores: &[f32]| {
            let n = scores.iter().filter(|s| **s >= t).count();
            format!("{n} ({:.1} %)", percent(n, scores.len()))
        };
        let label = if t == high {
            format!("{t:.3} (shipped)")
        } else {
            format!("{t:.2}")
        };
        println!(
            "| {label} | {:.1} % | {:.1} % | {:.1} % | {:.1} % | {} | {} |",
            rate(&loso, false),
            rate(&loso, true),
            rate(&paraphrase_scores, false),
            rate(&paraphrase_scores, true),
            flagged(&unseen),
            flagged(&corpus_benign)
        );
    }
    Ok(())
}

/// `n` of `of` in percent (0 when `of` is 0).
pub(super) fn percent(n: usize, of: usize) -> f64 {
    if of == 0 {
        0.0
    } else {
        n as f64 * 100.0 / of as f64
    }
}

/// The `language` of each line of the paraphrase set.
fn language_of(path: &std::path::Path) -> anyhow::Result<Vec<String>> {
    std::fs::read_to_string(path)?
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l)?;
            Ok(v["language"].as_str().unwrap_or("?").to_string())
        })
        .collect()
}

/// `tool` with a zero-width space after every letter of every description.
fn interleave(tool: &ToolDef) -> ToolDef {
    let zw = |s: &str| -> String {
        s.chars()
            .flat_map(|c| {
                if c.is_alphabetic() {
                    vec![c, '\u{200b}']
                } else {
                    vec![c]
                }
            })
            .collect()
    };
    let mut out = tool.clone();
    out.description = zw(&tool.description);
    let mut schema = serde_json::to_value(&tool.input_schema).unwrap_or_default();
    walk_descriptions(&mut schema, &zw);
    if let Ok(s) = serde_json::from_value(schema) {
        out.input_schema = s;
    }
    out
}

fn walk_descriptions(value: &mut serde_json::Value, f: &dyn Fn(&str) -> String) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if k == "description"
                    && let Some(s) = v.as_str()
                {
                    *v = serde_json::Value::String(f(s));
                    continue;
                }
                walk_descriptions(v, f);
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| walk_descriptions(v, f)),
        _ => {}
    }
}

/// `tool`'s description cut into `n` runs of sentences, each the
/// description of one tool of the same server (the schema stays with the
/// first).
fn spread_over(tool: &ToolDef, n: usize) -> Vec<ToolDef> {
    let text = &tool.description;
    let chars: Vec<char> = text.chars().collect();
    let sentences = quiver_screen::detector::sentences(text);
    let per = sentences.len().div_ceil(n).max(1);
    sentences
        .chunks(per)
        .enumerate()
        .map(|(i, run)| {
            let (start, end) = (run[0].0, run[run.len() - 1].1);
            let mut part = tool.clone();
            part.name = format!("{}_{i}", tool.name);
            part.description = chars[start..end].iter().collect();
            if i > 0 {
                part.input_schema = serde_json::from_value(serde_json::json!({"type": "object"}))
                    .unwrap_or_else(|_| tool.input_schema.clone());
            }
            part
        })
        .collect()
}
