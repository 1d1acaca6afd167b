//! Which layer stops how many cases, counted from the table: printed by the
//! suite so a reader sees the shape of the defence at a glance.

use std::collections::BTreeMap;

use super::case::{Case, Expected, FullPath};

/// Counts per validator rule and per runtime outcome, one line each.
pub fn layer_summary(cases: &[Case]) -> String {
    let mut by_rule: BTreeMap<&str, usize> = BTreeMap::new();
    let mut by_runtime: BTreeMap<String, usize> = BTreeMap::new();
    for case in cases {
        let rule = match case.full_path {
            FullPath::Rejected(rule) => rule,
            FullPath::Runs => "(passes validation)",
        };
        *by_rule.entry(rule).or_default() += 1;
        let runtime = match &case.runtime {
            Expected::Returns(_) => "returns a value showing no effect".to_string(),
            Expected::Fails(kind, _) => format!("fails: {kind}"),
        };
        *by_runtime.entry(runtime).or_default() += 1;
    }
    let reaching_host = cases.iter().filter(|c| !c.host.is_empty()).count();
    let list = |counts: Vec<(String, usize)>| {
        counts
            .into_iter()
            .map(|(what, n)| format!("    {n:>4}  {what}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    format!(
        "{} cases\nfull path, by validator rule:\n{}\nruntime only:\n{}\n{reaching_host} cases must reach the host with exactly the listed calls; the others with none",
        cases.len(),
        list(
            by_rule
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect()
        ),
        list(by_runtime.into_iter().collect()),
    )
}
