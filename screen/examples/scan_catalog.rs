//! Prints what screening finds in a catalogue file:
//! `cargo run -p quiver-screen --example scan_catalog -- FILE [min-severity]`.

use quiver_proto::{catalog::Catalog, finding::Severity};
use quiver_screen::{Catalogue, Screen};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("a catalogue file");
    let min = args
        .next()
        .and_then(|s| Severity::parse(&s))
        .unwrap_or(Severity::Medium);
    let catalog = Catalog::load(path.as_ref(), "default").expect("a catalogue");
    let catalogue = Catalogue::new(catalog.servers.iter().map(|s| {
        (
            s.id.as_str(),
            s.tools.iter().map(|t| t.name.as_str()).collect(),
        )
    }));
    let compiling = std::time::Instant::now();
    let screen = Screen::get();
    println!("rules compiled in {:?}", compiling.elapsed());
    let started = std::time::Instant::now();
    let mut flagged = 0;
    for server in &catalog.servers {
        for tool in &server.tools {
            let findings = screen.scan(&server.id, tool, &catalogue);
            let shown: Vec<_> = findings.iter().filter(|f| f.severity >= min).collect();
            if !shown.is_empty() {
                flagged += 1;
                for f in shown {
                    println!(
                        "{}/{} {} {} {} [{}]",
                        server.id, tool.name, f.severity, f.rule, f.field, f.excerpt
                    );
                }
            }
        }
    }
    let again = std::time::Instant::now();
    for server in &catalog.servers {
        for tool in &server.tools {
            let _ = screen.scan(&server.id, tool, &catalogue);
        }
    }
    println!("second pass {:?}", again.elapsed());
    println!(
        "{flagged} of {} tools with findings >= {min} ({:?})",
        catalog.tool_count(),
        started.elapsed()
    );
}
