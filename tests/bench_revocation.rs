//! `quiver bench revocation` still runs end to end (a real `quiver dev --auth
//! required`, keys issued and revoked through the operator API) and reports
//! the rounds it was asked for; its timings are not checked here.

use crate::support;

use std::process::Command;

use support::quiver_bin;

#[test]
fn bench_revocation_revokes_every_key_it_issued_and_prints_the_table() {
    let output = Command::new(quiver_bin())
        .args(["bench", "revocation", "--rounds", "3"])
        .env("V82JSC_NO_BC_CACHE", "1")
        .output()
        .expect("spawn quiver bench revocation");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("3 keys issued and revoked"), "{stdout}");
    let row = stdout
        .lines()
        .find(|l| l.starts_with("| ") && l.contains(" ms |"))
        .unwrap_or_else(|| panic!("no latency row in:\n{stdout}"));
    assert_eq!(row.matches(" ms").count(), 3, "{row}");
}
