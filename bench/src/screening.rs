//! `quiver bench screening`: how well screening holds poisoned tool
//! definitions back and leaves real ones alone, and what it costs.
//!
//! - Poisoned: screen/corpus/poisoned.jsonl (four public sources, licences
//!   beside it), by frozen split and source; a definition counts as held
//!   when its worst finding is high (the default hold level).
//! - Benign: the corpus's benign definitions (same sources) and the 755 real
//!   tools of ../shared/datasets, which nobody here wrote.
//! - Cost: screening a catalogue of `--tools` definitions (the real and the
//!   corpus tools, repeated under new names) as discovery does, once to warm
//!   the rules and then timed.

use std::{path::PathBuf, time::Instant};

use anyhow::Context as _;
use clap::Args;
use quiver_proto::{ServerEntry, ToolDef, catalog::Catalog, finding::Severity};
use quiver_screen::{
    Catalogue, Screen,
    detector::dataset::{Case, corpus_file},
    screen_entry, worst,
};

/// Arguments of `quiver bench screening`.
#[derive(Args, Debug)]
pub struct ScreeningBenchArgs {
    /// Folder holding livemcpbench/ and oslook-mcp-servers-schemas/.
    #[arg(long, default_value = "../shared/datasets")]
    datasets: PathBuf,
    /// Folder holding poisoned.jsonl and benign.jsonl.
    #[arg(long, default_value = "screen/corpus")]
    corpus: PathBuf,
    /// Definitions in the timed catalogue.
    #[arg(long, default_value_t = 10_000)]
    tools: usize,
    /// Also list the real tools flagged high and the poisoned ones not held,
    /// with their findings (on stderr).
    #[arg(long)]
    show: bool,
}

/// The real catalogues: (server, tools) of both datasets.
fn real_tools(datasets: &std::path::Path) -> anyhow::Result<Vec<(String, Vec<ToolDef>)>> {
    let mut servers = Vec::new();
    for (file, prefix) in [
        ("livemcpbench/tools.json", "livemcpbench"),
        (
            "oslook-mcp-servers-schemas/schemas_by_server.json",
            "oslook",
        ),
    ] {
        let catalog = Catalog::load(&datasets.join(file), prefix)
            .with_context(|| format!("the shared datasets ({})", datasets.display()))?;
        for server in catalog.servers {
            servers.push((format!("{prefix}/{}", server.id), server.tools));
        }
    }
    Ok(servers)
}

/// Runs the benchmark.
pub fn run(args: ScreeningBenchArgs) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: this is a debug build; build with `cargo build --release` and run `target/release/quiver bench screening` for numbers"
        );
    }
    let poisoned = corpus_file(&args.corpus.join("poisoned.jsonl"))?;
    let benign = corpus_file(&args.corpus.join("benign.jsonl"))?;
    let real = real_tools(&args.datasets)?;
    let compiling = Instant::now();
    let screen = Screen::get();
    // The detector's table is loaded on first use.
    let _ = screen.detector();
    let compiled_in = compiling.elapsed();
    println!("Screening with {}.\n", screen.describe());

    // Every definition is screened beside all the others: corpus cases as a
    // server per group, real tools under their own servers.
    let mut catalogue = Catalogue::default();
    for case in poisoned.iter().chain(&benign) {
        catalogue.add(&case.group, [case.tool.name.as_str()]);
    }
    for (server, tools) in &real {
        catalogue.add(server, tools.iter().map(|t| t.name.as_str()));
    }
    let high = |server: &str, tool: &ToolDef| {
        worst(&screen.scan(server, tool, &catalogue)) == Some(Severity::High)
    };

    println!("### Poisoned definitions held back (worst finding high; rules and detector)\n");
    println!("| split | source | held | of | rate |");
    println!("|---|---|---:|---:|---:|");
    for split in ["test", "train"] {
        let mut sources: Vec<&str> = poisoned.iter().map(|c| c.source.as_str()).collect();
        sources.sort_unstable();
        sources.dedup();
        let mut total = (0, 0);
        for source in sources {
            let cases: Vec<&Case> = poisoned
                .iter()
                .filter(|c| c.split == split && c.source == source)
                .collect();
            let held = cases.iter().filter(|c| high(&c.group, &c.tool)).count();
            if args.show {
                for case in cases.iter().filter(|c| !high(&c.group, &c.tool)) {
                    eprintln!("not held ({split}): {}/{}", case.group, case.tool.name);
                }
            }
            total = (total.0 + held, total.1 + cases.len());
            row(split, source, held, cases.len());
        }
        row(split, "**all**", total.0, total.1);
    }

    println!("\n### Benign definitions flagged high (false positives)\n");
    println!("| set | flagged | of | rate | medium or low only | by the detector alone |");
    println!("|---|---:|---:|---:|---:|---:|");
    let detector = screen
        .detector()
        .context("the detector is off in this process")?;
    let by_detector = |tool: &ToolDef| worst(&detector.findings(tool)) == Some(Severity::High);
    let mut real_flagged = (0, 0, 0);
    let mut real_by_detector = 0;
    for (server, tools) in &real {
        for tool in tools {
            let findings = screen.scan(server, tool, &catalogue);
            let found = worst(&findings);
            if args.show && found == Some(Severity::High) {
                eprintln!(
                    "real tool flagged high: {server}/{}: {findings:?}",
                    tool.name
                );
            }
            real_flagged.1 += 1;
            real_by_detector += by_detector(tool) as usize;
            match found {
                Some(Severity::High) => real_flagged.0 += 1,
                Some(_) => real_flagged.2 += 1,
                None => {}
            }
        }
    }
    println!(
        "| real tools, ../shared/datasets | {} | {} | {:.1} % | {} | {real_by_detector} |",
        real_flagged.0,
        real_flagged.1,
        crate::screening_detector::percent(real_flagged.0, real_flagged.1),
        real_flagged.2
    );
    for split in ["test", "train"] {
        let cases: Vec<&Case> = benign.iter().filter(|c| c.split == split).collect();
        let worsts: Vec<Option<Severity>> = cases
            .iter()
            .map(|c| worst(&screen.scan(&c.group, &c.tool, &catalogue)))
            .collect();
        let flagged = worsts
            .iter()
            .filter(|w| **w == Some(Severity::High))
            .count();
        let lower = worsts
            .iter()
            .filter(|w| matches!(w, Some(Severity::Low | Severity::Medium)))
            .count();
        let alone = cases.iter().filter(|c| by_detector(&c.tool)).count();
        println!(
            "| corpus benign, {split} | {flagged} | {} | {:.1} % | {lower} | {alone} |",
            cases.len(),
            crate::screening_detector::percent(flagged, cases.len())
        );
    }

    // A catalogue of `--tools` definitions, 50 to a server, as discovery
    // screens it.
    let pool: Vec<&ToolDef> = real
        .iter()
        .flat_map(|(_, tools)| tools)
        .chain(poisoned.iter().chain(&benign).map(|c| &c.tool))
        .collect();
    let mut entries: Vec<ServerEntry> = Vec::new();
    for i in 0..args.tools {
        if i % 50 == 0 {
            entries.push(ServerEntry::new(format!("server{}", i / 50), Vec::new()));
        }
        let mut tool = pool[i % pool.len()].clone();
        tool.name = format!("{}_{i}", tool.name);
        if let Some(entry) = entries.last_mut() {
            entry.tools.push(tool);
        }
    }
    let whole = Catalogue::of_entries(&entries);
    let timed = |entries: &mut Vec<ServerEntry>| {
        let started = Instant::now();
        for entry in entries.iter_mut() {
            screen_entry(entry, &whole);
        }
        started.elapsed()
    };
    let passes = |detector: bool| {
        screen.set_detector(detector);
        let first = timed(&mut entries.clone());
        let mut screened = entries.clone();
        let mut runs: Vec<f64> = (0..3)
            .map(|_| {
                screened = entries.clone();
                timed(&mut screened).as_secs_f64()
            })
            .collect();
        runs.sort_by(f64::total_cmp);
        let held: usize = screened
            .iter()
            .flat_map(|e| e.findings.values())
            .filter(|f| worst(f) == Some(Severity::High))
            .count();
        (first, runs, held)
    };
    let (first, rules_only, rules_held) = passes(false);
    let (_, both, held) = passes(true);
    println!("\n### Cost of screening {} definitions\n", args.tools);
    println!("| what | time |");
    println!("|---|---:|");
    println!(
        "| compiling the rules and loading the detector (once per process) | {compiled_in:.1?} |"
    );
    println!("| first pass, rules only (their automata warming up) | {first:.1?} |");
    for (label, runs) in [("rules only", &rules_only), ("rules and detector", &both)] {
        println!(
            "| {label}, median of 3 (min–max) | {:.1} ms ({:.1} µs per definition; {:.1}–{:.1} ms) |",
            runs[1] * 1000.0,
            runs[1] * 1e6 / args.tools as f64,
            runs[0] * 1000.0,
            runs[2] * 1000.0
        );
    }
    println!(
        "\n{held} of the {} definitions have a high finding ({rules_held} with the rules alone; the corpus's poisoned ones are repeated among them).",
        args.tools
    );
    let root = args.corpus.join("../..");
    let judges = crate::screening_detector::Judges {
        screen,
        catalogue: &catalogue,
    };
    crate::screening_detector::run(&root, &judges, &poisoned)?;
    crate::screening_contextual::run(
        &root,
        &|c: &Case| judges.rules(&c.group, &c.tool),
        &poisoned,
    )?;
    Ok(())
}

fn row(split: &str, source: &str, held: usize, of: usize) {
    println!(
        "| {split} | {source} | {held} | {of} | {:.1} % |",
        crate::screening_detector::percent(held, of)
    );
}
