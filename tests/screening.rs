//! Poisoned tool definitions beside real ones, through `quiver dev
//! --catalog`: the real servers (eight of LiveMCPBench's, public tools nobody
//! here wrote) are served, and every poisoned definition of the corpus's
//! frozen test split (screen/corpus, from four public sources) is held back.
//! A client of every mode observes exactly what it observes from a gateway
//! without the poisoned servers, whatever it probes with their names and
//! words. `quiver ctl upstream findings` shows what was held and why;
//! approving one tool serves it and leaves a record in the event and audit
//! logs; a tenant may hold back more than its upstreams do.

use std::path::Path;

use crate::support;

use serde_json::{Value, json};
use support::{QuiverDev, answers::answer, connect_as, ctl, ctl_json};

/// The real servers served beside the poisoned ones.
const REAL: [&str; 8] = [
    "BioMCP: Biomedical Model Context Protocol",
    "Filesystem MCP Server",
    "Fetch MCP Server",
    "Time MCP Server",
    "Wikipedia MCP Server",
    "Hacker News MCP Server",
    "mcp-server-git: A git MCP server",
    "MCP Weather Free",
];

/// One poisoned definition as the catalogue serves it.
struct Poisoned {
    server: String,
    tool: Value,
}

impl Poisoned {
    fn name(&self) -> &str {
        self.tool["name"].as_str().unwrap_or_default()
    }

    fn exposed(&self) -> String {
        format!("{}__{}", self.server, self.name())
    }

    /// The first words of its description: what a search for it would say.
    fn words(&self) -> String {
        let description = self.tool["description"].as_str().unwrap_or_default();
        description
            .split_whitespace()
            .take(8)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The corpus's test split, one server per source (`poisoned-msb`, …), names
/// made unique within a server.
fn poisoned_test_split() -> Vec<Poisoned> {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("screen/corpus/poisoned.jsonl");
    let text = std::fs::read_to_string(&corpus).expect("screen/corpus/poisoned.jsonl");
    let mut out: Vec<Poisoned> = Vec::new();
    for line in text.lines() {
        let entry: Value = serde_json::from_str(line).expect("a corpus line");
        if entry["split"] != "test" {
            continue;
        }
        let server = format!("poisoned-{}", entry["source"].as_str().unwrap_or("x"));
        let mut tool = entry["tool"].clone();
        let base = tool["name"].as_str().unwrap_or("tool").to_string();
        let mut name = base.clone();
        let mut n = 2;
        while out.iter().any(|p| p.server == server && p.name() == name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        tool["name"] = json!(name);
        out.push(Poisoned { server, tool });
    }
    assert!(out.len() >= 40, "the test split has {} entries", out.len());
    out
}

/// A catalogue file of the real servers, and with `poisoned` the poisoned ones.
fn catalogue(dir: &Path, name: &str, poisoned: &[Poisoned]) -> String {
    let mut servers = support::livemcpbench_servers(&REAL);
    let mut by_server: std::collections::BTreeMap<&str, Vec<Value>> = Default::default();
    for p in poisoned {
        by_server.entry(&p.server).or_default().push(p.tool.clone());
    }
    for (server, tools) in by_server {
        servers.push(json!({"name": server, "description": "tools", "tools": tools}));
    }
    let path = support::write_file(dir, name, &serde_json::to_string(&servers).unwrap());
    path.to_str().unwrap().to_string()
}

/// What a client of each mode observes: the listing, and probes with every
/// poisoned tool's names and words.
async fn observe(dev: &QuiverDev, poisoned: &[Poisoned]) -> Vec<String> {
    let mut seen = Vec::new();
    for mode in ["passthrough", "search", "code"] {
        let client = support::connect(&dev.mode_url(mode)).await;
        let tools = client
            .list_all_tools()
            .await
            .map(|t| serde_json::to_string(&t).unwrap());
        seen.push(format!("{mode} tools/list: {tools:?}"));
        let mut probes: Vec<(String, Value)> = Vec::new();
        for p in poisoned {
            let exposed = p.exposed();
            match mode {
                "passthrough" => probes.push((exposed, json!({}))),
                "search" => {
                    probes.push(("search_tools".into(), json!({"query": p.words()})));
                    probes.push((
                        "call_tool".into(),
                        json!({"name": exposed, "arguments": {}}),
                    ));
                }
                _ => {
                    probes.push(("search".into(), json!({"query": p.words(), "limit": 10})));
                    probes.push(("describe".into(), json!({"names": [exposed]})));
                    probes.push((
                        "execute".into(),
                        json!({"code": format!("return await tools.call('{exposed}', {{}})")}),
                    ));
                }
            }
        }
        if mode == "code" {
            probes.push(("list".into(), json!({})));
            probes.push((
                "execute".into(),
                json!({"code": "return Object.keys(tools)"}),
            ));
        }
        for (tool, args) in probes {
            let said = answer(&client, &tool, args.clone()).await;
            seen.push(format!("{mode} {tool} {args}: {said}"));
        }
        client.cancel().await.unwrap();
    }
    seen
}

#[tokio::test(flavor = "multi_thread")]
async fn poisoned_definitions_are_held_back_in_every_mode_and_real_ones_served() {
    let poisoned = poisoned_test_split();
    let dir = tempfile::tempdir().unwrap();
    let mixed = catalogue(dir.path(), "mixed.json", &poisoned);
    let clean = catalogue(dir.path(), "clean.json", &[]);
    // Lexical ranking on both: the sentence model embeds a view in the
    // background, so which answers come before its vectors are ready depends
    // on timing, not on what the gateways serve.
    let no_model = dir.path().join("no-model");
    let env = [("QUIVER_SEARCH_MODEL_DIR", no_model.as_path())];
    let with_poison = QuiverDev::start_with_env(&["--catalog", &mixed], &env);
    let without = QuiverDev::start_with_env(&["--catalog", &clean], &env);

    tracing::info!("--- every held tool is reported with its findings");
    let report = ctl_json(&with_poison.control_plane, &["upstream", "findings"]);
    let held: Vec<(String, String)> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "held")
        .map(|t| {
            assert!(
                t["findings"][0]["severity"] == "high" && t["findings"][0]["rule"].is_string(),
                "a held tool shows its high finding first: {t}"
            );
            (
                t["upstream"].as_str().unwrap().to_string(),
                t["tool"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let missed: Vec<String> = poisoned
        .iter()
        .filter(|p| !held.contains(&(p.server.clone(), p.name().to_string())))
        .map(Poisoned::exposed)
        .collect();
    assert!(
        missed.is_empty(),
        "{} of {} poisoned test definitions are served: {missed:?}",
        missed.len(),
        poisoned.len()
    );
    assert_eq!(held.len(), poisoned.len(), "only poisoned tools are held");

    tracing::info!("--- clients observe what they would without the poisoned servers");
    let through_poison = observe(&with_poison, &poisoned).await;
    let alone = observe(&without, &poisoned).await;
    assert_eq!(through_poison.len(), alone.len());
    for (poisoned_answer, clean_answer) in through_poison.iter().zip(&alone) {
        assert_eq!(
            poisoned_answer, clean_answer,
            "a client of the gateway with poisoned servers observed something a client without them did not"
        );
    }
    // Not vacuous: the real tools are listed.
    assert!(
        through_poison[0].contains("Hacker-News-MCP-Server__")
            && through_poison[0].contains("Wikipedia-MCP-Server__"),
        "{}",
        through_poison[0]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_approved_tool_is_served_with_its_findings_and_tenants_may_hold_more() {
    let poisoned = poisoned_test_split();
    let dir = tempfile::tempdir().unwrap();
    let mixed = catalogue(dir.path(), "mixed.json", &poisoned);
    let dev = QuiverDev::start(&["--auth", "required", "--catalog", &mixed]);
    let cp = dev.control_plane.clone();
    let key_of = |tenant: &str, extra: &[&str]| {
        let mut args = vec!["tenant", "create", tenant];
        args.extend_from_slice(extra);
        let (ok, _, err) = ctl(&cp, &args);
        assert!(ok, "tenant create {tenant}: {err}");
        ctl_json(&cp, &["key", "issue", tenant])["key"]
            .as_str()
            .expect("a key")
            .to_string()
    };
    let default_key = key_of("ordinary", &[]);
    let strict_key = key_of("strict", &["--hold-findings", "medium"]);

    tracing::info!("--- the table names what was held and how to serve it");
    let (ok, table, err) = ctl(&cp, &["upstream", "findings"]);
    assert!(ok, "{err}");
    assert!(table.contains("held") && table.contains("high"), "{table}");
    assert!(
        table.contains("quiver ctl upstream approve"),
        "the table says how to approve: {table}"
    );

    tracing::info!("--- approve one held tool: it is served, findings and all");
    let chosen = &poisoned[0];
    let exposed = chosen.exposed();
    let client = connect_as(&dev.mode_url("passthrough"), &default_key).await;
    let before = support::tool_names(&client).await;
    assert!(!before.contains(&exposed), "{exposed} is held: {before:?}");
    let approval = ctl_json(
        &cp,
        &[
            "upstream",
            "approve",
            &chosen.server,
            "--tool",
            chosen.name(),
        ],
    );
    assert_eq!(
        approval["result"]["approved"],
        json!([chosen.name()]),
        "{approval}"
    );
    assert!(
        approval["result"]["findings"][chosen.name()][0]["rule"].is_string(),
        "the approval shows the findings it accepted: {approval}"
    );
    let served = support::ctl_until(&cp, &["-o", "json", "upstream", "findings"], |ok, out| {
        ok && out.contains("\"approved\"")
    });
    assert!(served.contains(chosen.name()), "{served}");
    let mut listed = Vec::new();
    for _ in 0..100 {
        listed = support::tool_names(&client).await;
        if listed.contains(&exposed) {
            break;
        }
        // The edge picks the new manifest up from its watch.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        listed.contains(&exposed),
        "{exposed} served after approval: {listed:?}"
    );

    tracing::info!("--- the approval is in the event log and the audit log");
    let audit = ctl_json(&cp, &["audit"]);
    let record = audit
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "approval")
        .unwrap_or_else(|| panic!("an approval record: {audit}"));
    assert_eq!(
        record["tool"],
        json!(format!("{}/{}", chosen.server, chosen.name()))
    );
    assert!(
        record["reason"]
            .as_str()
            .unwrap()
            .contains("findings approved")
    );

    tracing::info!("--- a tenant holding medium findings does not see a served medium one");
    let medium: Vec<String> = ctl_json(&cp, &["upstream", "findings"])["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "served")
        .map(|t| t["tool"].as_str().unwrap().to_string())
        .collect();
    assert!(!medium.is_empty(), "some real tool has a medium finding");
    let strict = connect_as(&dev.mode_url("passthrough"), &strict_key).await;
    let strict_sees = support::tool_names(&strict).await;
    let ordinary_sees = support::tool_names(&client).await;
    for tool in &medium {
        assert!(
            ordinary_sees
                .iter()
                .any(|t| t.ends_with(&format!("__{tool}"))),
            "{tool} is served to an ordinary tenant"
        );
        assert!(
            !strict_sees
                .iter()
                .any(|t| t.ends_with(&format!("__{tool}"))),
            "{tool} is hidden from a tenant holding medium findings"
        );
    }
    assert!(
        strict_sees.len() + medium.len() < ordinary_sees.len(),
        "the strict tenant also misses the approved high one"
    );

    tracing::info!("--- screening again: every upstream, and a fixed point");
    // A first pass may find what discovery could not (a server discovered
    // before the one whose tools it names); a second finds nothing new.
    let upstreams = ctl_json(&cp, &["upstream", "list"])
        .as_array()
        .unwrap()
        .len();
    let first = ctl_json(&cp, &["upstream", "rescreen"]);
    assert_eq!(first["upstreams"], json!(upstreams), "{first}");
    let findings_before = ctl_json(&cp, &["upstream", "findings"]);
    let again = ctl_json(&cp, &["upstream", "rescreen"]);
    assert_eq!(again["changed"], json!([]), "{again}");
    assert_eq!(ctl_json(&cp, &["upstream", "findings"]), findings_before);
    // The approval is bound to the definition, which did not change.
    assert!(support::tool_names(&client).await.contains(&exposed));
    let (ok, _, err) = ctl(&cp, &["upstream", "rescreen", "no-such-upstream"]);
    assert!(!ok && err.contains("no-such-upstream"), "{err}");
    client.cancel().await.unwrap();
    strict.cancel().await.unwrap();
}
