//! What the search indexes know of a tool: plain strings, independent of the
//! manifest types, so that indexes are easy to build in tests and benchmarks.

use serde_json::Value;

/// One searchable tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchDoc {
    /// The tool's name on its server (`create_issue`).
    pub name: String,
    /// The server's id (`github`).
    pub server: String,
    /// What the server is for (may be empty).
    pub server_description: String,
    /// The tool's description (may be empty).
    pub description: String,
    /// Its parameters.
    pub params: Vec<SearchParam>,
}

/// One parameter of a tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchParam {
    /// Parameter name (`repo_path`).
    pub name: String,
    /// Its description (may be empty).
    pub description: String,
}

impl SearchParam {
    /// The top-level parameters of a JSON Schema: each key of `properties`
    /// with its `description`. Schemas that are not objects give no parameters;
    /// a schema stored as a JSON string is parsed first.
    ///
    /// ```
    /// use quiver_edge::search::SearchParam;
    /// let schema = serde_json::json!({"type": "object", "properties": {
    ///     "city": {"type": "string", "description": "Name of the city"}}});
    /// let params = SearchParam::from_schema(&schema);
    /// assert_eq!(params[0].name, "city");
    /// assert_eq!(params[0].description, "Name of the city");
    /// ```
    pub fn from_schema(schema: &Value) -> Vec<SearchParam> {
        match schema {
            Value::Object(object) => match object.get("properties") {
                Some(Value::Object(properties)) => properties
                    .iter()
                    .map(|(name, property)| SearchParam {
                        name: name.clone(),
                        description: property
                            .get("description")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    })
                    .collect(),
                _ => Vec::new(),
            },
            Value::String(text) => serde_json::from_str::<Value>(text)
                .map(|parsed| {
                    if parsed.is_string() {
                        Vec::new()
                    } else {
                        SearchParam::from_schema(&parsed)
                    }
                })
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::SearchParam;

    #[test]
    fn reads_properties_and_tolerates_odd_schemas() {
        let params =
            SearchParam::from_schema(&json!({"properties": {"a": {}, "b": {"description": "B"}}}));
        assert_eq!(params.len(), 2);
        assert_eq!(params[1].description, "B");
        assert!(SearchParam::from_schema(&json!({"type": "object"})).is_empty());
        assert!(SearchParam::from_schema(&json!(null)).is_empty());
        assert!(SearchParam::from_schema(&json!("not json")).is_empty());
        let text = json!("{\"properties\": {\"q\": {\"description\": \"query\"}}}");
        assert_eq!(SearchParam::from_schema(&text)[0].name, "q");
    }
}
