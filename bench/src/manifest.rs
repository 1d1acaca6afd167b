//! `quiver bench manifest`: the bytes `WatchManifest` ships to every edge and
//! executor per manifest change at 10,000 tools, whole (what every update
//! carried before deltas, and what a consumer that does not accept deltas
//! still gets) against the delta, and the time to compute and apply it.

use std::{path::PathBuf, time::Instant};

use clap::Args;
use prost::Message as _;
use quiver_proto::{Manifest, delta, manifest::ServerEntry};

use crate::tenants::{load_catalog, replicated_entries};

/// Arguments of `quiver bench manifest`.
#[derive(Args, Debug)]
pub struct ManifestBenchArgs {
    /// Tools in the manifest: the catalogue replicated under distinct server
    /// ids (`<server>-r<k>`), the last copy cut short.
    #[arg(long, default_value_t = 10_000)]
    tools: usize,
    /// Tool catalogue (any file `quiver dev --catalog` reads).
    #[arg(long, default_value = "../shared/datasets/livemcpbench/tools.json")]
    catalog: PathBuf,
}

/// Runs the benchmark.
pub fn run(args: ManifestBenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.tools > 0, "--tools must be at least 1");
    let catalog = load_catalog(&args.catalog)?;
    let entries = replicated_entries(&catalog, args.tools);
    let base = Manifest::build(1, entries.clone());
    let whole = base.to_pb().encoded_len();
    println!(
        "Manifest: {} tools on {} servers (the {}-tool catalogue {} replicated); whole, it is {} bytes on the wire.\n",
        base.tools.len(),
        base.servers.len(),
        catalog.tool_count(),
        args.catalog.display(),
        whole
    );
    let scenarios: Vec<(&str, Vec<ServerEntry>)> = vec![
        ("one tool's description changed", {
            let mut next = entries.clone();
            let middle = next.len() / 2;
            next[middle].tools[0].description.push_str(" (revised)");
            next
        }),
        ("one upstream added", {
            let mut next = entries.clone();
            let mut added = next[0].clone();
            added.id = "added-upstream".into();
            added.namespace = "added-upstream".into();
            next.push(added);
            next
        }),
        ("one upstream removed", {
            let mut next = entries.clone();
            let third = next.len() / 3;
            next.remove(third);
            next
        }),
        ("every tenth tool changed", {
            let mut next = entries.clone();
            let mut n = 0usize;
            for server in &mut next {
                for tool in &mut server.tools {
                    if n.is_multiple_of(10) {
                        tool.description.push_str(" (revised)");
                    }
                    n += 1;
                }
            }
            next
        }),
    ];
    println!(
        "| change | tools shipped | whole (bytes) | delta (bytes) | ratio | compute delta (ms) | apply delta (ms) | rebuild from whole (ms) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (name, next_entries) in scenarios {
        let next = Manifest::build(2, next_entries);
        let whole_message = next.to_pb();
        let whole_next = whole_message.encoded_len();
        let started = Instant::now();
        Manifest::from_pb(&whole_message)?;
        let whole_ms = started.elapsed().as_secs_f64() * 1000.0;
        let started = Instant::now();
        let computed = delta::between(&base, &next);
        let compute_ms = started.elapsed().as_secs_f64() * 1000.0;
        let Some(change) = computed else {
            println!(
                "| {name} | {} (whole: a delta would be no smaller) | {whole_next} | - | 1.00 | {compute_ms:.1} | - | {whole_ms:.1} |",
                next.tools.len()
            );
            continue;
        };
        let started = Instant::now();
        let rebuilt = delta::apply(&base, &change)?;
        let apply_ms = started.elapsed().as_secs_f64() * 1000.0;
        anyhow::ensure!(
            rebuilt.stub_hash == next.stub_hash,
            "{name}: the delta did not rebuild the manifest"
        );
        let bytes = change.encoded_len();
        println!(
            "| {name} | {} upserted, {} removed | {whole_next} | {bytes} | {:.5} | {compute_ms:.1} | {apply_ms:.1} | {whole_ms:.1} |",
            change.upserted.len(),
            change.removed.len(),
            bytes as f64 / whole_next as f64
        );
    }
    println!(
        "\nWhole: the manifest message every update carried before deltas (and still \
         carries to a consumer that does not accept them, or on its first update). \
         The registry, tenants and secrets now travel only when they changed. \
         Applying a delta rebuilds the manifest's stubs and stub hash, as decoding \
         the whole one does (the last column)."
    );
    Ok(())
}
