//! Large upstream answers through a running `quiver dev`: several MiB of text
//! from a stdio and a Streamable HTTP upstream reach a passthrough client
//! whole, and a code-mode script gets what fits its reply limit whole and what
//! does not as an error it can catch, naming the limit; the worker keeps serving.

use crate::support;

use serde_json::{Value, json};
use support::{MockHttpUpstream, call, connect, start_with_config, test_kit_bin, text};

/// What a script may receive at once (`Limits::reply_bytes`, default 4 MiB).
const REPLY_LIMIT: u64 = 4 * 1024 * 1024;

/// The text `quiver_test_large` answers: lines `{n:015}\n`, n from 0, the
/// last one cut at `bytes`.
fn numbered_lines(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 16);
    let mut n = 0u64;
    while text.len() < bytes {
        text.push_str(&format!("{n:015}\n"));
        n += 1;
    }
    text.truncate(bytes);
    text
}

/// Fails with the first line where `got` differs from the expected text,
/// rather than printing megabytes.
fn assert_numbered_lines(got: &str, bytes: usize, from: &str) {
    assert_eq!(got.len(), bytes, "length of the answer from {from}");
    let expected = numbered_lines(bytes);
    if got != expected {
        let line = got
            .lines()
            .zip(expected.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "the answer from {from} differs from line {line}: got {:?}, expected {:?}",
            got.lines().nth(line),
            expected.lines().nth(line)
        );
    }
}

/// `s`: the weather mock over stdio; `h`: the same over Streamable HTTP at `http_url`.
fn config(http_url: &str) -> String {
    format!(
        "[[upstream]]\nid = \"s\"\ntransport = \"stdio\"\ncommand = \"{}\"\nargs = [\"mock-upstream\", \"--demo\", \"--server\", \"weather\", \"--stdio\"]\n\n[[upstream]]\nid = \"h\"\ntransport = \"http\"\nurl = \"{http_url}\"\n",
        test_kit_bin()
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_large_answer_reaches_a_passthrough_client_whole() {
    let http = MockHttpUpstream::start(&["--server", "weather"]);
    let (dev, _dir) = start_with_config(&config(&http.url), &[]);
    let client = connect(&dev.mode_url("passthrough")).await;

    for (tool, bytes) in [
        ("s__quiver_test_large", 6 * 1024 * 1024 + 7),
        ("h__quiver_test_large", 5 * 1024 * 1024 + 3),
    ] {
        eprintln!("--- {bytes} bytes through {tool}");
        let result = call(&client, tool, json!({ "bytes": bytes })).await;
        assert_ne!(
            result.is_error,
            Some(true),
            "{tool}: {:.300}",
            text(&result)
        );
        assert_eq!(result.content.len(), 1, "{tool}: one text block");
        assert_numbered_lines(&text(&result), bytes, tool);
    }

    eprintln!("--- the session and the upstreams still answer small calls");
    for tool in ["s__get_forecast", "h__get_forecast"] {
        let small = call(&client, tool, json!({"city": "Oslo"})).await;
        let answer: Value = serde_json::from_str(&text(&small)).expect("the mock's JSON echo");
        assert_eq!(answer["arguments"]["city"], "Oslo", "{tool}: {answer}");
    }
    client.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_script_gets_answers_within_its_reply_limit_and_a_catchable_error_beyond() {
    let http = MockHttpUpstream::start(&["--server", "weather"]);
    let (dev, _dir) = start_with_config(&config(&http.url), &[]);
    let client = connect(&dev.mode_url("code")).await;
    let execute = |code: String| {
        let client = &client;
        async move {
            let result = call(client, "execute", json!({ "code": code })).await;
            assert_ne!(result.is_error, Some(true), "{}", text(&result));
            result.structured_content.expect("structured result")["result"].clone()
        }
    };

    eprintln!("--- 3 MiB fits the 4 MiB reply limit: the script reads it whole");
    let fits = 3 * 1024 * 1024 + 5;
    let checked = execute(format!(
        r#"
        const text = await tools.s.quiver_test_large({{ bytes: {fits} }});
        const lines = text.split("\n");
        const whole = lines.slice(0, -1).every((line, n) => line === String(n).padStart(15, "0"));
        return {{ length: text.length, lines: lines.length, whole, last: lines[lines.length - 1] }};
        "#
    ))
    .await;
    let expected = numbered_lines(fits);
    assert_eq!(
        checked,
        json!({
            "length": fits,
            "lines": expected.split('\n').count(),
            "whole": true,
            "last": expected.rsplit('\n').next(),
        }),
        "what the script read"
    );

    for server in ["s", "h"] {
        eprintln!("--- 5 MiB from `{server}` is over the limit: an error the script catches");
        let over = 5 * 1024 * 1024;
        let value = execute(format!(
            r#"
            let failure = null;
            try {{
              const text = await tools.{server}.quiver_test_large({{ bytes: {over} }});
              failure = "answered with " + text.length + " characters";
            }} catch (e) {{ failure = String(e.message ?? e); }}
            const after = await tools.{server}.get_forecast({{ city: "Bergen" }});
            return {{ failure, after: after.arguments.city }};
            "#
        ))
        .await;
        let failure = value["failure"].as_str().expect("a failure message");
        assert!(
            failure.contains(&format!("at most {REPLY_LIMIT} bytes")),
            "the error names the limit: {value}"
        );
        assert!(
            failure.contains("ask for less"),
            "the error says what to do: {value}"
        );
        assert_eq!(
            value["after"], "Bergen",
            "the same script's next call works"
        );
    }

    eprintln!("--- the next script runs on a healthy worker");
    let next = execute("return await tools.s.get_forecast({ city: 'Rome' });".into()).await;
    assert_eq!(next["arguments"]["city"], "Rome", "{next}");
    client.cancel().await.expect("close");
}
