//! Hybrid search is what a newcomer gets: `quiver dev` with no flag and no
//! configuration ranks with the installed sentence model (scripts/test.sh
//! installs it, as scripts/dev.sh does), and says so on its start-up line.
//! Without a model, or with a damaged one, it still starts and ranks
//! lexically, and the line says why.

use std::{path::Path, time::Duration};

use serde_json::json;

use crate::support::{QuiverDev, call, connect, partial_run::required_input};

/// A question that shares no word (nor synonym) with the weather tools'
/// texts: only the sentence model connects them.
const PARAPHRASE: &str = "is it going to be sunny on saturday";

fn is_weather(top: &Option<String>) -> bool {
    top.as_deref().is_some_and(|t| t.starts_with("weather__"))
}

/// A search-mode client of `dev`.
type Client = rmcp::service::RunningService<rmcp::RoleClient, ()>;

/// The name of the best `search_tools` result for `query`.
async fn top_result(client: &Client, query: &str) -> Option<String> {
    let found = call(client, "search_tools", json!({"query": query, "limit": 3})).await;
    let results = found.structured_content.as_ref()?["results"]
        .as_array()?
        .clone();
    results
        .first()
        .and_then(|r| r["name"].as_str())
        .map(str::to_owned)
}

fn installed_model() -> Option<std::path::PathBuf> {
    let dir = quiver_view::search::semantic::default_model_dir()?;
    required_input(
        &dir.join("model.safetensors"),
        "run scripts/install-model.sh",
    )?;
    Some(dir)
}

/// Starts `quiver dev` with a configuration file holding `toml` (kept
/// for as long as the server runs).
fn dev_with_config(toml: &str) -> (QuiverDev, tempfile::NamedTempFile) {
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(config.path(), toml).unwrap();
    let dev = QuiverDev::start(&["--config", config.path().to_str().unwrap()]);
    (dev, config)
}

/// Starts `quiver dev` with `QUIVER_SEARCH_MODEL_DIR=model_dir`, which
/// cannot serve the model; its start-up line must say lexical and `why`, and
/// it must still find what shares words with a tool.
async fn starts_lexical(model_dir: &Path, why: &str) -> (QuiverDev, Client) {
    let dev = QuiverDev::start_with_env(&[], &[("QUIVER_SEARCH_MODEL_DIR", model_dir)]);
    assert!(
        dev.banner.contains(&format!("search lexical ({why}")),
        "the start-up line says lexical and why: {}",
        dev.banner
    );
    let client = connect(&dev.mode_url("search")).await;
    assert_eq!(
        top_result(&client, "open an issue in a repository")
            .await
            .as_deref(),
        Some("github__create_issue")
    );
    (dev, client)
}

#[tokio::test(flavor = "multi_thread")]
async fn dev_ranks_hybrid_with_the_installed_model_and_no_flag() {
    if installed_model().is_none() {
        return;
    }
    let dev = QuiverDev::start(&[]);
    assert!(
        dev.banner.contains("search hybrid"),
        "the start-up line says hybrid: {}",
        dev.banner
    );
    // The shipped query adapter is on by default and named.
    assert!(
        dev.banner.contains("query adapter quiver-adapter-"),
        "the start-up line names the query adapter: {}",
        dev.banner
    );
    let client = connect(&dev.mode_url("search")).await;
    // The tool vectors are built in the background; until then the view
    // ranks lexically. Ask every 50 ms until the model's answer shows,
    // within a bound.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let top = top_result(&client, PARAPHRASE).await;
        if is_weather(&top) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "hybrid search never ranked a weather tool first: {top:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_model_dev_starts_and_ranks_lexically() {
    let missing = tempfile::tempdir().unwrap();
    let (_dev, client) =
        starts_lexical(&missing.path().join("no-model-here"), "no search model at").await;
    // Words find what shares words with a tool, but not the paraphrase only
    // the model connects.
    let top = top_result(&client, PARAPHRASE).await;
    assert!(!is_weather(&top), "{top:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_model_means_lexical_ranking_not_a_failed_start() {
    let damaged = tempfile::tempdir().unwrap();
    for file in ["config.json", "tokenizer.json", "model.safetensors"] {
        std::fs::write(damaged.path().join(file), b"{ not a model").unwrap();
    }
    starts_lexical(damaged.path(), "the search model cannot be used").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn search_semantic_false_turns_the_model_off() {
    if installed_model().is_none() {
        return;
    }
    let (dev, _config) = dev_with_config("[edge]\nsearch_semantic = false\n");
    assert!(
        dev.banner
            .contains("search lexical (semantic ranking turned off"),
        "{}",
        dev.banner
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn search_adapter_false_turns_the_query_adapter_off() {
    if installed_model().is_none() {
        return;
    }
    let (dev, _config) = dev_with_config("[edge]\nsearch_adapter = false\n");
    assert!(
        dev.banner.contains("search hybrid")
            && dev
                .banner
                .contains("no query adapter (`search_adapter = false`)"),
        "{}",
        dev.banner
    );
}
