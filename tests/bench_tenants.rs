//! `quiver bench tenants` at tiny sizes over the real LiveMCPBench catalogue:
//! it still runs, prints its tables, and the counts in them follow the flags
//! (the timings themselves are not checked: benchmarks are not assertions).

use crate::support;

use std::process::Command;

use support::{datasets, quiver_bin};

/// The cells of the table row whose first cell starts with `first`.
fn row<'a>(output: &'a str, first: &str) -> Vec<&'a str> {
    let line = output
        .lines()
        .find(|l| l.starts_with(&format!("| {first}")))
        .unwrap_or_else(|| panic!("no row `{first}` in:\n{output}"));
    line.trim_matches('|').split('|').map(str::trim).collect()
}

fn rows<'a>(output: &'a str, first: &str) -> Vec<Vec<&'a str>> {
    output
        .lines()
        .filter(|l| l.starts_with(&format!("| {first}")))
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
        .collect()
}

#[test]
fn bench_tenants_prints_tables_whose_counts_follow_the_flags() {
    let Some(dir) = datasets() else { return };
    let catalog = dir.join("livemcpbench/tools.json");

    eprintln!("--- run: 20 tenants, 600 tools, 2000 requests");
    let output = Command::new(quiver_bin())
        .args(["bench", "tenants", "--only", "in-process"])
        .args(["--tenants", "20", "--tools", "600"])
        .args(["--requests", "2000", "--catalog"])
        .arg(&catalog)
        .output()
        .expect("spawn quiver bench tenants");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );

    eprintln!("--- per-request table: every request counted once");
    assert!(stdout.contains("## Tenants: authentication and view resolution per request"));
    assert!(
        stdout.contains("Manifest: 600 tools")
            && stdout.contains("20 tenants")
            && stdout.contains("2000 requests"),
        "{stdout}"
    );
    let cold: usize = row(&stdout, "cold:")[1].parse().unwrap();
    let warm: usize = row(&stdout, "warm: `bearer`")[1].parse().unwrap();
    // 2000 uniform draws over 20 tenants reach every tenant.
    assert_eq!((cold, warm), (20, 1980), "{stdout}");
    assert_eq!(row(&stdout, "all requests")[1], "2000");
    assert_eq!(row(&stdout, "unknown key")[1], "200");
    assert_eq!(row(&stdout, "after a tenant change")[1], "20");
    assert!(
        row(&stdout, "warm, while a second thread")[1]
            .parse::<usize>()
            .unwrap()
            > 0
    );

    eprintln!("--- target table");
    assert!(stdout.contains("## Tenants: against the target"));
    let met = row(
        &stdout,
        "authentication + view resolution < 50 µs p99 (warm)",
    )[2];
    assert!(met == "yes" || met == "no", "{met}");

    eprintln!("--- memory table: views built follow the sets and the cap");
    assert!(
        stdout.contains("## Tenants: memory of the views (20 tenants × 600 tools)"),
        "{stdout}"
    );
    for shape in ["narrow", "broad"] {
        let rows = rows(&stdout, shape);
        // (tenants, distinct sets, cap, views built, views sharing the manifest)
        let counts: Vec<(&str, &str, &str, &str, &str)> = rows
            .iter()
            .map(|r| (r[1], r[2], r[3], r[4], r[6]))
            .collect();
        assert_eq!(
            counts,
            [
                ("20", "20", "16384 (default)", "20", "20 / 20"),
                ("20", "20", "2", "2", "20 / 20"),
                ("20", "1", "16384 (default)", "1", "20 / 20"),
            ],
            "{shape}: {stdout}"
        );
    }
}

#[test]
fn bench_tenants_over_http_runs_every_scenario_through_a_real_quiver_dev() {
    let Some(_) = datasets() else { return };
    eprintln!("--- run: 6 tenants over 120 tools, view cap 2");
    let output = Command::new(quiver_bin())
        .args(["bench", "tenants", "--only", "http"])
        .args([
            "--http-tenants",
            "6",
            "--http-tools",
            "120",
            "--small-cap",
            "2",
        ])
        .output()
        .expect("spawn quiver bench tenants");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("## Tenants at scale over HTTP: 6 tenants × 120 tools"),
        "{stdout}"
    );
    for shape in ["broad", "narrow"] {
        let rows = rows(&stdout, shape);
        assert_eq!(rows.len(), 4, "{shape}: {stdout}");
        // The capped server held at most 2 views after serving all 6
        // tenants, forgetting the others as it went.
        let capped = &rows[3];
        assert!(capped[1].contains("view cap 2"), "{capped:?}");
        let held: usize = capped[3].parse().unwrap();
        let evicted: usize = capped[4].parse().unwrap();
        assert!(held <= 2 && evicted >= 3, "{capped:?}");
    }
}
