//! Code mode's `execute` end to end: a real MCP client sends scripts to
//! `quiver dev`, which validates them, runs them in sandboxed worker processes
//! and answers their tool calls from real upstreams.

use crate::support;

use serde_json::{Value, json};
use support::{QuiverDev, call, connect, text, tool_names};

async fn execute<S: rmcp::Service<rmcp::RoleClient>>(
    client: &rmcp::service::RunningService<rmcp::RoleClient, S>,
    code: &str,
) -> rmcp::model::CallToolResult {
    call(client, "execute", json!({"code": code})).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_script_searches_calls_three_tools_in_parallel_stashes_and_summarises() {
    let dev = QuiverDev::start(&["--mode", "code"]);
    let client = connect(&dev.url).await;
    let names = tool_names(&client).await;
    assert_eq!(names, ["list", "search", "describe", "execute"]);

    let script = r#"
        const found = await search("weather forecast for a city", 3);
        const [forecast, current, air] = await Promise.all([
          tools.call(found[0].name, { city: "Lisbon", days: 2 }),
          tools.weather.get_current_conditions({ city: "Lisbon" }),
          tools.weather.get_air_quality({ city: "Lisbon" }),
        ]);
        await stash.set("last_city", "Lisbon");
        console.log("three calls done");
        return { first: found[0].name, tools: [forecast.tool, current.tool, air.tool], city: forecast.arguments.city };
    "#;
    let result = execute(&client, script).await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    let structured = result.structured_content.clone().unwrap();
    assert_eq!(
        structured["result"],
        json!({"first": "weather__get_forecast", "tools": ["get_forecast", "get_current_conditions", "get_air_quality"], "city": "Lisbon"})
    );
    assert_eq!(structured["logs"], json!(["three calls done"]));

    tracing::info!("--- the stash survives into the next execute of the same session");
    let again = execute(&client, r#"return await stash.get("last_city");"#).await;
    assert_eq!(again.structured_content.unwrap()["result"], json!("Lisbon"));

    tracing::info!("--- but another session cannot see it");
    let other = connect(&dev.url).await;
    let theirs = execute(&other, r#"return await stash.get("last_city");"#).await;
    assert_eq!(theirs.structured_content.unwrap()["result"], Value::Null);
    other.cancel().await.unwrap();
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_scripts_get_clear_errors_and_the_executor_keeps_serving() {
    let dev = QuiverDev::start(&["--mode", "code"]);
    let client = connect(&dev.url).await;

    tracing::info!("--- rejected before running");
    let rejected = execute(&client, "const x = 1;\nreturn eval('x');").await;
    assert_eq!(rejected.is_error, Some(true));
    let message = text(&rejected);
    assert!(
        message.contains("eval") && message.contains("line 2"),
        "{message}"
    );

    tracing::info!("--- runs forever");
    let looping = execute(&client, "while (true) {}").await;
    assert_eq!(looping.is_error, Some(true));
    assert!(text(&looping).contains("timeout"), "{}", text(&looping));

    tracing::info!("--- throws");
    let thrown = execute(&client, "const a = 1;\nthrow new Error('boom');").await;
    assert_eq!(thrown.is_error, Some(true));
    assert!(
        text(&thrown).contains("boom") && text(&thrown).contains("line 2"),
        "{}",
        text(&thrown)
    );

    tracing::info!("--- unknown tool and bad arguments are catchable errors inside the script");
    let caught = execute(
        &client,
        r#"
        const errors = [];
        try { await tools.call("weather__get_forcast", {}); } catch (e) { errors.push(String(e.message ?? e)); }
        try { await tools.weather.get_forecast({ days: "three" }); } catch (e) { errors.push(String(e.message ?? e)); }
        return errors;
        "#,
    )
    .await;
    assert_ne!(caught.is_error, Some(true), "{}", text(&caught));
    let errors = caught.structured_content.unwrap()["result"].clone();
    assert!(
        errors[0]
            .as_str()
            .unwrap()
            .contains("weather__get_forecast"),
        "{errors}"
    );
    assert!(errors[1].as_str().unwrap().contains("city"), "{errors}");

    tracing::info!("--- still healthy");
    let fine = execute(&client, "return 40 + 2;").await;
    assert_eq!(fine.structured_content.unwrap()["result"], json!(42));
    client.cancel().await.unwrap();
}
