//! The web console in a real browser (Debian's headless Chromium through
//! chromedriver) against a real `quiver dev` serving public catalogue data:
//! a tenant signs in with its key, sees only its own tools, searches them,
//! reads a declaration, runs a script and sees its call in the audit,
//! issues and revokes a key; another tenant and a signed-out visitor see
//! nothing of the first; the operator approves a tool that screening held
//! back and the tenant then sees it; at 10,000 tools the list pages and
//! searches. Screenshots of each page land in `target/console-screenshots/`.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::{self, QuiverDev, browser::Browser, ctl_json};

/// The public servers served (LiveMCPBench), and one server of a poisoned
/// definition from the screening corpus's test split.
const SERVERS: [&str; 3] = [
    "Time MCP Server",
    "Wikipedia MCP Server",
    "MCP Weather Free",
];

/// A catalogue of [`SERVERS`] and the poisoned `get_weather` (an exfiltration
/// parameter), which screening holds back until approved.
fn catalogue(dir: &Path) -> Option<String> {
    support::datasets()?;
    let mut servers = support::livemcpbench_servers(&SERVERS);
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("screen/corpus/poisoned.jsonl");
    let poisoned = std::fs::read_to_string(corpus)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["split"] == "test" && e["attack"] == "exfiltration-parameter")
        .expect("an exfiltration definition in the test split");
    servers.push(json!({"name": "poisoned", "description": "tools", "tools": [poisoned["tool"]]}));
    let path = support::write_file(
        dir,
        "console.json",
        &serde_json::to_string(&servers).unwrap(),
    );
    Some(path.to_str().unwrap().to_string())
}

/// The upstream id `quiver dev` gave the server whose id contains `part`.
fn upstream_id(cp: &str, part: &str) -> String {
    let upstreams = ctl_json(cp, &["upstream", "list"]);
    upstreams
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|u| u["id"].as_str())
        .find(|id| id.contains(part))
        .unwrap_or_else(|| panic!("no upstream like {part}: {upstreams}"))
        .to_string()
}

/// A tenant seeing `servers`, and a key of it.
fn tenant(cp: &str, id: &str, servers: &[&str], extra: &[&str]) -> String {
    let mut flags = Vec::new();
    for server in servers {
        flags.extend(["--server", server]);
    }
    flags.extend_from_slice(extra);
    support::tenant_with_flags(cp, id, &flags)
}

fn console_url(dev: &QuiverDev) -> String {
    format!("http://{}/console/", dev.authority())
}

/// Signs in with `credential` as `role`.
async fn sign_in(browser: &Browser, role: &str, credential: &str) {
    browser.wait_until_present("#signin-form").await;
    browser.select("#role", role).await;
    browser.type_into("#credential", credential).await;
    browser.click("#signin-button").await;
    browser
        .wait_for("#whoami", "signed in", |t| !t.is_empty())
        .await;
}

/// A status the signed-in (or not) page gets from `path` of the console API.
async fn status_of(browser: &Browser, path: &str) -> u64 {
    browser
        .script(
            "return fetch('/console/api' + arguments[0], {credentials: 'same-origin'}).then((r) => r.status);",
            json!([path]),
        )
        .await
        .as_u64()
        .unwrap_or_default()
}

/// The names of the tools the page lists now.
async fn listed(browser: &Browser) -> Vec<String> {
    browser.texts("#tool-list .tool-name").await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenant_sees_only_its_tools_runs_a_script_and_manages_its_keys() {
    let dir = tempfile::tempdir().unwrap();
    let Some(catalogue) = catalogue(dir.path()) else {
        return;
    };
    let dev = QuiverDev::start(&["--auth", "required", "--catalog", &catalogue]);
    let cp = dev.control_plane.clone();
    let (wiki, weather, time) = (
        upstream_id(&cp, "Wikipedia"),
        upstream_id(&cp, "Weather"),
        upstream_id(&cp, "Time"),
    );
    let alpha = tenant(
        &cp,
        "alpha",
        &[&wiki, &weather],
        &["--self-service-keys", "true"],
    );
    let beta = tenant(&cp, "beta", &[&time], &[]);
    let browser = Browser::start("tenant").await;

    // Signed out: the sign-in form, and nothing from the API.
    browser.goto(&console_url(&dev)).await;
    browser.wait_until_present("#signin-form").await;
    browser.screenshot("signed-out").await;
    assert_eq!(status_of(&browser, "/tools").await, 401);
    assert_eq!(status_of(&browser, "/audit").await, 401);
    let text = browser.page_text().await;
    assert!(
        !text.contains("Wikipedia") && !text.contains("alpha"),
        "{text}"
    );

    // A wrong key is refused, and says so.
    browser.select("#role", "tenant").await;
    browser.type_into("#credential", "qk_wrong_0000").await;
    browser.click("#signin-button").await;
    browser
        .wait_text("#signin-error", "unknown, revoked or expired")
        .await;

    sign_in(&browser, "tenant", &alpha).await;
    browser.wait_text("#whoami", "tenant alpha").await;

    // Its tools: the 11 of its two servers, none of beta's.
    let info = browser.wait_text("#page-info", "of 11").await;
    assert!(info.starts_with("1–11"), "{info}");
    let names = listed(&browser).await;
    assert_eq!(names.len(), 11, "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| n.starts_with(&format!("{wiki}__")) || n.starts_with(&format!("{weather}__"))),
        "{names:?}"
    );
    browser.screenshot("tools").await;

    // Search ranks its tools only: beta's time tools never come up.
    browser
        .type_into("#tool-search", "current time in a timezone")
        .await;
    browser.wait_text("#page-info", "best matches").await;
    let found = listed(&browser).await;
    assert!(!found.is_empty(), "a search answers");
    assert!(
        found.iter().all(|n| !n.starts_with(&format!("{time}__"))),
        "{found:?}"
    );
    browser
        .type_into("#tool-search", "wikipedia article summary")
        .await;
    browser
        .wait_for("#tool-list .tool-name", "the summary tool first", |t| {
            t.ends_with("get_summary")
        })
        .await;

    // A tool's TypeScript declaration.
    browser.click("#tool-list .tool-row").await;
    let declaration = browser.wait_text("#declaration", "get_summary").await;
    assert!(declaration.contains("title"), "{declaration}");
    browser.screenshot("tool").await;

    // The playground runs a script on its view, and shows the call it made.
    browser.click("#nav a[data-view=playground]").await;
    let script = format!(
        "console.log('asking');\nreturn await tools.call('{wiki}__get_summary', {{ title: 'Lisbon' }});"
    );
    browser.type_into("#script", &script).await;
    browser.click("#run").await;
    let result = browser.wait_text("#run-result", "get_summary").await;
    assert!(result.contains("Lisbon"), "{result}");
    browser.wait_text("#run-logs", "asking").await;
    let call = browser
        .wait_text("#calls-table .call-row", "get_summary")
        .await;
    assert!(call.contains("allowed") && call.contains("ok"), "{call}");
    browser.screenshot("playground").await;

    // A script cannot reach beta's tools either.
    browser
        .type_into(
            "#script",
            &format!("return await tools.call('{time}__get_current_time', {{ timezone: 'UTC' }});"),
        )
        .await;
    browser.click("#run").await;
    let refused = browser.wait_until_present("#run-error").await;
    assert!(!refused.contains("UTC"), "{refused}");

    // The call is in the audit, filtered by tool.
    browser.click("#nav a[data-view=audit]").await;
    browser.wait_until_present("#audit-table").await;
    browser.type_into("#audit-tool", "get_summary").await;
    browser.click("#audit-apply").await;
    let row = browser
        .wait_text("#audit-table .audit-row", "get_summary")
        .await;
    assert!(row.contains("call"), "{row}");
    let rows = browser.texts("#audit-table .audit-row").await;
    assert!(rows.iter().all(|r| r.contains("get_summary")), "{rows:?}");
    browser.screenshot("audit").await;

    // Usage, with its charts drawn in the page.
    browser.click("#nav a[data-view=usage]").await;
    browser.wait_until_present("#budget-chart").await;
    let bars = browser
        .script(
            "return document.querySelectorAll('#activity-chart rect.calls').length;",
            json!([]),
        )
        .await;
    assert!(
        bars.as_u64().unwrap_or_default() >= 1,
        "the last hour's calls are drawn: {bars}"
    );
    browser.screenshot("usage").await;

    // Keys: issue one (shown once), then revoke it.
    browser.click("#nav a[data-view=keys]").await;
    browser.wait_until_present("#keys-table").await;
    let before = browser.texts("#keys-table .key-row").await.len();
    browser.click("#issue-key").await;
    let key = browser
        .wait_for("#new-key", "the new key", |t| t.starts_with("qk_"))
        .await;
    let key_id = key.trim().split('_').nth(1).unwrap().to_string();
    assert_eq!(
        browser.texts("#keys-table .key-row").await.len(),
        before + 1
    );
    let shown = ctl_json(&cp, &["tenant", "show", "alpha"]);
    assert!(
        shown.to_string().contains(&key_id),
        "the control plane holds the new key: {shown}"
    );
    browser.screenshot("keys").await;
    browser
        .click(&format!(".revoke[data-key='{key_id}']"))
        .await;
    browser
        .wait_for("#keys-table", "the revoked key gone", |t| {
            !t.contains(&key_id)
        })
        .await;
    // Revoked: the key no longer works on MCP either.
    support::ctl_until(
        &cp,
        &["-o", "json", "tenant", "show", "alpha"],
        |ok, out| ok && !out.contains(&key_id),
    );
    let refused = support::post_initialize(&dev.url, Some(&format!("Bearer {}", key.trim()))).await;
    assert_eq!(refused.status(), 401);

    // Findings: the poisoned server is not alpha's, so none are shown.
    browser.click("#nav a[data-view=findings]").await;
    browser.wait_until_present("#findings-none").await;

    // Signed out, the API answers nothing again.
    browser.click("#sign-out").await;
    browser.wait_until_present("#signin-form").await;
    assert_eq!(status_of(&browser, "/tools").await, 401);

    // Beta sees its own tools, none of alpha's, and none of alpha's audit.
    sign_in(&browser, "tenant", &beta).await;
    browser.wait_text("#page-info", "of 2").await;
    let names = listed(&browser).await;
    assert!(
        names.iter().all(|n| n.starts_with(&format!("{time}__"))),
        "{names:?}"
    );
    browser.click("#nav a[data-view=audit]").await;
    let audit = browser.wait_until_present("#audit-table").await;
    assert!(
        !audit.contains("get_summary") && !audit.contains("key:"),
        "{audit}"
    );
    assert_eq!(status_of(&browser, "/op/tenants").await, 403);
    // Beta's operator did not let it manage keys.
    browser.click("#nav a[data-view=keys]").await;
    browser
        .wait_text("#view", "Your operator manages your keys")
        .await;
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_operator_approves_a_held_tool_and_the_tenant_then_sees_it() {
    let dir = tempfile::tempdir().unwrap();
    let Some(catalogue) = catalogue(dir.path()) else {
        return;
    };
    let dev = QuiverDev::start(&["--auth", "required", "--catalog", &catalogue]);
    let cp = dev.control_plane.clone();
    let poisoned = upstream_id(&cp, "poisoned");
    let key = tenant(&cp, "gamma", &[&poisoned], &[]);
    let token_file = dev
        .banner
        .split("operator token in ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("no operator token file in {}", dev.banner));
    let token = std::fs::read_to_string(token_file).unwrap();
    let browser = Browser::start("operator").await;
    browser.goto(&console_url(&dev)).await;

    // A tenant key is not an operator credential.
    browser.wait_until_present("#signin-form").await;
    browser.select("#role", "operator").await;
    browser.type_into("#credential", &key).await;
    browser.click("#signin-button").await;
    browser
        .wait_text("#signin-error", "wrong operator token")
        .await;

    sign_in(&browser, "operator", token.trim()).await;
    browser.wait_text("#whoami", "operator").await;
    let tenants = browser.wait_text("#tenants-table", "gamma").await;
    assert!(!tenants.contains("qk_"), "no key is ever shown: {tenants}");
    browser.screenshot("tenants").await;
    browser.click("#nav a[data-view=upstreams]").await;
    browser.wait_text("#upstreams-table", &poisoned).await;
    browser.screenshot("upstreams").await;
    browser.click("#nav a[data-view=cluster]").await;
    let summary = browser.wait_text("#cluster-summary", "leader").await;
    assert!(
        summary.contains("1 of 1") || summary.contains("2 of 2"),
        "{summary}"
    );
    browser.wait_text("#members-table", "leader").await;
    browser.screenshot("cluster").await;

    // The held tool, and its approval.
    browser.click("#nav a[data-view=op-findings]").await;
    let held = browser.wait_text("#findings-table", "held").await;
    assert!(held.contains("get_weather"), "{held}");
    browser.screenshot("findings").await;
    browser.click(".approve-tool").await;
    browser.wait_text("#approve-result", "Approved").await;
    browser.wait_text("#findings-table", "approved").await;

    // The tenant now sees it, in the console and over MCP alike.
    browser.click("#sign-out").await;
    sign_in(&browser, "tenant", &key).await;
    browser.wait_text("#page-info", "of 1").await;
    assert_eq!(
        listed(&browser).await,
        vec![format!("{poisoned}__get_weather")]
    );
    let client = support::connect_as(&dev.mode_url("passthrough"), &key).await;
    assert_eq!(
        support::tool_names(&client).await,
        vec![format!("{poisoned}__get_weather")]
    );
    browser.quit().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn ten_thousand_tools_page_and_search() {
    let dir = tempfile::tempdir().unwrap();
    if support::datasets().is_none() {
        return;
    }
    let catalogue = support::scaled_catalogue(dir.path(), 10_000, 8);
    let dev = QuiverDev::start(&["--catalog", &catalogue]);
    // The mock upstreams parse the catalogue and answer discovery first.
    let started = std::time::Instant::now();
    loop {
        // The edge's views follow the manifest in the background: the page
        // shows what they serve, so wait for them too.
        let status = dev.status().await;
        if status["tools"] == 10_000
            && status["views_manifest_version"] == status["manifest_version"]
        {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(300),
            "the manifest never reached 10,000 tools: {status}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    eprintln!("10,000 tools served after {:?}", started.elapsed());
    let browser = Browser::start("ten-thousand").await;
    browser.goto(&console_url(&dev)).await;
    // An edge that authenticates nobody: the built-in tenant, no credential.
    sign_in(&browser, "tenant", "").await;
    browser.wait_text("#page-info", "1–50 of 10000").await;
    assert_eq!(listed(&browser).await.len(), 50);
    browser.click("#page-next").await;
    browser.wait_text("#page-info", "51–100 of 10000").await;
    browser
        .type_into("#tool-search", "weather forecast for a city")
        .await;
    browser.wait_text("#page-info", "best matches").await;
    let found = listed(&browser).await;
    assert!(found.iter().any(|n| n.contains("weather")), "{found:?}");
    browser.screenshot("tools").await;
    let timing = browser
        .script(
            "const n = performance.getEntriesByType('navigation')[0]; return {load_ms: n.loadEventEnd - n.startTime};",
            json!([]),
        )
        .await;
    eprintln!("console at 10,000 tools: {timing}");
    browser.quit().await;
}
