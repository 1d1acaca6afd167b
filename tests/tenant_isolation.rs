//! Tenants at the edge, tried as a new user would: `quiver dev --auth
//! required`, `quiver ctl tenant create`, `quiver ctl key issue`, then real
//! rmcp clients with those keys. Two tenants with disjoint views probe every
//! path with the other tenant's tool names (exact, misspelt, by words only
//! its tools contain, from scripts by proxy and by `tools.call`); nothing of
//! the other tenant may be observed. Requests without a key, with a bad or a
//! revoked key get the spec's 401 and the metadata pointer.

use crate::support;

use serde_json::{Value, json};
use support::{QuiverDev, answers::answer, call, connect_as, ctl, ctl_json, post_initialize, text};

/// Creates tenant `id` seeing `server` and issues it a key.
fn tenant_with_key(cp: &str, id: &str, server: &str) -> (String, String) {
    let (ok, _, err) = ctl(cp, &["tenant", "create", id, "--server", server]);
    assert!(ok, "tenant create {id}: {err}");
    let key = ctl_json(cp, &["key", "issue", id]);
    (
        key["key"].as_str().expect("the key").to_string(),
        key["key_id"].as_str().expect("the key id").to_string(),
    )
}

/// Writes the demo catalog restricted to `servers` and returns its path.
fn demo_catalog(dir: &std::path::Path, name: &str, servers: &[&str]) -> String {
    let all: Vec<Value> = serde_json::from_str(quiver_demo::CATALOG).expect("demo catalog");
    let kept: Vec<Value> = all
        .into_iter()
        .filter(|s| servers.contains(&s["name"].as_str().unwrap_or_default()))
        .collect();
    let path = support::write_file(dir, name, &serde_json::to_string(&kept).unwrap());
    path.to_str().unwrap().to_string()
}

/// Every probe, as `(path, tool, arguments)`: the other tenant's tool names
/// exact, misspelt and bare, searches by words only its tools contain, and
/// scripts reaching for them by proxy, by `tools.call`, by search and
/// describe; plus the tenant's own tools, so the probes are not vacuous.
fn probes() -> Vec<(&'static str, &'static str, Value)> {
    let mut probes = Vec::new();
    for name in [
        "github__create_issue",
        "github__create_issu",
        "create_issue",
        "weather__get_forecast",
    ] {
        probes.push((
            "passthrough",
            name,
            json!({"repo": "a/b", "title": "x", "city": "Lisbon"}),
        ));
        probes.push((
            "search",
            "call_tool",
            json!({"name": name, "arguments": {"repo": "a/b", "city": "Lisbon"}}),
        ));
    }
    for query in [
        "create an issue in a github repository",
        "pull request",
        "repositories",
        "github",
        "forecast for a city",
    ] {
        probes.push(("search", "search_tools", json!({"query": query})));
        probes.push(("code", "search", json!({"query": query, "limit": 10})));
    }
    probes.push(("code", "list", json!({})));
    probes.push((
        "code",
        "describe",
        json!({"names": ["github__create_issue", "github.create_issue", "create_issue", "github__create_issu", "weather__get_forecast"]}),
    ));
    for script in [
        "return await tools.github.create_issue({repo: 'a/b', title: 'x'})",
        "return await tools.call('github__create_issue', {repo: 'a/b', title: 'x'})",
        "return await tools.call('create_issue', {repo: 'a/b', title: 'x'})",
        "return Object.keys(tools)",
        "return await search('github issue pull request repository', 10)",
        "return await describe('github__list_issues')",
        "return await tools.weather.get_forecast({city: 'Lisbon'})",
        "return await tools.call('weather__get_forecast', {city: 'Lisbon'})",
    ] {
        probes.push(("code", "execute", json!({"code": script})));
    }
    probes
}

/// What a client of `url` observes for every probe of its mode, and at
/// `initialize`, `tools/list`, resources and prompts.
async fn observe(url_of: impl Fn(&str) -> String, key: Option<&str>) -> Vec<String> {
    let mut seen = Vec::new();
    for mode in ["passthrough", "search", "code"] {
        let url = url_of(mode);
        let client = match key {
            Some(key) => connect_as(&url, key).await,
            None => support::connect(&url).await,
        };
        let info = client.peer_info().expect("initialized");
        seen.push(format!(
            "{mode} initialize: {:?} {:?}",
            info.instructions, info.capabilities
        ));
        let tools = client
            .list_all_tools()
            .await
            .map(|t| serde_json::to_string(&t).unwrap());
        seen.push(format!("{mode} tools/list: {tools:?}"));
        if mode == "passthrough" {
            let resources = client.list_resources(None).await;
            seen.push(format!("resources/list: {resources:?}"));
            let prompts = client.list_prompts(None).await;
            seen.push(format!("prompts/list: {prompts:?}"));
        }
        for (probe_mode, tool, args) in probes() {
            if probe_mode == mode {
                let said = answer(&client, tool, args.clone()).await;
                seen.push(format!("{mode} {tool} {args}: {said}"));
            }
        }
        client.cancel().await.unwrap();
    }
    seen
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenant_observes_exactly_what_it_would_if_the_other_servers_did_not_exist() {
    let dir = tempfile::tempdir().unwrap();
    let full = demo_catalog(dir.path(), "full.json", &["weather", "github", "notes"]);
    let alone = demo_catalog(dir.path(), "alone.json", &["weather"]);
    let shared = QuiverDev::start(&["--auth", "required", "--catalog", &full]);
    let (key, _) = tenant_with_key(&shared.control_plane, "weather-only", "weather");
    let by_itself = QuiverDev::start(&["--catalog", &alone]);

    let through_tenant = observe(|m| shared.mode_url(m), Some(&key)).await;
    let without_others = observe(|m| by_itself.mode_url(m), None).await;
    assert_eq!(through_tenant.len(), without_others.len());
    for (tenant, alone) in through_tenant.iter().zip(&without_others) {
        assert_eq!(
            tenant, alone,
            "the tenant's answer differs from the answer of a gateway without the other servers"
        );
    }
    // Not vacuous: its own tools answered.
    let own = through_tenant
        .iter()
        .filter(|s| s.contains("get_forecast") && s.contains("Lisbon"))
        .count();
    assert!(own >= 4, "{through_tenant:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenant_sees_only_its_servers_on_every_path_and_keys_are_required() {
    let dev = QuiverDev::start(&["--auth", "required"]);
    let cp = dev.control_plane.clone();
    let (weather_key, weather_key_id) = tenant_with_key(&cp, "weather-only", "weather");
    let (github_key, _) = tenant_with_key(&cp, "github-only", "github");

    tracing::info!("--- without a key: 401 with the metadata pointer, on every mode path");
    let http = support::http();
    let base = dev.url.trim_end_matches("/mcp").to_string();
    for path in ["/mcp", "/code/mcp", "/search/mcp", "/passthrough/mcp"] {
        for presented in [
            None,
            Some("Bearer qk_nope_0000"),
            Some("Basic dXNlcjpwdw=="),
            Some("Bearer not-a-jwt"),
        ] {
            let response = post_initialize(&format!("{base}{path}"), presented).await;
            assert_eq!(response.status(), 401, "{path} with {presented:?}");
            let challenge = response
                .headers()
                .get("www-authenticate")
                .expect("a WWW-Authenticate challenge")
                .to_str()
                .unwrap()
                .to_string();
            let metadata =
                format!("resource_metadata=\"{base}/.well-known/oauth-protected-resource{path}\"");
            assert!(
                challenge.starts_with("Bearer ") && challenge.contains(&metadata),
                "{path}: {challenge}"
            );
            assert_eq!(
                challenge.contains("error=\"invalid_token\""),
                presented.is_some(),
                "{challenge}"
            );
            let body: Value = response.json().await.unwrap();
            assert!(
                !body.to_string().contains("unknown") && !body.to_string().contains("revoked"),
                "the answer must not tell a prober which case it hit: {body}"
            );
        }
    }
    let metadata: Value = http
        .get(format!("{base}/.well-known/oauth-protected-resource/mcp"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["resource"], format!("{base}/mcp"));
    assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));

    let weather = connect_as(&dev.mode_url("passthrough"), &weather_key).await;
    let names = support::tool_names(&weather).await;
    assert!(
        names.iter().all(|n| n.starts_with("weather__")),
        "{names:?}"
    );
    let result = call(&weather, "weather__get_forecast", json!({"city": "Lisbon"})).await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));

    tracing::info!("--- the other tenant sees github and not weather");
    let github = connect_as(&dev.mode_url("passthrough"), &github_key).await;
    let names: Vec<String> = github
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert!(names.iter().all(|n| n.starts_with("github__")), "{names:?}");
    assert!(
        names.iter().any(|n| n == "github__create_issue"),
        "{names:?}"
    );

    tracing::info!("--- a session belongs to the tenant that opened it");
    let weather_bearer = format!("Bearer {weather_key}");
    let session = {
        let response = post_initialize(&dev.mode_url("passthrough"), Some(&weather_bearer)).await;
        assert_eq!(response.status(), 200);
        response
            .headers()
            .get("mcp-session-id")
            .expect("a session id")
            .to_str()
            .unwrap()
            .to_string()
    };
    // Another tenant naming the session learns nothing of it: the answer is
    // the one for a session that does not exist.
    let github_bearer = format!("Bearer {github_key}");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let url = dev.mode_url("passthrough");
    let hijack =
        support::raw_session::post(&url, Some(&github_bearer), Some(&session), &list).await;
    let unknown = support::raw_session::post(&url, Some(&github_bearer), Some("none"), &list).await;
    assert_eq!(hijack.status, 404, "{hijack:?}");
    assert_eq!(hijack.body, unknown.body);
    assert!(!hijack.body.contains("weather__"), "{hijack:?}");

    tracing::info!("--- a revoked key stops working on the open session");
    let (ok, _, err) = ctl(&cp, &["key", "revoke", "weather-only", &weather_key_id]);
    assert!(ok, "{err}");
    let refused = loop {
        let response = post_initialize(&dev.mode_url("passthrough"), Some(&weather_bearer)).await;
        if response.status() == 401 {
            break response;
        }
        assert_eq!(response.status(), 200);
        tokio::task::yield_now().await;
    };
    assert!(
        refused.headers().contains_key("www-authenticate"),
        "{refused:?}"
    );
    let after = weather.list_all_tools().await;
    assert!(after.is_err(), "the revoked key's session still answers");
    github.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn without_auth_anonymous_callers_see_everything_and_keys_still_pick_their_tenant() {
    let dev = QuiverDev::start(&[]);
    let cp = dev.control_plane.clone();
    let (key, _) = tenant_with_key(&cp, "weather-only", "weather");
    let anonymous = support::connect(&dev.mode_url("passthrough")).await;
    let all = support::tool_names(&anonymous).await;
    assert!(all.iter().any(|n| n.starts_with("github__")), "{all:?}");
    let tenant = connect_as(&dev.mode_url("passthrough"), &key).await;
    let seen = support::tool_names(&tenant).await;
    assert!(seen.iter().all(|n| n.starts_with("weather__")), "{seen:?}");
    // A presented key is checked even here: a wrong one is refused, not
    // served as anonymous.
    let response = post_initialize(&dev.mode_url("passthrough"), Some("Bearer qk_x_wrong")).await;
    assert_eq!(response.status(), 401);
    anonymous.cancel().await.unwrap();
    tenant.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_child_executor_rechecks_every_call_against_the_tenants_view() {
    let dev = QuiverDev::start(&["--auth", "required", "--executor", "child"]);
    let (key, _) = tenant_with_key(&dev.control_plane, "weather-only", "weather");
    let client = connect_as(&dev.mode_url("code"), &key).await;
    let own = answer(
        &client,
        "execute",
        json!({"code": "return await tools.weather.get_forecast({city: 'Lisbon'})"}),
    )
    .await;
    assert!(
        own.contains("get_forecast") && own.contains("Lisbon"),
        "{own}"
    );
    let hidden = answer(
        &client,
        "execute",
        json!({"code": "return await tools.call('github__create_issue', {repo: 'a/b', title: 'x'})"}),
    )
    .await;
    assert!(!hidden.contains("\"server\":\"github\""), "{hidden}");
    client.cancel().await.unwrap();

    // The executor does not take the edge's word: asked directly for a tool
    // outside the tenant's view, or for a tenant it does not know, it refuses.
    let executor = support::ExecutorProcess::start(&[
        "--control-plane",
        &dev.control_plane,
        "--auth",
        "required",
    ]);
    let mut grpc = quiver_proto::pb::executor_client::ExecutorClient::connect(format!(
        "http://{}",
        executor.addr
    ))
    .await
    .unwrap();
    let ask = |tenant: &str, server: &str, tool: &str| quiver_proto::pb::CallToolRequest {
        tenant: tenant.into(),
        server: server.into(),
        tool: tool.into(),
        arguments_json: r#"{"city":"Oslo","repo":"a/b","title":"x"}"#.into(),
        ..Default::default()
    };
    let refused = grpc
        .call_tool(ask("weather-only", "github", "create_issue"))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::NotFound, "{refused:?}");
    let unknown = grpc
        .call_tool(ask("default", "weather", "get_forecast"))
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), tonic::Code::PermissionDenied, "{unknown:?}");
    let allowed = grpc
        .call_tool(ask("weather-only", "weather", "get_forecast"))
        .await;
    assert!(allowed.is_ok(), "{allowed:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tenants_validation_level_decides_how_its_arguments_are_checked() {
    let dev = QuiverDev::start(&["--auth", "required"]);
    let cp = dev.control_plane.clone();
    let (checked, _) = tenant_with_key(&cp, "checked", "weather");
    let (unchecked, _) = tenant_with_key(&cp, "unchecked", "weather");
    let (ok, _, err) = ctl(
        &cp,
        &["tenant", "update", "unchecked", "--validation", "off"],
    );
    assert!(ok, "{err}");
    let (ok, _, err) = ctl(
        &cp,
        &["tenant", "update", "checked", "--validation", "loose"],
    );
    assert!(!ok && err.contains("schema, strict, off"), "{err}");
    let wrong = json!({"city": "Lisbon", "days": "many"});
    let client = connect_as(&dev.mode_url("passthrough"), &checked).await;
    let refused = call(&client, "weather__get_forecast", wrong.clone()).await;
    assert_eq!(refused.is_error, Some(true));
    assert!(text(&refused).contains("days"), "{}", text(&refused));
    client.cancel().await.unwrap();
    // The update reaches the edge with the control plane's next update.
    let client = connect_as(&dev.mode_url("passthrough"), &unchecked).await;
    let passed = loop {
        let result = call(&client, "weather__get_forecast", wrong.clone()).await;
        if result.is_error != Some(true) {
            break result;
        }
        tokio::task::yield_now().await;
    };
    assert!(
        text(&passed).contains("\"days\":\"many\""),
        "{}",
        text(&passed)
    );
    client.cancel().await.unwrap();
}
