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

/// Keys that mark an object as a JSON Schema rather than a sketch of arguments.
const SCHEMA_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "$ref",
    "$schema",
    "anyOf",
    "oneOf",
    "allOf",
    "items",
    "required",
];

impl SearchParam {
    /// The top-level parameters of a JSON Schema: each key of `properties`
    /// with its `description`. Schemas that are not objects give no parameters;
    /// a schema stored as a JSON string is parsed first, and one that does not
    /// parse becomes a single unnamed parameter described by its text.
    ///
    /// ```
    /// use quiver_view::search::SearchParam;
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
                // Not a JSON Schema but a sketch of the arguments
                // (`{"entity_id": "string"}`): its keys are the parameters.
                None if !object.keys().any(|k| SCHEMA_KEYWORDS.contains(&k.as_str())) => object
                    .iter()
                    .map(|(name, sketch)| SearchParam {
                        name: name.clone(),
                        description: sketch.as_str().unwrap_or_default().to_owned(),
                    })
                    .collect(),
                _ => Vec::new(),
            },
            Value::String(text) => match serde_json::from_str::<Value>(text) {
                Ok(parsed) if !parsed.is_string() => SearchParam::from_schema(&parsed),
                // Not JSON (some catalogues hold a sketch like `{"id":"string"}`
                // with typos): its words still say what the tool takes.
                _ => vec![SearchParam {
                    name: String::new(),
                    description: text.clone(),
                }],
            },
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
        let sketch = SearchParam::from_schema(&json!({"entity_id": "string", "area": "string?"}));
        assert_eq!(sketch.len(), 2);
        assert!(SearchParam::from_schema(&json!(null)).is_empty());
        let sketch = SearchParam::from_schema(&json!("{\"state\": \"open|close|\"x\"}"));
        assert_eq!(sketch.len(), 1);
        assert!(sketch[0].description.contains("open|close"));
        let text = json!("{\"properties\": {\"q\": {\"description\": \"query\"}}}");
        assert_eq!(SearchParam::from_schema(&text)[0].name, "q");
    }
}
