//! An upstream whose error carries its own secret (from its `env`), an internal
//! address and a server path beside the path the caller asked for: the caller
//! gets the reason and its own path back, and none of the rest, through
//! passthrough and through a script.

use crate::support;

use serde_json::json;
use support::{call, connect, start_with_config, test_kit_bin, text};

const SECRET: &str = "planted-Secret-4242";

fn assert_clean(message: &str) {
    assert!(
        message.contains("permission denied"),
        "reason kept: {message}"
    );
    assert!(
        message.contains("/srv/reports/q3.csv"),
        "the caller's path kept: {message}"
    );
    for leaked in [SECRET, "10.20.30.40", "/opt/upstream/spool", "svc:"] {
        assert!(!message.contains(leaked), "`{leaked}` leaked: {message}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_secret_planted_in_an_upstream_error_never_reaches_the_caller() {
    let config = format!(
        "[[upstream]]\nid = \"files\"\ntransport = \"stdio\"\ncommand = \"{}\"\nargs = [\"mock-upstream\", \"--demo\", \"--server\", \"notes\", \"--stdio\"]\nenv = {{ QUIVER_TEST_SECRET = \"{SECRET}\" }}\n",
        test_kit_bin()
    );
    let (dev, _dir) = start_with_config(&config, &[]);

    eprintln!("--- passthrough");
    let client = connect(&dev.mode_url("passthrough")).await;
    let result = call(
        &client,
        "files__quiver_test_fail",
        json!({"path": "/srv/reports/q3.csv"}),
    )
    .await;
    assert_eq!(result.is_error, Some(true));
    assert_clean(&text(&result));
    client.cancel().await.expect("close");

    eprintln!("--- a script, uncaught");
    let client = connect(&dev.mode_url("code")).await;
    let result = call(
        &client,
        "execute",
        json!({"code": r#"return await tools.call("files__quiver_test_fail", { path: "/srv/reports/q3.csv" });"#}),
    )
    .await;
    assert_eq!(result.is_error, Some(true));
    assert_clean(&text(&result));
    client.cancel().await.expect("close");
}
