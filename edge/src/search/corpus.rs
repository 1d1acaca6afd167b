//! Real tool catalogues as search documents, for the evaluation and the
//! benchmark: the livemcpbench and oslook files of `../shared/datasets`.
//! Tools are identified as `server/tool`, the server id being the catalogue's
//! server name with characters outside `[a-zA-Z0-9_-]` replaced by `-`.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::Value;

use super::{SearchDoc, SearchParam};

/// The catalogues the evaluation knows, by the name queries use.
pub const CORPORA: [&str; 2] = ["livemcpbench", "oslook"];

/// The tools of one catalogue.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// `livemcpbench` or `oslook`.
    pub name: String,
    /// One document per tool.
    pub docs: Vec<SearchDoc>,
}

impl Corpus {
    /// Loads the catalogue `name` (one of [`CORPORA`]) from `dataset_dir`.
    pub fn load(dataset_dir: &Path, name: &str) -> anyhow::Result<Corpus> {
        let path = Corpus::path(dataset_dir, name)?;
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading catalogue {}", path.display()))?;
        let json: Value = serde_json::from_str(&text)
            .with_context(|| format!("parsing catalogue {} as JSON", path.display()))?;
        let docs = match name {
            "livemcpbench" => livemcpbench_docs(&json),
            _ => oslook_docs(&json),
        }
        .with_context(|| format!("reading catalogue {}", path.display()))?;
        Ok(Corpus {
            name: name.to_owned(),
            docs,
        })
    }

    /// Where the catalogue `name` lives under `dataset_dir`.
    pub fn path(dataset_dir: &Path, name: &str) -> anyhow::Result<PathBuf> {
        Ok(match name {
            "livemcpbench" => dataset_dir.join("livemcpbench/tools.json"),
            "oslook" => dataset_dir.join("oslook-mcp-servers-schemas/schemas_by_server.json"),
            other => bail!("unknown corpus `{other}`; expected one of {CORPORA:?}"),
        })
    }

    /// The `server/tool` id of each document, in order.
    pub fn ids(&self) -> Vec<String> {
        self.docs
            .iter()
            .map(|d| format!("{}/{}", d.server, d.name))
            .collect()
    }
}

/// `[a-zA-Z0-9_-]`, anything else becoming `-`.
pub fn sanitize_server_id(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// `[{name, description, tools: {<key>: {server_name, tools: [..]}}}]`
fn livemcpbench_docs(json: &Value) -> anyhow::Result<Vec<SearchDoc>> {
    let Some(servers) = json.as_array() else {
        bail!("expected a list of servers at the top level");
    };
    let mut docs = Vec::new();
    for (i, server) in servers.iter().enumerate() {
        let description = str_field(server, "description");
        let Some(groups) = server.get("tools").and_then(Value::as_object) else {
            bail!("server #{i}: expected an object under `tools`");
        };
        for (key, group) in groups {
            let name = group
                .get("server_name")
                .and_then(Value::as_str)
                .unwrap_or(key);
            let server_id = sanitize_server_id(name);
            for tool in group
                .get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                docs.push(tool_doc(&server_id, &description, tool, "inputSchema"));
            }
        }
    }
    Ok(docs)
}

/// `{<server>: {tools: [{name, description, input_schema}]}}`
fn oslook_docs(json: &Value) -> anyhow::Result<Vec<SearchDoc>> {
    let Some(servers) = json.as_object() else {
        bail!("expected an object of servers at the top level");
    };
    let mut docs = Vec::new();
    for (name, server) in servers {
        let server_id = sanitize_server_id(name);
        let description = str_field(server, "description");
        for tool in server
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            docs.push(tool_doc(&server_id, &description, tool, "input_schema"));
        }
    }
    Ok(docs)
}

fn tool_doc(server: &str, server_description: &str, tool: &Value, schema_key: &str) -> SearchDoc {
    SearchDoc {
        name: str_field(tool, "name"),
        server: server.to_owned(),
        server_description: server_description.to_owned(),
        description: str_field(tool, "description"),
        params: tool
            .get(schema_key)
            .map(SearchParam::from_schema)
            .unwrap_or_default(),
    }
}

fn str_field(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizes_server_names() {
        assert_eq!(
            sanitize_server_id("Ant Design Components"),
            "Ant-Design-Components"
        );
        assert_eq!(sanitize_server_id("npx_fetch"), "npx_fetch");
        assert_eq!(sanitize_server_id("a.b/c"), "a-b-c");
    }

    #[test]
    fn reads_both_shapes() {
        let lmb = serde_json::json!([{"name": "Weather Server", "description": "Weather data",
            "tools": {"weather": {"server_name": "weather", "tools": [
                {"name": "get_weather", "description": "Now", "inputSchema": {"properties": {"city": {}}}}]}}}]);
        let docs = livemcpbench_docs(&lmb).unwrap();
        assert_eq!(docs[0].server, "weather");
        assert_eq!(docs[0].server_description, "Weather data");
        assert_eq!(docs[0].params[0].name, "city");
        let oslook = serde_json::json!({"my server": {"tools": [{"name": "t", "description": "d", "input_schema": "{}"}]}});
        let docs = oslook_docs(&oslook).unwrap();
        assert_eq!(docs[0].server, "my-server");
        assert!(livemcpbench_docs(&oslook).is_err());
    }
}
