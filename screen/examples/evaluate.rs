//! Detection on the corpus: `cargo run -p quiver-screen --example evaluate -- SPLIT [all]`.

use quiver_proto::{ToolDef, finding::Severity};
use quiver_screen::{Catalogue, Screen};

fn main() {
    let split = std::env::args().nth(1).unwrap_or_else(|| "train".into());
    let verbose = std::env::args().nth(2).is_some();
    let load = |file: &str| -> Vec<(String, String, ToolDef)> {
        std::fs::read_to_string(format!("screen/corpus/{file}"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|v| split == "all" || v["split"] == split.as_str())
            .map(|v| {
                (
                    v["id"].as_str().unwrap().to_string(),
                    v["group"].as_str().unwrap().to_string(),
                    serde_json::from_value(v["tool"].clone()).unwrap(),
                )
            })
            .collect()
    };
    let poisoned = load("poisoned.jsonl");
    let benign = load("benign.jsonl");
    let catalogue = Catalogue::new(
        poisoned
            .iter()
            .chain(&benign)
            .map(|(_, g, t)| (g.as_str(), vec![t.name.as_str()])),
    );
    let screen = Screen::get();
    let mut held = 0;
    for (id, group, tool) in &poisoned {
        let f = screen.scan(group, tool, &catalogue);
        let worst = quiver_screen::worst(&f);
        if worst == Some(Severity::High) {
            held += 1;
            if verbose {
                println!("HELD {id}: {}", f[0].rule);
            }
        } else {
            println!(
                "MISSED {id} ({worst:?}): {}",
                tool.description
                    .chars()
                    .take(300)
                    .collect::<String>()
                    .replace('\n', " ")
            );
            for x in &f {
                println!("    {} {} {} [{}]", x.severity, x.rule, x.field, x.excerpt);
            }
        }
    }
    let mut fp = 0;
    for (id, group, tool) in &benign {
        let f = screen.scan(group, tool, &catalogue);
        if quiver_screen::worst(&f) == Some(Severity::High) {
            fp += 1;
            println!(
                "BENIGN HIGH {id}: {:?}",
                f.iter()
                    .filter(|x| x.severity == Severity::High)
                    .map(|x| (&x.rule, &x.excerpt))
                    .collect::<Vec<_>>()
            );
        }
    }
    println!(
        "held {held}/{} poisoned; {fp}/{} benign high",
        poisoned.len(),
        benign.len()
    );
}
