//! MCP Apps (`io.modelcontextprotocol/ui`) through Quiver, against a real
//! `quiver dev`: a tool's `_meta` (its view's `ui://` link, its visibility)
//! reaches passthrough clients unchanged; a tool only the app may call is in
//! nothing the model sees (lists, search, scripts, calls by namespaced
//! name), and a view's call by the name its own server gives the tool
//! reaches it; search results and `call_tool` carry the link. Then an app
//! server built on the official SDKs (`@modelcontextprotocol/ext-apps`,
//! tests/support/app_server.mjs): Quiver declares the extension to it (so it
//! offers its app-enhanced tool) and to clients, serves its view with the
//! view's metadata, and relays the view's calls; and the console renders
//! the view in headless Chromium (for a call on the tool's page and for a
//! playground run's call), where it gets the call's result, calls a tool
//! back, and cannot reach a tool only the model may call, another server's
//! tool, a tool outside the tenant's view, or the network beyond what it
//! declares.

use std::path::Path;

use rmcp::{
    ServiceExt,
    model::{
        CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation,
        ReadResourceRequestParams,
    },
    service::RunningService,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};

use crate::stateless_protocol::connect_stateless;
use crate::support::{
    self, QuiverDev, browser::Browser, call, connect, ctl_json, node_tools, text,
    until_upstream_lists, write_file,
};

const UI: &str = "io.modelcontextprotocol/ui";
const MIME: &str = "text/html;profile=mcp-app";

/// Calls `name`; the protocol error's message when the call is refused.
async fn try_call<S: rmcp::Service<rmcp::RoleClient>>(
    client: &RunningService<rmcp::RoleClient, S>,
    name: &str,
) -> Result<String, String> {
    client
        .call_tool(CallToolRequestParams::new(name.to_string()))
        .await
        .map(|r| text(&r))
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn only_a_views_call_reaches_an_app_only_tool_and_every_mode_carries_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let app =
        json!({"ui": {"resourceUri": "ui://dash/chart.html", "visibility": ["model", "app"]}});
    let catalogue = json!([{
        "name": "dash",
        "description": "Dashboards of metrics",
        "tools": [
            {
                "name": "show_chart",
                "description": "Show a chart of one metric.",
                "inputSchema": {"type": "object", "properties": {"metric": {"type": "string"}}},
                "_meta": app,
            },
            {"name": "list_metrics", "description": "List the metrics.", "inputSchema": {"type": "object"}},
            {
                "name": "refresh_chart",
                "description": "Refresh the chart the app shows.",
                "inputSchema": {"type": "object"},
                "_meta": {"ui": {"resourceUri": "ui://dash/chart.html", "visibility": ["app"]}},
            },
        ],
    }]);
    let path = write_file(dir.path(), "apps.json", &catalogue.to_string());
    let dev = QuiverDev::start(&["--catalog", path.to_str().unwrap()]);
    let client = connect(&dev.mode_url("passthrough")).await;
    let declared = client.peer_info().expect("initialize result");
    let extensions = declared.capabilities.extensions.clone().unwrap_or_default();
    assert_eq!(
        Value::Object(extensions[UI].clone()),
        json!({"mimeTypes": [MIME]})
    );
    let tools = client.list_all_tools().await.expect("tools/list");
    let chart = tools
        .iter()
        .find(|t| t.name.ends_with("show_chart"))
        .unwrap_or_else(|| panic!("no show_chart in {tools:?}"));
    assert_eq!(serde_json::to_value(&chart.meta).unwrap(), app);
    let plain = tools
        .iter()
        .find(|t| t.name.ends_with("list_metrics"))
        .expect("list_metrics is listed");
    assert!(plain.meta.is_none(), "{:?}", plain.meta);
    assert!(
        !tools.iter().any(|t| t.name.ends_with("refresh_chart")),
        "an app-only tool is listed: {tools:?}"
    );
    // The model's name for it reaches nothing; the view's does.
    let namespaced = chart.name.replace("show_chart", "refresh_chart");
    let refused = try_call(&client, &namespaced).await;
    assert!(refused.is_err(), "{refused:?}");
    let refreshed = call(&client, "refresh_chart", json!({})).await;
    assert_ne!(refreshed.is_error, Some(true), "{}", text(&refreshed));
    client.cancel().await.ok();

    // The stateless revision (2026-07-28): declared at `server/discover`,
    // and a view's call needs no session.
    let host = json!({"extensions": {UI: {"mimeTypes": [MIME]}}});
    let modern = connect_stateless(&dev.mode_url("passthrough"), host).await;
    let discovered = modern.peer_info().expect("discover result");
    let extensions = discovered
        .capabilities
        .extensions
        .clone()
        .unwrap_or_default();
    assert!(extensions.contains_key(UI), "{extensions:?}");
    let refreshed = call(&modern, "refresh_chart", json!({})).await;
    assert_ne!(refreshed.is_error, Some(true), "{}", text(&refreshed));
    modern.cancel().await.ok();

    // Search mode: the link in the hit and in `call_tool`'s result; the
    // app-only tool is found by no query.
    let search = connect(&dev.mode_url("search")).await;
    let found = call(
        &search,
        "search_tools",
        json!({"query": "refresh the chart", "limit": 20}),
    )
    .await;
    let hits = found.structured_content.clone().unwrap_or_default();
    let hits = hits["results"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("no hits in {hits}"));
    let chart_hit = hits
        .iter()
        .find(|h| h["tool"] == "show_chart")
        .unwrap_or_else(|| panic!("show_chart not found: {hits:?}"));
    assert_eq!(chart_hit["app"], "ui://dash/chart.html");
    assert!(
        hits.iter().all(|h| h["tool"] != "refresh_chart"),
        "{hits:?}"
    );
    let called = call(
        &search,
        "call_tool",
        json!({"name": chart.name, "arguments": {"metric": "cpu"}}),
    )
    .await;
    assert_eq!(
        serde_json::to_value(&called.meta).unwrap()["ui"]["resourceUri"],
        "ui://dash/chart.html"
    );
    search.cancel().await.ok();

    // Code mode: a script has no such tool either.
    let code = connect(&dev.mode_url("code")).await;
    let script = format!(
        "try {{ await tools.call({namespaced:?}, {{}}); return 'reached'; }} catch (e) {{ return 'refused'; }}"
    );
    let ran = call(&code, "execute", json!({"code": script})).await;
    assert!(text(&ran).contains("refused"), "{}", text(&ran));
    code.cancel().await.ok();
}

/// A client that renders apps: it declares the UI extension.
async fn connect_as_host(url: &str, key: &str) -> RunningService<rmcp::RoleClient, ClientConfig> {
    quiver_upstream::install_crypto_provider();
    let capabilities: ClientCapabilities =
        serde_json::from_value(json!({"extensions": {UI: {"mimeTypes": [MIME]}}})).unwrap();
    let info = ClientConfig::new(capabilities, Implementation::new("apps-host-test", "0"));
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    config.auth_header = Some(key.to_string());
    info.serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("MCP client connects")
}

/// `quiver dev` (keys required) with the SDK app server as upstream
/// `counter` and a plain server `vault`; a tenant seeing both but the
/// counter's `reset`, and its key.
fn app_gateway(dir: &Path) -> (QuiverDev, String) {
    let modules = node_tools::node_modules();
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/app_server.mjs");
    let vault = write_file(
        dir,
        "vault.json",
        &json!([{"name": "vault", "description": "Secrets", "tools": [
            {"name": "secret", "description": "Read the secret.", "inputSchema": {"type": "object"}}
        ]}])
        .to_string(),
    );
    let config = format!(
        r#"
[[upstream]]
id = "counter"
transport = "stdio"
command = "{node}"
args = ["{server}", "{modules}"]
"#,
        node = node_tools::node().display(),
        server = server.display(),
        modules = modules.display(),
    );
    let path = write_file(dir, "quiver.toml", &config);
    let dev = QuiverDev::start(&[
        "--auth",
        "required",
        "--config",
        path.to_str().unwrap(),
        "--catalog",
        vault.to_str().unwrap(),
    ]);
    let cp = dev.control_plane.clone();
    until_upstream_lists(&cp, "counter", 5);
    let vault_id = ctl_json(&cp, &["upstream", "list"])
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|u| u["id"].as_str())
        .find(|id| id.contains("vault"))
        .expect("the vault upstream")
        .to_string();
    let vault_tools = format!("{vault_id}/*");
    let key = support::tenant_with_flags(
        &cp,
        "apps",
        &[
            "--tool",
            "counter/show_counter",
            "--tool",
            "counter/bump",
            "--tool",
            "counter/peek",
            "--tool",
            "counter/show_legacy",
            "--tool",
            &vault_tools,
        ],
    );
    (dev, key)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_app_server_on_the_official_sdk_serves_its_view_and_its_calls_through_quiver() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, key) = app_gateway(dir.path());
    let client = connect_as_host(&dev.mode_url("passthrough"), &key).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    // The server offered its app-enhanced tool: Quiver declared the
    // extension when it connected.
    let show = tools
        .iter()
        .find(|t| t.name == "counter__show_counter")
        .unwrap_or_else(|| panic!("{names:?}"));
    let meta = serde_json::to_value(&show.meta).unwrap();
    assert_eq!(
        meta["ui"]["resourceUri"], "ui://counter/view.html",
        "{meta}"
    );
    assert!(names.contains(&"counter__peek"), "{names:?}");
    let legacy = tools
        .iter()
        .find(|t| t.name == "counter__show_legacy")
        .unwrap_or_else(|| panic!("{names:?}"));
    let meta = serde_json::to_value(&legacy.meta).unwrap();
    assert_eq!(meta["ui/resourceUri"], "ui://counter/legacy.html", "{meta}");
    assert!(!names.iter().any(|n| n.ends_with("bump")), "{names:?}");

    let read = client
        .read_resource(ReadResourceRequestParams::new("ui://counter/view.html"))
        .await
        .expect("resources/read of the view");
    let content = serde_json::to_value(&read.contents[0]).unwrap();
    assert_eq!(content["mimeType"], MIME);
    assert_eq!(
        content["_meta"]["ui"]["csp"]["connectDomains"],
        json!(["https://api.example.com"])
    );

    // What the view's host relays: its server's names.
    assert_eq!(try_call(&client, "bump").await.unwrap(), "counter is 1");
    assert!(try_call(&client, "counter__bump").await.is_err());
    assert!(
        try_call(&client, "peek").await.is_err(),
        "only the model may"
    );
    assert!(
        try_call(&client, "secret").await.is_err(),
        "vault serves no app"
    );
    assert!(
        try_call(&client, "reset").await.is_err(),
        "not in the tenant's view"
    );
    assert_eq!(
        try_call(&client, "counter__peek").await.unwrap(),
        "counter is 1"
    );
    client.cancel().await.ok();

    // The view's call is audited as the tenant's call of counter/bump (the
    // records reach the control plane within seconds).
    support::ctl_until(
        &dev.control_plane,
        &["-o", "json", "audit", "--tenant", "apps"],
        |_, out| {
            serde_json::from_str::<Value>(out)
                .ok()
                .and_then(|a| a.as_array().cloned())
                .is_some_and(|records| records.iter().any(|r| r["tool"] == "counter/bump"))
        },
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_console_renders_an_apps_view_and_relays_only_its_own_servers_calls() {
    let dir = tempfile::tempdir().unwrap();
    let (dev, key) = app_gateway(dir.path());
    let browser = Browser::start("apps").await;
    browser
        .goto(&format!("http://{}/console/", dev.authority()))
        .await;
    browser.wait_until_present("#signin-form").await;
    browser.select("#role", "tenant").await;
    browser.type_into("#credential", &key).await;
    browser.click("#signin-button").await;
    browser
        .wait_for("#whoami", "signed in", |t| !t.is_empty())
        .await;
    browser
        .click("#tool-list .tool-row[data-name='counter__show_counter']")
        .await;
    browser
        .wait_text("#tool-app", "ui://counter/view.html")
        .await;
    browser.click("#tool-call").await;
    browser.wait_text("#call-result", "counter is").await;
    let log = browser
        .wait_for("#app-log", "the view's relayed calls", |t| {
            t.contains("tools/call reset")
        })
        .await;
    assert!(log.contains("view initialized"), "{log}");
    assert!(log.contains("tools/call bump → ok"), "{log}");
    assert!(log.contains("tools/call peek → refused"), "{log}");
    assert!(log.contains("tools/call secret → refused"), "{log}");
    assert!(log.contains("tools/call reset → refused"), "{log}");
    browser.screenshot("app-view").await;

    // Inside the view (its own sandboxed document).
    browser.enter_frame("#app-view iframe").await;
    browser.wait_text("#done", "done").await;
    assert!(
        browser
            .text("#result")
            .await
            .unwrap()
            .contains("counter is")
    );
    assert_eq!(browser.text("#bumped").await.unwrap(), "counter is 1");
    assert!(browser.text("#input").await.unwrap().starts_with('{'));
    let peek = browser.text("#peek").await.unwrap();
    assert!(peek.starts_with("refused"), "{peek}");
    let outside = browser.text("#outside").await.unwrap();
    assert!(outside.starts_with("refused"), "{outside}");
    let hidden = browser.text("#hidden").await.unwrap();
    assert!(hidden.starts_with("refused"), "{hidden}");
    assert_eq!(browser.text("#fetch").await.unwrap(), "blocked");
    browser.leave_frame().await;

    // A playground run that calls the tool renders its view too, with the
    // run's call and result.
    browser.click("#nav a[data-view=playground]").await;
    browser
        .type_into("#script", "return await tools.counter.show_counter({});")
        .await;
    browser.click("#run").await;
    let log = browser
        .wait_for("#run-apps .app-log", "the run's view relaying", |t| {
            t.contains("tools/call reset")
        })
        .await;
    assert!(log.contains("tools/call bump → ok"), "{log}");
    assert!(log.contains("tools/call reset → refused"), "{log}");
    browser.enter_frame("#run-apps iframe").await;
    browser.wait_text("#done", "done").await;
    assert_eq!(browser.text("#result").await.unwrap(), "counter is 1");
    assert_eq!(browser.text("#bumped").await.unwrap(), "counter is 2");
    browser.leave_frame().await;
    browser.screenshot("app-view-playground").await;

    // The policy each view was served with: from its content's metadata,
    // or else from its listing entry (the view linked in the older form);
    // and nothing for a stranger.
    let policy_of = |uri: &str| {
        browser.script(
            "return fetch('/console/api/app/view?server=counter&uri=' + encodeURIComponent(arguments[0]), {credentials: 'same-origin'}).then((r) => r.headers.get('content-security-policy'));",
            json!([uri]),
        )
    };
    let csp = policy_of("ui://counter/view.html").await;
    let csp = csp.as_str().unwrap_or_default().to_string();
    assert!(csp.starts_with("sandbox allow-scripts;"), "{csp}");
    assert!(
        csp.contains("connect-src https://api.example.com;"),
        "{csp}"
    );
    assert!(!csp.contains("cdn.example.com"), "{csp}");
    let legacy = policy_of("ui://counter/legacy.html").await;
    let legacy = legacy.as_str().unwrap_or_default().to_string();
    assert!(
        legacy.contains("img-src data: https://cdn.example.com;"),
        "{legacy}"
    );
    assert!(legacy.contains("connect-src 'none';"), "{legacy}");
    let stranger = reqwest::get(format!(
        "http://{}/console/api/app/view?server=counter&uri=ui%3A%2F%2Fcounter%2Fview.html",
        dev.authority()
    ))
    .await
    .unwrap();
    assert_eq!(stranger.status(), 401);
    browser.quit().await;
}
