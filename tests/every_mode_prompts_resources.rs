//! Search and code mode serve the upstreams' prompts and resources as
//! passthrough does (they do not fill the model's context the way tool
//! definitions do): declared at `initialize`, listed with the same names,
//! fetched through the edge, and a code-mode script reads resources with
//! `resources.read`. Code mode also calls a tool of the view by its own name,
//! while listing only its meta tools. A real `quiver dev` fronting the stdio
//! mock upstream with its test hooks.

use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
use serde_json::json;

use crate::support::{call, connect, start_with_config, test_kit_bin, text, tool_names};

/// One stdio upstream `w` (the weather mock with its test resource and prompt).
fn config() -> String {
    format!(
        "[[upstream]]\nid = \"w\"\ntransport = \"stdio\"\ncommand = \"{}\"\nargs = [\"mock-upstream\", \"--demo\", \"--server\", \"weather\", \"--stdio\"]\n",
        test_kit_bin()
    )
}

#[tokio::test]
async fn search_and_code_mode_serve_prompts_and_resources() {
    let (dev, _dir) = start_with_config(&config(), &[]);
    for mode in ["search", "code", "passthrough"] {
        let client = connect(&dev.mode_url(mode)).await;
        let info = client.peer_info().expect("initialized");
        assert!(
            info.capabilities.prompts.is_some() && info.capabilities.resources.is_some(),
            "{mode} mode declares prompts and resources: {:?}",
            info.capabilities
        );

        let prompts = client.list_all_prompts().await.expect("prompts/list");
        let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            ["w__brief"],
            "{mode} mode names prompts as passthrough does"
        );
        let mut arguments = serde_json::Map::new();
        arguments.insert("topic".into(), json!("tides"));
        let prompt = client
            .get_prompt(GetPromptRequestParams::new("w__brief").with_arguments(arguments))
            .await
            .expect("prompts/get");
        let rendered = serde_json::to_string(&prompt.messages).unwrap();
        assert!(rendered.contains("brief on tides"), "{mode}: {rendered}");

        let resources = client.list_all_resources().await.expect("resources/list");
        let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
        assert_eq!(uris, ["quiver-test://note"], "{mode} mode");
        let read = client
            .read_resource(ReadResourceRequestParams::new("quiver-test://note"))
            .await
            .expect("resources/read");
        let body = serde_json::to_string(&read.contents).unwrap();
        assert!(body.contains("a note"), "{mode}: {body}");
        client.cancel().await.ok();
    }
}

#[tokio::test]
async fn a_code_mode_script_reads_resources_and_tools_answer_to_their_own_names() {
    let (dev, _dir) = start_with_config(&config(), &[]);
    let client = connect(&dev.mode_url("code")).await;

    let script = r#"
        const listed = await resources.list();
        const [note] = await resources.read(listed[0].uri);
        let missing = null;
        try { await resources.read("quiver-test://nowhere"); } catch (e) { missing = e.message; }
        return { uris: listed.map((r) => r.uri), text: note.text, missing };
    "#;
    let result = call(&client, "execute", json!({ "code": script })).await;
    assert_ne!(result.is_error, Some(true), "{}", text(&result));
    let value = result
        .structured_content
        .expect("a script's structured result");
    let value = value.get("result").unwrap_or(&value);
    assert_eq!(value["uris"], json!(["quiver-test://note"]), "{value}");
    assert_eq!(value["text"], json!("a note"), "{value}");
    assert!(
        value["missing"]
            .as_str()
            .is_some_and(|m| m.contains("quiver-test://nowhere")),
        "an unknown resource is an error the script can catch: {value}"
    );

    // The list stays the meta tools; a tool of the view still answers to
    // its own name, checked against its schema like any call.
    let listed = tool_names(&client).await;
    assert!(
        listed
            .iter()
            .all(|n| ["list", "search", "describe", "execute"].contains(&n.as_str())),
        "{listed:?}"
    );
    let forecast = call(&client, "w__get_forecast", json!({ "city": "Oslo" })).await;
    assert_ne!(forecast.is_error, Some(true), "{}", text(&forecast));
    assert!(text(&forecast).contains("Oslo"), "{}", text(&forecast));
    let wrong = call(&client, "w__get_forecast", json!({ "city": 7 })).await;
    assert_eq!(wrong.is_error, Some(true), "{}", text(&wrong));
    assert!(text(&wrong).contains("city"), "{}", text(&wrong));
    client.cancel().await.ok();
}
