//! `quiver ctl search`: search's outcome signals are kept by each edge, not
//! the control plane, so this asks an edge over HTTP (`--edge`).

use anyhow::Context as _;
use serde_json::Value;

use super::{
    args::{Output, SearchCommand},
    render::{cell, value_table},
};

/// The console operator token in `file`, else in `quiver dev`'s default
/// place if there is one (without a token the edge refuses, saying so).
fn operator_token(file: Option<&std::path::Path>) -> anyhow::Result<Option<String>> {
    let default = std::path::Path::new(".quiver/dev/console-operator.token");
    let path = match file {
        Some(file) => file,
        None if default.exists() => default,
        None => return Ok(None),
    };
    let token = std::fs::read_to_string(path)
        .with_context(|| format!("reading the operator token {}", path.display()))?;
    Ok(Some(token.trim().to_string()))
}

/// `ctl search stats|reset`: the edge's `/search/stats[/{tenant}]` and
/// `/search/reset/{tenant}`.
pub(crate) async fn search_signals(command: SearchCommand, output: Output) -> anyhow::Result<()> {
    let (edge, segments, reset) = match &command {
        SearchCommand::Stats { tenant, edge } => {
            let mut segments = vec!["search", "stats"];
            segments.extend(tenant.as_deref());
            (edge, segments, false)
        }
        SearchCommand::Reset { tenant, edge } => (edge, vec!["search", "reset", tenant], true),
    };
    let url = edge_url(&edge.edge, &segments)?;
    let token = operator_token(edge.operator_token_file.as_deref())?;
    quiver_upstream::install_crypto_provider();
    let client = reqwest::Client::new();
    let mut request = if reset {
        client.post(url.clone())
    } else {
        client.get(url.clone())
    };
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.with_context(|| {
        format!(
            "cannot reach the edge at {}; is it running? Point --edge at its address",
            edge.edge
        )
    })?;
    let status = response.status();
    let body: Value = response.json().await.with_context(|| {
        format!("{url} answered {status} without JSON; is --edge a Quiver edge?")
    })?;
    if !status.is_success() {
        anyhow::bail!("the edge refused ({status}): {}", cell(&body["error"]));
    }
    if output == Output::Json {
        say!("{}", serde_json::to_string_pretty(&body)?);
        return Ok(());
    }
    if reset {
        say!(
            "search signals of tenant {} forgotten",
            cell(&body["tenant"])
        );
        return Ok(());
    }
    let tenants = body["tenants"].as_array().map_or(&[][..], Vec::as_slice);
    if tenants.is_empty() {
        say!("no search signals yet");
    }
    for (i, stats) in tenants.iter().enumerate() {
        if i > 0 {
            say!("");
        }
        say!(
            "tenant {}  ({} query→tool associations)",
            cell(&stats["tenant"]),
            cell(&stats["associations"])
        );
        let list = |key: &str| stats[key].as_array().cloned().unwrap_or_default();
        let zero = list("zero_hit_queries");
        say!("\nzero-hit queries: {}", zero.len());
        if !zero.is_empty() {
            value_table(&["count", "query"], &zero);
        }
        let never = list("found_never_called");
        say!("\nfound but never called: {}", never.len());
        if !never.is_empty() {
            value_table(&["shown", "tool"], &never);
        }
    }
    Ok(())
}

/// `edge` (`host:port`, a URL, or an MCP URL) with its path replaced by `segments`.
fn edge_url(edge: &str, segments: &[&str]) -> anyhow::Result<reqwest::Url> {
    let edge = edge.trim();
    let with_scheme = if edge.contains("://") {
        edge.to_string()
    } else {
        format!("http://{edge}")
    };
    let mut url = reqwest::Url::parse(&with_scheme)
        .with_context(|| format!("--edge `{edge}`: expected host:port or http://host:port"))?;
    url.set_query(None);
    url.set_fragment(None);
    url.path_segments_mut()
        .map_err(|()| anyhow::anyhow!("--edge `{edge}`: expected host:port or http://host:port"))?
        .clear()
        .extend(segments);
    Ok(url)
}
