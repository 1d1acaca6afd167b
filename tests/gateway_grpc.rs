//! `quiver.v1.Gateway`, the gRPC API for internal services, driven through a
//! real `quiver dev --grpc-listen` with real tenants and keys from `quiver
//! ctl`: every RPC answers from the caller's view only (the other tenant's
//! names, exact or misspelt, get the answer of a name that exists nowhere),
//! credentials are checked as over MCP, Execute streams what the script's
//! tools report while it runs, a cancelled call reaches the upstream and a
//! cancelled script stops, reflection names the service, and with mTLS a
//! client without a certificate is refused at the handshake.

use crate::support;

use std::time::Duration;

use quiver_proto::pb::{
    DescribeRequest, ExecuteEvent, ExecuteResult, ExecutionLimits, GatewayCallToolRequest,
    GatewayCallToolResponse, GatewayExecuteRequest, ListToolsRequest, LogSource, ScriptErrorKind,
    SearchToolsRequest, execute_event::Event, gateway_client::GatewayClient,
};
use rmcp::{
    RoleClient, ServiceExt,
    service::RunningService,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use support::{QuiverDev, TestCa, call, ctl, ctl_json, write_file};
use tokio_stream::StreamExt;
use tonic::{
    Code, Request, Status, Streaming,
    transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity},
};

/// Longest wait for any one answer or event.
const PATIENCE: Duration = Duration::from_secs(30);

/// The gRPC address in `quiver dev`'s startup line (`…; gRPC ADDR (security)…`).
fn grpc_addr(dev: &QuiverDev) -> String {
    dev.banner
        .split("gRPC ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no gRPC address in the startup line: {}", dev.banner))
        .to_string()
}

/// A plaintext client of `dev`'s gRPC API.
async fn client(dev: &QuiverDev) -> GatewayClient<Channel> {
    GatewayClient::connect(format!("http://{}", grpc_addr(dev)))
        .await
        .expect("connect to the gRPC API")
}

/// `message` carrying `credential` as `authorization` metadata (`None`: none).
fn presenting<T>(credential: Option<&str>, message: T) -> Request<T> {
    let mut request = Request::new(message);
    if let Some(value) = credential {
        request
            .metadata_mut()
            .insert("authorization", value.parse().expect("ASCII metadata"));
    }
    request
}

/// `message` with `Bearer <key>`.
fn as_key<T>(key: &str, message: T) -> Request<T> {
    presenting(Some(&format!("Bearer {key}")), message)
}

/// Creates tenant `id` seeing `server` and issues it a key.
fn tenant_with_key(cp: &str, id: &str, server: &str) -> String {
    let (ok, _, err) = ctl(cp, &["tenant", "create", id, "--server", server]);
    assert!(ok, "tenant create {id}: {err}");
    let key = ctl_json(cp, &["key", "issue", id]);
    key["key"].as_str().expect("the key").to_string()
}

fn call_request(name: &str, arguments: Value) -> GatewayCallToolRequest {
    GatewayCallToolRequest {
        name: name.into(),
        arguments_json: arguments.to_string(),
        timeout_ms: 0,
    }
}

fn execute_request(code: &str) -> GatewayExecuteRequest {
    GatewayExecuteRequest {
        code: code.into(),
        ..Default::default()
    }
}

/// Every event of one Execute, the result last (checked).
async fn events_of(mut stream: Streaming<ExecuteEvent>) -> (Vec<Event>, ExecuteResult) {
    let mut events = Vec::new();
    while let Some(event) = tokio::time::timeout(PATIENCE, stream.next())
        .await
        .expect("the next event in time")
    {
        let event = event
            .expect("an event, not a status")
            .event
            .expect("a set event");
        events.push(event);
    }
    match events.pop() {
        Some(Event::Result(result)) => (events, result),
        other => panic!("the stream did not end with its result: {other:?} after {events:?}"),
    }
}

/// The status message with `name` replaced, for comparing two refusals that
/// differ only in the name they echo.
fn without_name(status: &Status, name: &str) -> String {
    status.message().replace(name, "<name>")
}

/// A client of `url` presenting `key` over MCP.
async fn mcp_as(url: &str, key: &str) -> RunningService<RoleClient, ()> {
    quiver_upstream::install_crypto_provider();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    config.auth_header = Some(key.to_string());
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("MCP client connects with its key")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenant_reaches_only_its_own_tools_through_every_rpc() {
    // Lexical ranking on both paths: with the model, the semantic index is
    // built in the background and two searches a moment apart may rank
    // differently.
    let models = tempfile::tempdir().unwrap();
    let no_model = models.path().join("none");
    let dev = QuiverDev::start_with_env(
        &["--auth", "required", "--grpc-listen", "127.0.0.1:0"],
        &[("QUIVER_SEARCH_MODEL_DIR", no_model.as_path())],
    );
    let cp = dev.control_plane.clone();
    let weather = tenant_with_key(&cp, "weather-only", "weather");
    let github = tenant_with_key(&cp, "github-only", "github");
    let mut grpc = client(&dev).await;

    tracing::info!("--- ListTools: each tenant lists its own server's tools, nothing else");
    for (key, own, other) in [
        (&weather, "weather__", "github__"),
        (&github, "github__", "weather__"),
    ] {
        let listed = grpc
            .list_tools(as_key(key, ListToolsRequest {}))
            .await
            .expect("ListTools")
            .into_inner();
        assert!(!listed.tools.is_empty(), "{own}: nothing listed");
        assert!(listed.manifest_version > 0);
        assert!(
            listed.script_api.contains("declare const tools"),
            "{}",
            listed.script_api
        );
        for tool in &listed.tools {
            assert!(tool.name.starts_with(own), "{own} lists {}", tool.name);
            assert!(!tool.name.starts_with(other));
            assert!(tool.signature.contains(&tool.tool), "{tool:?}");
            let schema: Value = serde_json::from_str(&tool.input_schema_json).expect("schema JSON");
            assert!(schema.is_object(), "{schema}");
        }
    }

    tracing::info!("--- SearchTools: the other tenant's words find nothing of it");
    let probe = |query: &str| SearchToolsRequest {
        query: query.into(),
        limit: 10,
    };
    for query in [
        "create an issue in a github repository",
        "pull request",
        "github",
    ] {
        let found = grpc
            .search_tools(as_key(&weather, probe(query)))
            .await
            .expect("SearchTools")
            .into_inner();
        assert!(
            found.results.iter().all(|hit| hit.server == "weather"),
            "{query}: {:?}",
            found.results
        );
    }
    let found = grpc
        .search_tools(as_key(
            &github,
            probe("create an issue in a github repository"),
        ))
        .await
        .expect("SearchTools")
        .into_inner();
    assert_eq!(
        found.results.first().map(|h| h.name.as_str()),
        Some("github__create_issue"),
        "{:?}",
        found.results
    );

    tracing::info!(
        "--- SearchTools ranks and scores as MCP search does for a tenant of the same view"
    );
    // A tenant of its own: search signals are per tenant, and this one's
    // first search must meet the same history as the gRPC tenant's did.
    let twin = tenant_with_key(&cp, "weather-twin", "weather");
    let query = "forecast for a city";
    let over_grpc = grpc
        .search_tools(as_key(
            &weather,
            SearchToolsRequest {
                query: query.into(),
                limit: 5,
            },
        ))
        .await
        .expect("SearchTools")
        .into_inner()
        .results;
    let mcp = mcp_as(&dev.mode_url("search"), &twin).await;
    let over_mcp = call(&mcp, "search_tools", json!({"query": query, "limit": 5})).await;
    let over_mcp = over_mcp.structured_content.expect("structured results")["results"].clone();
    let ranked_grpc: Vec<(String, f64)> = over_grpc
        .iter()
        .map(|h| (h.name.clone(), h.score))
        .collect();
    let ranked_mcp: Vec<(String, f64)> = over_mcp
        .as_array()
        .expect("results")
        .iter()
        .map(|h| {
            (
                h["name"].as_str().unwrap().to_string(),
                h["score"].as_f64().unwrap(),
            )
        })
        .collect();
    assert!(!ranked_grpc.is_empty());
    assert_eq!(ranked_grpc, ranked_mcp);
    mcp.cancel().await.unwrap();

    tracing::info!(
        "--- Describe: own tools declared, the other tenant's listed as unknown without hints of it"
    );
    let described = grpc
        .describe(as_key(
            &weather,
            DescribeRequest {
                names: vec![
                    "weather__get_forecast".into(),
                    "github__create_issue".into(),
                    "github__create_issu".into(),
                    "github.create_issue".into(),
                    "create_issue".into(),
                ],
            },
        ))
        .await
        .expect("Describe")
        .into_inner();
    assert_eq!(described.tools.len(), 1, "{described:?}");
    assert_eq!(described.tools[0].name, "weather__get_forecast");
    assert!(described.tools[0].declaration.contains("get_forecast"));
    assert_eq!(described.unknown.len(), 4, "{described:?}");
    for unknown in &described.unknown {
        assert!(
            unknown
                .suggestions
                .iter()
                .all(|s| s.starts_with("weather__")),
            "{unknown:?}"
        );
    }

    tracing::info!(
        "--- CallTool: own tool answers; the other tenant's names are NOT_FOUND like a name that exists nowhere"
    );
    let answer = grpc
        .call_tool(as_key(
            &weather,
            call_request("weather__get_forecast", json!({"city": "Lisbon"})),
        ))
        .await
        .expect("CallTool")
        .into_inner();
    assert!(!answer.is_error, "{}", answer.result_json);
    assert!(
        answer.result_json.contains("Lisbon"),
        "{}",
        answer.result_json
    );
    let refusal = |key: &str, name: &str| {
        let mut grpc = grpc.clone();
        let request = as_key(
            key,
            call_request(name, json!({"repo": "a/b", "title": "x", "city": "Lisbon"})),
        );
        async move {
            let status: Status = grpc.call_tool(request).await.expect_err("a refusal");
            status
        }
    };
    let nowhere = "zzyzx__no_such_tool_anywhere";
    let baseline = refusal(&weather, nowhere).await;
    assert_eq!(baseline.code(), Code::NotFound, "{baseline:?}");
    for name in [
        "github__create_issue",
        "github__create_issu",
        "create_issue",
        "github.create_issue",
    ] {
        let status = refusal(&weather, name).await;
        assert_eq!(status.code(), Code::NotFound, "{name}: {status:?}");
        assert_eq!(
            without_name(&status, name),
            without_name(&baseline, nowhere),
            "{name}"
        );
        let rest = without_name(&status, name);
        assert!(!rest.contains("github"), "{name}: {}", status.message());
    }
    let status = refusal(&github, "weather__get_forecast").await;
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
    assert_eq!(
        without_name(&status, "weather__get_forecast"),
        without_name(&refusal(&github, nowhere).await, nowhere)
    );

    tracing::info!(
        "--- CallTool: arguments the schema refuses are INVALID_ARGUMENT with the check's message"
    );
    let status = grpc
        .call_tool(as_key(
            &weather,
            call_request("weather__get_forecast", json!({"city": 42})),
        ))
        .await
        .expect_err("a refusal");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains("city"), "{}", status.message());
    let status = grpc
        .call_tool(as_key(
            &weather,
            GatewayCallToolRequest {
                name: "weather__get_forecast".into(),
                arguments_json: "{not json".into(),
                timeout_ms: 0,
            },
        ))
        .await
        .expect_err("a refusal");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");

    tracing::info!("--- Execute: console output streams before the result; the own tool answers");
    let stream = grpc
        .execute(as_key(
            &weather,
            execute_request("console.log('asking for Lisbon'); return await tools.weather.get_forecast({city: 'Lisbon'});"),
        ))
        .await
        .expect("Execute")
        .into_inner();
    let (events, result) = events_of(stream).await;
    let logs: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Log(log) if log.source() == LogSource::Console => Some(log.message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(logs, ["asking for Lisbon"], "{events:?}");
    assert_eq!(
        result.error_kind(),
        ScriptErrorKind::Unspecified,
        "{result:?}"
    );
    assert!(result.value_json.contains("Lisbon"), "{result:?}");
    assert_eq!(result.logs, ["asking for Lisbon"]);

    tracing::info!(
        "--- Execute: a script reaching for the other tenant's tool fails without reaching it"
    );
    for code in [
        "return await tools.call('github__create_issue', {repo: 'a/b', title: 'x'})",
        "return await tools.github.create_issue({repo: 'a/b', title: 'x'})",
    ] {
        let stream = grpc
            .execute(as_key(&weather, execute_request(code)))
            .await
            .expect("Execute")
            .into_inner();
        let (_, result) = events_of(stream).await;
        assert_eq!(
            result.error_kind(),
            ScriptErrorKind::Runtime,
            "{code}: {result:?}"
        );
        assert!(result.value_json.is_empty(), "{result:?}");
        assert!(
            !result.error.contains("\"server\":\"github\""),
            "{result:?}"
        );
    }

    tracing::info!("--- Execute: the caller's limits tighten the edge's");
    let stream = grpc
        .execute(as_key(
            &weather,
            GatewayExecuteRequest {
                code: "await tools.weather.get_forecast({city: 'A'}); return await tools.weather.get_forecast({city: 'B'});".into(),
                limits: Some(ExecutionLimits { tool_calls: 1, ..Default::default() }),
                stash_id: String::new(),
            },
        ))
        .await
        .expect("Execute")
        .into_inner();
    let (_, result) = events_of(stream).await;
    assert_eq!(
        result.error_kind(),
        ScriptErrorKind::ToolCalls,
        "{result:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_or_invalid_credential_gets_one_unauthenticated_answer_on_every_rpc() {
    let dev = QuiverDev::start(&["--auth", "required", "--grpc-listen", "127.0.0.1:0"]);
    let key = tenant_with_key(&dev.control_plane, "weather-only", "weather");
    let mut grpc = client(&dev).await;
    let (ok, _, err) = ctl(
        &dev.control_plane,
        &["tenant", "create", "revoked", "--server", "weather"],
    );
    assert!(ok, "{err}");
    let revoked = ctl_json(&dev.control_plane, &["key", "issue", "revoked"]);
    let (ok, _, err) = ctl(
        &dev.control_plane,
        &[
            "key",
            "revoke",
            "revoked",
            revoked["key_id"].as_str().unwrap(),
        ],
    );
    assert!(ok, "{err}");
    let revoked_key = format!("Bearer {}", revoked["key"].as_str().unwrap());

    let presented: Vec<Option<&str>> = vec![
        None,
        Some("Bearer qk_nope_0000"),
        Some(&revoked_key),
        Some("Basic dXNlcjpwdw=="),
        Some("Bearer not-a-jwt"),
        Some("Bearer"),
    ];
    let mut messages = std::collections::BTreeSet::new();
    for credential in &presented {
        let answers: Vec<Status> = vec![
            grpc.list_tools(presenting(*credential, ListToolsRequest {}))
                .await
                .expect_err("refused"),
            grpc.search_tools(presenting(
                *credential,
                SearchToolsRequest {
                    query: "forecast".into(),
                    limit: 3,
                },
            ))
            .await
            .expect_err("refused"),
            grpc.describe(presenting(
                *credential,
                DescribeRequest {
                    names: vec!["weather__get_forecast".into()],
                },
            ))
            .await
            .expect_err("refused"),
            grpc.call_tool(presenting(
                *credential,
                call_request("weather__get_forecast", json!({"city": "Oslo"})),
            ))
            .await
            .expect_err("refused"),
            grpc.execute(presenting(*credential, execute_request("return 1")))
                .await
                .expect_err("refused"),
        ];
        for status in answers {
            assert_eq!(
                status.code(),
                Code::Unauthenticated,
                "{credential:?}: {status:?}"
            );
            messages.insert(status.message().to_string());
        }
    }
    assert_eq!(
        messages.len(),
        1,
        "the answers tell the cases apart: {messages:?}"
    );
    let message = messages.into_iter().next().unwrap();
    assert!(message.contains("authorization"), "{message}");

    // Not vacuous: the right key is served on the same connection.
    let listed = grpc
        .list_tools(as_key(&key, ListToolsRequest {}))
        .await
        .expect("ListTools");
    assert!(!listed.into_inner().tools.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn without_required_auth_anonymous_callers_see_everything_and_keys_still_pick_their_tenant() {
    let dev = QuiverDev::start(&["--grpc-listen", "127.0.0.1:0"]);
    let key = tenant_with_key(&dev.control_plane, "weather-only", "weather");
    let mut grpc = client(&dev).await;
    let names = |tools: Vec<quiver_proto::pb::GatewayTool>| -> Vec<String> {
        tools.into_iter().map(|t| t.name).collect()
    };
    let anonymous = names(
        grpc.list_tools(ListToolsRequest {})
            .await
            .expect("ListTools")
            .into_inner()
            .tools,
    );
    assert!(
        anonymous.iter().any(|n| n.starts_with("github__")),
        "{anonymous:?}"
    );
    let tenant = names(
        grpc.list_tools(as_key(&key, ListToolsRequest {}))
            .await
            .expect("ListTools")
            .into_inner()
            .tools,
    );
    assert!(
        !tenant.is_empty() && tenant.iter().all(|n| n.starts_with("weather__")),
        "{tenant:?}"
    );
    // A presented credential is checked even here: a wrong one is refused,
    // not served as anonymous.
    let status = grpc
        .list_tools(presenting(Some("Bearer qk_x_wrong"), ListToolsRequest {}))
        .await
        .expect_err("refused");
    assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");

    // The gRPC server's own metrics: by service, method and status code.
    let metrics = support::http()
        .get(format!("http://{}/metrics", dev.authority()))
        .send()
        .await
        .expect("GET /metrics")
        .text()
        .await
        .expect("metrics text");
    for code in ["0", "16"] {
        assert!(
            metrics
                .lines()
                .any(|l| l.starts_with("rpc_server_duration_seconds_count")
                    && l.contains("rpc_service=\"quiver.v1.Gateway\"")
                    && l.contains("rpc_method=\"ListTools\"")
                    && l.contains(&format!("rpc_grpc_status_code=\"{code}\""))),
            "ListTools with status {code} in: {metrics}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn reflection_describes_the_gateway_service_to_generic_clients() {
    use tonic_reflection::pb::{v1, v1alpha};

    let dev = QuiverDev::start(&["--auth", "required", "--grpc-listen", "127.0.0.1:0"]);
    let channel = Endpoint::from_shared(format!("http://{}", grpc_addr(&dev)))
        .unwrap()
        .connect()
        .await
        .expect("connect");

    tracing::info!("--- v1: ListServices, then the file declaring the service");
    let mut reflection = v1::server_reflection_client::ServerReflectionClient::new(channel.clone());
    let ask =
        |message: v1::server_reflection_request::MessageRequest| v1::ServerReflectionRequest {
            host: String::new(),
            message_request: Some(message),
        };
    let requests = tokio_stream::iter(vec![
        ask(v1::server_reflection_request::MessageRequest::ListServices(
            String::new(),
        )),
        ask(
            v1::server_reflection_request::MessageRequest::FileContainingSymbol(
                "quiver.v1.Gateway".into(),
            ),
        ),
    ]);
    let mut answers = reflection
        .server_reflection_info(requests)
        .await
        .expect("reflection without credentials")
        .into_inner();
    let services = match answers
        .next()
        .await
        .expect("an answer")
        .expect("not a status")
        .message_response
    {
        Some(v1::server_reflection_response::MessageResponse::ListServicesResponse(list)) => {
            list.service.into_iter().map(|s| s.name).collect::<Vec<_>>()
        }
        other => panic!("not a service list: {other:?}"),
    };
    assert!(
        services.iter().any(|s| s == "quiver.v1.Gateway"),
        "{services:?}"
    );
    assert!(
        !services
            .iter()
            .any(|s| s.contains("Executor") || s.contains("Raft")),
        "{services:?}"
    );
    match answers
        .next()
        .await
        .expect("an answer")
        .expect("not a status")
        .message_response
    {
        Some(v1::server_reflection_response::MessageResponse::FileDescriptorResponse(files)) => {
            let declared = files
                .file_descriptor_proto
                .iter()
                .any(|bytes| String::from_utf8_lossy(bytes).contains("quiver/v1/gateway.proto"));
            assert!(declared, "the answer does not carry gateway.proto");
        }
        other => panic!("not a file descriptor: {other:?}"),
    }

    tracing::info!("--- v1alpha, which older clients (grpcurl before 1.9) ask");
    let mut alpha = v1alpha::server_reflection_client::ServerReflectionClient::new(channel);
    let requests = tokio_stream::iter(vec![v1alpha::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(
            v1alpha::server_reflection_request::MessageRequest::ListServices(String::new()),
        ),
    }]);
    let mut answers = alpha
        .server_reflection_info(requests)
        .await
        .expect("v1alpha")
        .into_inner();
    match answers
        .next()
        .await
        .expect("an answer")
        .expect("not a status")
        .message_response
    {
        Some(v1alpha::server_reflection_response::MessageResponse::ListServicesResponse(list)) => {
            assert!(
                list.service.iter().any(|s| s.name == "quiver.v1.Gateway"),
                "{list:?}"
            );
        }
        other => panic!("not a service list: {other:?}"),
    }
}

mod access_tokens;

mod streaming;

#[tokio::test(flavor = "multi_thread")]
async fn with_mtls_a_client_needs_a_certificate_from_the_configured_ca() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new();
    let (server_cert, server_key) = ca.issue("localhost");
    let (client_cert, client_key) = ca.issue("billing-service");
    let ca_path = write_file(dir.path(), "ca.pem", &ca.pem);
    let cert_path = write_file(dir.path(), "grpc.pem", &server_cert);
    let key_path = write_file(dir.path(), "grpc.key", &server_key);
    let config = format!(
        "[edge]\ngrpc_listen = \"127.0.0.1:0\"\ngrpc_tls = {{ cert = \"{}\", key = \"{}\", client_ca = \"{}\" }}\n",
        cert_path.display(),
        key_path.display(),
        ca_path.display()
    );
    let (dev, _config_dir) = support::start_with_config(&config, &[]);
    assert!(dev.banner.contains("(mTLS)"), "{}", dev.banner);
    let addr = grpc_addr(&dev);

    tracing::info!("--- without a client certificate: the handshake is refused");
    let refusal = support::tls_refusal(&addr, "localhost", &ca.pem, None);
    assert!(refusal.contains("CertificateRequired"), "{refusal}");

    tracing::info!("--- with one from another CA: refused too");
    let rogue = TestCa::new();
    let (rogue_cert, rogue_key) = rogue.issue("billing-service");
    let refusal =
        support::tls_refusal(&addr, "localhost", &ca.pem, Some((&rogue_cert, &rogue_key)));
    assert!(refusal.contains("DecryptError"), "{refusal}");

    tracing::info!("--- with the CA's certificate: served");
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(&ca.pem))
        .identity(Identity::from_pem(&client_cert, &client_key))
        .domain_name("localhost");
    let channel = Endpoint::from_shared(format!("https://{addr}"))
        .unwrap()
        .tls_config(tls)
        .unwrap()
        .connect()
        .await
        .expect("mTLS handshake with a CA-issued client certificate");
    let listed = GatewayClient::new(channel)
        .list_tools(ListToolsRequest {})
        .await
        .expect("ListTools over mTLS")
        .into_inner();
    assert!(
        listed
            .tools
            .iter()
            .any(|t| t.name == "weather__get_forecast"),
        "{:?}",
        listed.tools
    );
}
