//! How `quiver ctl` prints an answer: `-o json` prints the answer's fields;
//! otherwise the answer's type picks the layout (a status line, a table of
//! members, upstreams, tenants or verdicts, a new key), and anything else
//! prints as aligned `key  value` lines.

use quiver_control_plane::admin::{
    AdminAnswer, ClusterStatus, Committed, FindingStatus, FindingsReport, FleetVerification,
    GrantSummary, IssuedKey, NodeVerdict, PublicTenant, SecretList, UpstreamSummary,
};
use quiver_fleet::membership::MemberRecord;
use quiver_proto::audit::AuditRecord;
use serde_json::Value;

/// Which part of an answer a command shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shown {
    /// All of it.
    Whole,
    /// Only the members of a cluster status (`cluster members`).
    Members,
}

/// `-o json`.
pub(crate) fn print_json(answer: &AdminAnswer, shown: Shown) -> anyhow::Result<()> {
    let value = match answer {
        AdminAnswer::ClusterStatus(status) if shown == Shown::Members => {
            serde_json::to_value(&status.members)?
        }
        other => other.to_json(),
    };
    say!("{}", serde_json::to_string_pretty(&value)?);
    Ok(())
}

/// `-o json` of `cluster status --etcd`: the control plane's answer under
/// `control_plane`, the records etcd holds under `etcd_members`.
pub(crate) fn print_json_with_etcd(
    answer: &AdminAnswer,
    members: &[MemberRecord],
) -> anyhow::Result<()> {
    let value = serde_json::json!({
        "control_plane": answer.to_json(),
        "etcd_members": members,
    });
    say!("{}", serde_json::to_string_pretty(&value)?);
    Ok(())
}

/// The members registered in etcd, each stub hash checked against
/// `canonical` (the control plane's), in `cluster status --etcd`.
pub(crate) fn etcd_members(members: &[MemberRecord], canonical: &str) {
    if members.is_empty() {
        say!("no edge or executor is registered in etcd");
        return;
    }
    say!("registered in etcd:");
    table(
        &[
            "node",
            "role",
            "address",
            "load",
            "manifest",
            "stub hash",
            "ready",
        ],
        members
            .iter()
            .map(|m| {
                let hash = if canonical.is_empty() || m.stub_hash == canonical {
                    "canonical".to_string()
                } else {
                    format!("differs ({})", m.stub_hash)
                };
                vec![
                    m.node.clone(),
                    m.role.to_string(),
                    m.address.clone(),
                    format!("{}/{}", m.load, m.capacity),
                    format!("v{}", m.manifest_version),
                    hash,
                    if m.ready { "yes" } else { "no" }.into(),
                ]
            })
            .collect(),
    );
}

/// `-o table`.
pub(crate) fn print_table(answer: &AdminAnswer, shown: Shown) {
    match answer {
        AdminAnswer::ClusterStatus(status) if shown == Shown::Members => members(status, false),
        AdminAnswer::ClusterStatus(status) => {
            say!(
                "leader {}  term {}  last log {}  applied {}  snapshot {}  manifest v{} {}",
                status.leader,
                status.term,
                or_dash(status.last_log_index),
                or_dash(status.last_applied),
                or_dash(status.snapshot),
                status.manifest_version,
                status.stub_hash,
            );
            members(status, true);
            if status.fleet.is_empty() {
                say!("no edge or executor has reported yet");
            } else {
                fleet(&status.fleet);
            }
        }
        AdminAnswer::Verify(verification) => verdicts(verification),
        AdminAnswer::UpstreamList(upstreams) => upstream_table(upstreams),
        AdminAnswer::TenantList(tenants) => tenant_table(tenants),
        AdminAnswer::KeyIssue(key) => issued_key(key),
        AdminAnswer::SecretList(list) => secret_table(list),
        AdminAnswer::UpstreamAuthorize(link) => say!(
            "Open this link to grant Quiver access to upstream {} for tenant {} (valid {} min):\n{}",
            link.upstream,
            link.tenant,
            link.expires_in_s / 60,
            link.link
        ),
        AdminAnswer::GrantList(grants) => grant_table(grants),
        AdminAnswer::Audit(records) => audit_table(records),
        AdminAnswer::UpstreamFindings(report) => findings_table(report),
        AdminAnswer::UpstreamRescreen(done) if done.changed.is_empty() => say!(
            "screened {} upstream(s) again: no finding changed",
            done.upstreams
        ),
        AdminAnswer::UpstreamRescreen(done) => say!(
            "screened {} upstream(s) again; findings changed in {} (see `quiver ctl upstream findings`)",
            done.upstreams,
            done.changed.join(", ")
        ),
        AdminAnswer::UpstreamAdd(write)
        | AdminAnswer::UpstreamRemove(write)
        | AdminAnswer::UpstreamApprove(write)
        | AdminAnswer::TenantCreate(write)
        | AdminAnswer::TenantUpdate(write)
        | AdminAnswer::TenantDelete(write)
        | AdminAnswer::KeyRevoke(write)
        | AdminAnswer::SecretSet(write)
        | AdminAnswer::SecretDelete(write)
        | AdminAnswer::UpstreamDeauthorize(write)
        | AdminAnswer::GrantRenew(write) => committed(write),
        other => print_fields(&other.to_json()),
    }
}

fn members(status: &ClusterStatus, with_matched_index: bool) {
    let rows = status
        .members
        .iter()
        .map(|m| {
            let mut row = vec![
                m.id.to_string(),
                m.addr.clone(),
                m.role.as_str().into(),
                m.state.as_str().into(),
            ];
            if with_matched_index {
                row.push(or_dash(m.matched_index));
            }
            row
        })
        .collect();
    if with_matched_index {
        table(&["id", "addr", "role", "state", "matched_index"], rows);
    } else {
        table(&["id", "addr", "role", "state"], rows);
    }
}

fn verdicts(verification: &FleetVerification) {
    say!(
        "canonical manifest v{} {}",
        verification.manifest_version,
        verification.stub_hash
    );
    if verification.nodes.is_empty() {
        say!("no edge or executor has reported yet");
        return;
    }
    table(
        &[
            "node",
            "role",
            "manifest_version",
            "stub_hash",
            "verdict",
            "ready",
        ],
        verification
            .nodes
            .iter()
            .map(|n| {
                vec![
                    n.node.clone(),
                    n.role.as_str().into(),
                    n.manifest_version.to_string(),
                    n.stub_hash.clone(),
                    n.verdict.as_str().into(),
                    readiness(n),
                ]
            })
            .collect(),
    );
}

/// The edges and executors in `cluster status`: manifest, verdict, readiness,
/// and how old its last report is (a node that stops reporting, cut off from
/// the control plane or dead, ages here until it leaves the list).
fn fleet(nodes: &[NodeVerdict]) {
    table(
        &[
            "node", "role", "manifest", "verdict", "ready", "reported", "admin",
        ],
        nodes
            .iter()
            .map(|n| {
                vec![
                    n.node.clone(),
                    n.role.as_str().into(),
                    format!("v{}", n.manifest_version),
                    n.verdict.as_str().into(),
                    readiness(n),
                    format!("{:.1} s ago", n.age_ms as f64 / 1000.0),
                    if n.readiness.admin.is_empty() {
                        "-".into()
                    } else {
                        n.readiness.admin.clone()
                    },
                ]
            })
            .collect(),
    );
}

/// `yes`, `no (<failed checks>)`, or `-` for a node that did not say.
fn readiness(node: &NodeVerdict) -> String {
    match node.readiness.ready {
        Some(true) => "yes".into(),
        Some(false) => format!("no ({})", node.readiness.not_ready),
        None => "-".into(),
    }
}

fn upstream_table(upstreams: &[UpstreamSummary]) {
    table(
        &[
            "id",
            "transport",
            "state",
            "tools",
            "pending",
            "quarantine",
            "tags",
        ],
        upstreams
            .iter()
            .map(|u| {
                vec![
                    u.id.clone(),
                    u.transport.clone(),
                    u.state
                        .map_or_else(|| "unknown".to_string(), |s| s.to_string()),
                    u.tools.to_string(),
                    u.pending.to_string(),
                    u.quarantine.to_string(),
                    u.tags.join(","),
                ]
            })
            .collect(),
    );
}

fn findings_table(report: &FindingsReport) {
    if report.tools.is_empty() {
        say!("no tool definition has screening findings");
        return;
    }
    table(
        &[
            "upstream", "tool", "status", "severity", "rule", "field", "excerpt",
        ],
        report
            .tools
            .iter()
            .flat_map(|t| {
                t.findings.iter().map(move |f| {
                    vec![
                        t.upstream.clone(),
                        t.tool.clone(),
                        t.status.as_str().to_string(),
                        f.severity.to_string(),
                        f.rule.clone(),
                        f.field.clone(),
                        f.excerpt.replace('\n', " "),
                    ]
                })
            })
            .collect(),
    );
    let held = report
        .tools
        .iter()
        .filter(|t| t.status == FindingStatus::Held)
        .count();
    if held > 0 {
        say!(
            "{held} tool(s) held back from every tenant; serve one as it is with `quiver ctl upstream approve <upstream> --tool <tool>`"
        );
    }
}

fn audit_table(records: &[AuditRecord]) {
    if records.is_empty() {
        say!(
            "no audit records match (executors ship records within about 2 s of a call; add --wait 10s to wait for the first)"
        );
        return;
    }
    table(
        &[
            "id", "at", "tenant", "caller", "kind", "tool", "decision", "outcome", "ms", "reason",
        ],
        records
            .iter()
            .map(|r| {
                vec![
                    r.id.to_string(),
                    rfc3339(r.at_ms),
                    r.tenant.clone(),
                    r.caller.clone(),
                    format!("{:?}", r.kind).to_lowercase(),
                    r.tool.clone().unwrap_or_else(|| "-".into()),
                    format!("{:?}", r.decision).to_lowercase(),
                    r.outcome.to_string(),
                    format!("{:.1}", r.latency_us as f64 / 1000.0),
                    r.reason.clone().unwrap_or_default(),
                ]
            })
            .collect(),
    );
}

/// `at_ms` (ms since the epoch) as an RFC 3339 UTC time with milliseconds.
fn rfc3339(at_ms: u64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(at_ms);
    humantime::format_rfc3339_millis(at).to_string()
}

fn tenant_table(tenants: &[PublicTenant]) {
    table(
        &["id", "display_name", "mode", "servers", "keys"],
        tenants
            .iter()
            .map(|t| {
                vec![
                    t.id.clone(),
                    t.display_name.clone(),
                    t.mode
                        .map_or_else(|| "-".to_string(), |mode| mode.to_string()),
                    t.servers.join(","),
                    t.keys.len().to_string(),
                ]
            })
            .collect(),
    );
}

fn secret_table(list: &SecretList) {
    if list.secrets.is_empty() {
        say!("tenant {} has no secrets", list.tenant);
        return;
    }
    table(
        &["name", "updated"],
        list.secrets
            .iter()
            .map(|s| vec![s.name.clone(), rfc3339(s.updated_ms)])
            .collect(),
    );
}

fn grant_table(grants: &[GrantSummary]) {
    if grants.is_empty() {
        say!("no OAuth grants are kept");
        return;
    }
    table(
        &[
            "tenant",
            "upstream",
            "scopes",
            "expires",
            "renewable",
            "granted",
        ],
        grants
            .iter()
            .map(|g| {
                vec![
                    g.tenant.clone(),
                    g.upstream.clone(),
                    g.scopes.join(" "),
                    g.expires_at_ms.map_or_else(|| "-".into(), rfc3339),
                    if g.renewable { "yes" } else { "no" }.into(),
                    rfc3339(g.granted_ms),
                ]
            })
            .collect(),
    );
}

fn issued_key(key: &IssuedKey) {
    say!(
        "key {} for tenant {} (shown once; store it now):\n{}",
        key.key_id,
        key.tenant,
        key.key
    );
}

/// A write: what it did, then where it landed.
fn committed(write: &Committed) {
    print_fields(&write.result.to_json());
    say!(
        "(committed at log index {}, manifest v{})",
        write.log_index,
        write.manifest_version
    );
}

/// `key  value` lines; lists of objects become tables, other nested values
/// compact JSON.
fn print_fields(value: &Value) {
    let Some(object) = value.as_object() else {
        say!("{}", cell(value));
        return;
    };
    let width = object.keys().map(String::len).max().unwrap_or(0);
    let mut tables = Vec::new();
    for (key, value) in object {
        match (key.as_str(), value) {
            (_, Value::Array(items)) if items.first().is_some_and(Value::is_object) => {
                tables.push((key, items));
            }
            (_, Value::Object(_)) => say!("{key:<width$}  {value}"),
            // Times since the epoch read as times (`-o json` keeps the number).
            ("created_ms" | "updated_ms", Value::Number(ms)) if ms.as_u64().is_some() => {
                let name = key.trim_end_matches("_ms");
                say!("{name:<width$}  {}", rfc3339(ms.as_u64().unwrap_or(0)));
            }
            (_, other) => say!("{key:<width$}  {}", cell(other)),
        }
    }
    for (key, items) in tables {
        say!("\n{key}:");
        let columns: Vec<&str> = items[0]
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        value_table(&columns, items);
    }
}

fn or_dash(value: Option<u64>) -> String {
    value.map_or_else(|| "-".into(), |v| v.to_string())
}

/// One JSON value as a table cell: `-` for null, lists comma-separated.
pub(crate) fn cell(value: &Value) -> String {
    match value {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(cell).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

/// A table of JSON objects, one column per key in `columns`.
pub(crate) fn value_table(columns: &[&str], rows: &[Value]) {
    table(
        columns,
        rows.iter()
            .map(|row| columns.iter().map(|c| cell(&row[*c])).collect())
            .collect(),
    );
}

fn table(columns: &[&str], rows: Vec<Vec<String>>) {
    let widths: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([c.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |values: &[String]| {
        values
            .iter()
            .zip(&widths)
            .map(|(v, w)| format!("{v:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let header: Vec<String> = columns.iter().map(|c| c.to_uppercase()).collect();
    say!("{}", line(&header));
    for row in &rows {
        say!("{}", line(row));
    }
}
