//! `execute` hands the script's code, with the calling session, to the
//! executor's script runner, and renders a successful outcome: the value as
//! JSON, then the console output.

use crate::support;

use std::sync::Arc;

use quiver_contract::{DEFAULT_TENANT, ScriptOutcome};
use quiver_edge::Mode;
use serde_json::json;
use support::{FakeExecutor, FakeScripts, call, connect_to, edge, text};

const CODE: &str = "const f = await tools.weather.get_forecast({city: 'Oslo'});\nconsole.log('fetched');\nreturn {city: 'Oslo', rain: true};";

#[tokio::test]
async fn execute_passes_code_and_session_and_renders_the_value() {
    let scripts = Arc::new(FakeScripts::answering(|| {
        Ok(ScriptOutcome {
            app_views: Vec::new(),
            result: Some(json!({"city": "Oslo", "rain": true})),
            error: None,
            logs: vec!["fetched".into()],
            truncated: false,
        })
    }));
    let gateway = edge(Arc::new(FakeExecutor::new()), Some(scripts.clone()));
    let first = connect_to(&gateway, Mode::Code).await;
    let second = connect_to(&gateway, Mode::Code).await;

    tracing::info!("--- two scripts on one session, one on another");
    let result = call(&first, "execute", json!({"code": CODE})).await;
    call(&first, "execute", json!({"code": "return 2"})).await;
    call(&second, "execute", json!({"code": "return 3"})).await;

    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(
        text(&result),
        "{\"city\":\"Oslo\",\"rain\":true}\n--- console ---\nfetched"
    );
    assert_eq!(
        result.structured_content,
        Some(
            json!({"result": {"city": "Oslo", "rain": true}, "logs": ["fetched"], "truncated": false})
        )
    );

    tracing::info!("--- the runner saw each script with its own session");
    let requests = scripts.requests();
    assert_eq!(requests.len(), 3, "{requests:?}");
    assert_eq!(requests[0].code, CODE);
    assert_eq!(requests[0].tenant, DEFAULT_TENANT);
    assert!(requests[0].limits.is_none(), "{requests:?}");
    assert!(!requests[0].session.is_empty());
    assert_eq!(
        requests[0].session, requests[1].session,
        "one MCP session is one script session (its stash)"
    );
    assert_ne!(
        requests[0].session, requests[2].session,
        "another MCP session is another script session"
    );
}
