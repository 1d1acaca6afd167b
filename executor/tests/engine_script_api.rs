//! The script API of a fresh runtime, driven in-process through a fake host:
//! return values, tool calls, search/describe/stash requests, console capture,
//! output truncation and error reporting.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use futures::future::{BoxFuture, FutureExt};
use quiver_contract::{Limits, ScriptOutcome};
use quiver_executor::{
    engine::{HostBridge, ScriptRuntime},
    ipc::{HostError, HostRequest, ToolNames},
};
use serde_json::{Value, json};

/// Answers every request with a description of it, and records it.
#[derive(Default, Clone)]
struct RecordingHost {
    seen: Arc<Mutex<Vec<HostRequest>>>,
}

impl HostBridge for RecordingHost {
    fn request(&self, request: HostRequest) -> BoxFuture<'static, Result<Value, HostError>> {
        self.seen.lock().unwrap().push(request.clone());
        async move {
            match request {
                HostRequest::CallTool { name, .. } if name.starts_with("broken.") => {
                    Err(format!("tool {name} failed upstream").into())
                }
                HostRequest::CallTool { name, args } => Ok(json!({ "called": name, "args": args })),
                HostRequest::Search { query, limit } => {
                    Ok(json!([{ "name": "github.search_issues", "query": query, "limit": limit }]))
                }
                HostRequest::Describe { name } => {
                    Ok(json!(format!("declare function {name}(): void;")))
                }
                HostRequest::StashGet { key } => Ok(json!({ "key": key })),
                HostRequest::StashSet { .. } | HostRequest::StashDelete { .. } => Ok(Value::Null),
                HostRequest::StashKeys => Ok(json!(["a", "b"])),
                HostRequest::ListResources => Ok(json!([{ "uri": "file:///a.txt", "name": "a" }])),
                HostRequest::ReadResource { uri } => Ok(json!([{ "uri": uri, "text": "hello" }])),
                HostRequest::HasName { server, tool } => Ok(json!(
                    quiver_executor::script::names_in(&tools(), Some(&server))
                        .is_some_and(|names| tool.is_none_or(|t| names.contains(&t)))
                )),
                HostRequest::Names { server } => Ok(json!(quiver_executor::script::names_in(
                    &tools(),
                    server.as_deref()
                ))),
            }
        }
        .boxed()
    }
}

fn tools() -> BTreeMap<String, Vec<String>> {
    [
        (
            "github".to_string(),
            vec!["search_issues".to_string(), "get_issue".to_string()],
        ),
        ("broken".to_string(), vec!["always_fails".to_string()]),
    ]
    .into()
}

async fn run_with(code: &str, limits: Limits, host: RecordingHost) -> ScriptOutcome {
    let mut runtime = ScriptRuntime::new(limits.heap_bytes).expect("a fresh runtime");
    runtime
        .execute(code, &limits, &ToolNames::complete(tools()), Arc::new(host))
        .await
}

async fn run(code: &str) -> ScriptOutcome {
    run_with(code, Limits::default(), RecordingHost::default()).await
}

/// Runs `code` knowing nothing of the names under `tools` up front: every
/// name the script reaches is looked up through the host.
async fn run_looking_up(code: &str, limits: Limits, host: RecordingHost) -> ScriptOutcome {
    let mut runtime = ScriptRuntime::new(limits.heap_bytes).expect("a fresh runtime");
    runtime
        .execute(code, &limits, &ToolNames::default(), Arc::new(host))
        .await
}

fn lookups(host: &RecordingHost) -> Vec<HostRequest> {
    host.seen
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.is_lookup())
        .cloned()
        .collect()
}

fn kind(outcome: &ScriptOutcome) -> Option<&str> {
    outcome.error.as_ref().map(|e| e.kind.as_str())
}

#[tokio::test]
async fn a_trivial_script_returns_its_value() {
    let outcome = run("const x = 6; return { answer: x * 7, list: [1, 'two', null] };").await;
    assert_eq!(outcome.error, None);
    assert_eq!(
        outcome.result,
        Some(json!({ "answer": 42, "list": [1, "two", null] }))
    );
    assert!(!outcome.truncated);
}

#[tokio::test]
async fn tool_calls_round_trip_through_the_host() {
    let host = RecordingHost::default();
    let code = r#"
        const direct = await tools.github.search_issues({ q: "bug" });
        const byName = await tools.call("github__get_issue", { id: 7 });
        const noArgs = await tools.github.get_issue();
        return { direct, byName, noArgs };
    "#;
    let outcome = run_with(code, Limits::default(), host.clone()).await;
    assert_eq!(outcome.error, None, "{outcome:?}");
    assert_eq!(
        outcome.result,
        Some(json!({
            "direct": { "called": "github.search_issues", "args": { "q": "bug" } },
            "byName": { "called": "github__get_issue", "args": { "id": 7 } },
            "noArgs": { "called": "github.get_issue", "args": {} },
        }))
    );
    assert_eq!(host.seen.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn resources_are_listed_and_read_through_the_host() {
    let host = RecordingHost::default();
    let code = r#"
        const listed = await resources.list();
        const [content] = await resources.read(listed[0].uri);
        let refused = null;
        try { await resources.read(42); } catch (e) { refused = e.message; }
        return { text: content.text, refused };
    "#;
    let outcome = run_with(code, Limits::default(), host.clone()).await;
    assert_eq!(outcome.error, None, "{outcome:?}");
    let result = outcome.result.unwrap();
    assert_eq!(result["text"], json!("hello"));
    assert!(
        result["refused"]
            .as_str()
            .unwrap()
            .contains("uri must be a string"),
        "{result}"
    );
    // The refused read never reached the host.
    assert_eq!(
        host.seen.lock().unwrap().clone(),
        vec![
            HostRequest::ListResources,
            HostRequest::ReadResource {
                uri: "file:///a.txt".into()
            },
        ]
    );
}

#[tokio::test]
async fn search_describe_and_stash_are_host_requests() {
    let host = RecordingHost::default();
    let code = r#"
        const found = await search("open issues", 3);
        const doc = await describe("github.search_issues");
        await stash.set("k", { v: 1 }, 60);
        await stash.set("plain", 1);
        const got = await stash.get("k");
        await stash.delete("k");
        const keys = await stash.keys();
        return { found, doc, got, keys };
    "#;
    let outcome = run_with(code, Limits::default(), host.clone()).await;
    assert_eq!(outcome.error, None, "{outcome:?}");
    let result = outcome.result.unwrap();
    assert_eq!(result["found"][0]["limit"], json!(3));
    assert_eq!(
        result["doc"],
        json!("declare function github.search_issues(): void;")
    );
    assert_eq!(result["keys"], json!(["a", "b"]));
    let seen = host.seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            HostRequest::Search {
                query: "open issues".into(),
                limit: 3
            },
            HostRequest::Describe {
                name: "github.search_issues".into()
            },
            HostRequest::StashSet {
                key: "k".into(),
                value: json!({ "v": 1 }),
                ttl_secs: Some(60)
            },
            HostRequest::StashSet {
                key: "plain".into(),
                value: json!(1),
                ttl_secs: None
            },
            HostRequest::StashGet { key: "k".into() },
            HostRequest::StashDelete { key: "k".into() },
            HostRequest::StashKeys,
        ]
    );
}

#[tokio::test]
async fn host_errors_are_thrown_errors_the_script_can_catch() {
    let code = r#"
        try {
            await tools.broken.always_fails({});
        } catch (e) {
            return { caught: e instanceof Error, message: e.message };
        }
    "#;
    let outcome = run(code).await;
    assert_eq!(
        outcome.result,
        Some(json!({ "caught": true, "message": "tool broken.always_fails failed upstream" }))
    );
}

#[tokio::test]
async fn an_uncaught_host_error_reports_the_line_of_the_call() {
    let outcome =
        run("const a = 1;\nconst b = 2;\nawait tools.broken.always_fails({ a, b });\nreturn a;")
            .await;
    let error = outcome.error.expect("an error");
    assert_eq!(error.kind, "runtime");
    assert_eq!(
        error.message,
        "Error: tool broken.always_fails failed upstream"
    );
    assert_eq!(error.line, Some(3));
}

#[tokio::test]
async fn runtime_errors_report_the_line_in_the_script() {
    let outcome =
        run("const a = 1;\n\nfunction f(issue) {\n  return issue.fields.title;\n}\nreturn f({});")
            .await;
    let error = outcome.error.expect("an error");
    assert_eq!(error.kind, "runtime");
    assert!(error.message.starts_with("TypeError"), "{error:?}");
    assert_eq!(error.line, Some(4));
    assert!(
        !error.message.contains("quiver:"),
        "no stack frames in the message: {error:?}"
    );

    let outcome = run("\n\nthrow new RangeError('too far');").await;
    let error = outcome.error.unwrap();
    assert_eq!(
        (error.message.as_str(), error.line),
        ("RangeError: too far", Some(3))
    );

    let outcome = run("const ok = 1;\nconst broken = ;\n").await;
    let error = outcome.error.unwrap();
    assert_eq!(error.kind, "runtime");
    assert!(error.message.starts_with("SyntaxError"), "{error:?}");
    assert_eq!(error.line, Some(2));
}

#[tokio::test]
async fn non_error_throws_are_described() {
    let outcome = run("throw { code: 42 };").await;
    assert_eq!(outcome.error.unwrap().message, r#"Uncaught {"code":42}"#);
}

#[tokio::test]
async fn results_are_serialised_as_json() {
    let outcome = run("return undefined;").await;
    assert_eq!((outcome.result, outcome.error), (Some(Value::Null), None));

    let outcome = run("return [12345678901234567890n, new Map([['a', 1]]), new Set([1, 2]), new Date(0), undefined];").await;
    assert_eq!(
        outcome.result,
        Some(json!(["12345678901234567890", { "a": 1 }, [1, 2], "1970-01-01T00:00:00.000Z", null]))
    );

    let outcome = run("return { f() {} };").await;
    assert_eq!(kind(&outcome), Some("output"));
    assert!(outcome.error.unwrap().message.contains("function"));

    let outcome = run("const a = {}; a.self = a; return a;").await;
    assert_eq!(kind(&outcome), Some("output"));
}

#[tokio::test]
async fn large_results_are_cut_with_a_marker() {
    let limits = Limits {
        output_bytes: 1000,
        ..Limits::default()
    };
    let outcome = run_with("return 'x'.repeat(5000);", limits, RecordingHost::default()).await;
    assert_eq!(outcome.error, None);
    assert!(outcome.truncated);
    let result = outcome.result.unwrap();
    assert_eq!(result["truncated"], json!(true));
    assert_eq!(result["bytes"], json!(5002));
    let preview = result["preview"].as_str().unwrap();
    assert!(preview.starts_with("\"xxxx") && preview.len() < 1000);
    assert!(result.to_string().len() <= 1000);
}

#[tokio::test]
async fn console_output_is_captured_in_order() {
    let code = r#"
        console.log("plain", 1, true, null, undefined);
        console.info({ a: [1, 2] }, 5n);
        console.warn("careful");
        console.error(new TypeError("bad"));
        console.log(() => 1, Symbol("s"));
        const cycle = {}; cycle.self = cycle;
        console.log(cycle);
        return 0;
    "#;
    let outcome = run(code).await;
    assert_eq!(outcome.error, None, "{outcome:?}");
    assert_eq!(
        outcome.logs,
        vec![
            "plain 1 true null undefined",
            r#"{"a":[1,2]} 5"#,
            "[warn] careful",
            "[error] TypeError: bad",
            "[Function] Symbol(s)",
            "[object Object]",
        ]
    );
    assert!(!outcome.truncated);
}

#[tokio::test]
async fn console_output_is_bounded() {
    let limits = Limits {
        log_bytes: 100,
        ..Limits::default()
    };
    let code = "for (let i = 0; i < 1000; i++) console.log('line ' + i); console.log('x'.repeat(1e6)); return 'done';";
    let outcome = run_with(code, limits, RecordingHost::default()).await;
    assert_eq!(outcome.result, Some(json!("done")));
    assert!(outcome.truncated);
    let kept: usize = outcome.logs[..outcome.logs.len() - 1]
        .iter()
        .map(String::len)
        .sum();
    assert!(kept <= 100, "{kept} bytes kept");
    assert_eq!(
        outcome.logs.last().unwrap(),
        "[logs truncated at 100 bytes]"
    );
    assert_eq!(outcome.logs[0], "line 0");
}

#[tokio::test]
async fn set_timeout_is_bounded_by_the_time_limit() {
    let code =
        "return await new Promise((resolve) => setTimeout((a, b) => resolve(a + b), 10, 2, 3));";
    assert_eq!(run(code).await.result, Some(json!(5)));

    let limits = Limits {
        wall_ms: 1000,
        ..Limits::default()
    };
    let outcome = run_with(
        "setTimeout(() => {}, 5000);",
        limits,
        RecordingHost::default(),
    )
    .await;
    assert!(outcome.error.unwrap().message.starts_with("RangeError"));

    let outcome = run("setTimeout('return 1', 1);").await;
    assert!(outcome.error.unwrap().message.starts_with("TypeError"));
}

#[tokio::test]
async fn errors_in_timer_callbacks_and_floating_rejections_fail_the_script() {
    let outcome = run("setTimeout(() => { throw new Error('late'); }, 1);\nawait new Promise((r) => setTimeout(r, 50));\nreturn 1;").await;
    assert_eq!(outcome.error.unwrap().message, "Error: late");

    let outcome =
        run("Promise.reject(new Error('floating'));\nawait new Promise((r) => setTimeout(r, 50));")
            .await;
    assert_eq!(outcome.error.unwrap().message, "Error: floating");
}

#[tokio::test]
async fn a_promise_that_never_settles_is_an_error_not_a_hang() {
    let outcome = run("await new Promise(() => {});").await;
    assert_eq!(kind(&outcome), Some("runtime"));
}

#[tokio::test]
async fn servers_named_like_api_members_do_not_shadow_them() {
    let limits = Limits::default();
    let mut runtime = ScriptRuntime::new(limits.heap_bytes).unwrap();
    let tools: BTreeMap<_, _> = [
        ("call".to_string(), vec!["x".to_string()]),
        ("__proto__".to_string(), vec!["constructor".to_string()]),
    ]
    .into();
    let code =
        "return [typeof tools.call, Object.keys(tools), await tools['__proto__'].constructor({})];";
    let outcome = runtime
        .execute(
            code,
            &limits,
            &ToolNames::complete(tools),
            Arc::new(RecordingHost::default()),
        )
        .await;
    assert_eq!(
        outcome.result,
        Some(json!(["function", ["__proto__"], { "called": "__proto__.constructor", "args": {} }]))
    );
}

#[tokio::test]
async fn a_runtime_serves_one_execution_only() {
    let limits = Limits::default();
    let mut runtime = ScriptRuntime::new(limits.heap_bytes).unwrap();
    assert!(runtime.fits(&limits));
    let host = Arc::new(RecordingHost::default());
    assert_eq!(
        runtime
            .execute(
                "return 1;",
                &limits,
                &ToolNames::complete(tools()),
                host.clone()
            )
            .await
            .result,
        Some(json!(1))
    );
    assert!(!runtime.fits(&limits));
    let again = runtime
        .execute("return 2;", &limits, &ToolNames::complete(tools()), host)
        .await;
    assert_eq!(kind(&again), Some("internal"));
}

#[tokio::test]
async fn a_tiny_heap_limit_is_raised_to_the_minimum() {
    let limits = Limits {
        heap_bytes: 1,
        ..Limits::default()
    };
    let outcome = run_with("return 'fits';", limits, RecordingHost::default()).await;
    assert_eq!(outcome.result, Some(json!("fits")));
}

#[tokio::test]
async fn names_are_looked_up_when_reached_once_each_and_behave_as_a_frozen_namespace() {
    let host = RecordingHost::default();
    let code = r#"
        const name = ["git", "hub"].join("");
        const a = tools[name].search_issues;
        const b = tools.github.search_issues;
        const missing = [tools.nope, tools.nope, tools.github.nope];
        const keys = Object.keys(tools);
        const inner = Object.keys(tools.github);
        let refused = 0;
        for (const attempt of [
            () => { tools.github.extra = 1; },
            () => { delete tools.github.search_issues; },
            () => { Object.defineProperty(tools, "x", { value: 1 }); },
            () => { Object.setPrototypeOf(tools.github, {}); },
        ]) { try { attempt(); } catch { refused++; } }
        return [a === b, typeof a, missing, keys, inner, Object.isFrozen(tools),
                Object.isFrozen(tools.github), "github" in tools, "nope" in tools,
                refused, (await a({ q: 1 })).called];
    "#;
    let outcome = run_looking_up(code, Limits::default(), host.clone()).await;
    assert_eq!(outcome.error, None, "{outcome:?}");
    assert_eq!(
        outcome.result,
        Some(json!([
            true,
            "function",
            [null, null, null],
            ["broken", "github"],
            ["search_issues", "get_issue"],
            true,
            true,
            true,
            false,
            4,
            "github.search_issues"
        ]))
    );
    let has = |server: &str, tool: Option<&str>| HostRequest::HasName {
        server: server.into(),
        tool: tool.map(Into::into),
    };
    assert_eq!(
        lookups(&host),
        vec![
            has("github", None),
            has("github", Some("search_issues")),
            has("nope", None),
            has("github", Some("nope")),
            HostRequest::Names { server: None },
            HostRequest::Names {
                server: Some("github".into())
            },
        ],
        "each name once, whatever the script does with it afterwards"
    );
}

#[tokio::test]
async fn names_the_source_mentions_need_no_lookup() {
    let host = RecordingHost::default();
    let code = "const r = await tools.github.get_issue({ id: 1 }); return [r.called, typeof tools.broken.nope];";
    let known = ToolNames::mentioned_in(code, |server, tool| {
        quiver_executor::script::names_in(&tools(), Some(server))
            .is_some_and(|names| tool.is_none_or(|t| names.iter().any(|n| n == t)))
    });
    let limits = Limits::default();
    let mut runtime = ScriptRuntime::new(limits.heap_bytes).expect("a fresh runtime");
    let outcome = runtime
        .execute(code, &limits, &known, Arc::new(host.clone()))
        .await;
    assert_eq!(
        outcome.result,
        Some(json!(["github.get_issue", "undefined"]))
    );
    assert_eq!(
        lookups(&host),
        vec![],
        "everything it reached was resolved up front"
    );
}

#[tokio::test]
async fn name_lookups_count_against_the_host_call_budget() {
    let host = RecordingHost::default();
    let limits = Limits {
        host_calls: 3,
        ..Limits::default()
    };
    // Catching the refusal does not help: the execution is over budget.
    let code = "let found = 0; try { for (let i = 0; i < 10; i++) if (tools['s' + i]) found++; } catch (e) { return e.message; } return found;";
    let outcome = run_looking_up(code, limits, host.clone()).await;
    assert_eq!(kind(&outcome), Some("host_calls"), "{outcome:?}");
    assert_eq!(
        lookups(&host).len(),
        3,
        "no lookup past the budget reaches the host"
    );
}
