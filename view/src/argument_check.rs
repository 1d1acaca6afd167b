//! Checks call arguments against a tool's `inputSchema` before anything is
//! forwarded, and words failures so a model can fix every field in one step.

use std::fmt::Write as _;

use quiver_proto::manifest::ValidationMode;
use serde_json::{Value, json};

/// A compiled argument check for one tool.
pub struct ArgumentCheck {
    validator: Option<jsonschema::Validator>,
    fields: Vec<FieldInfo>,
    closed: bool,
}

struct FieldInfo {
    name: String,
    kind: String,
    required: bool,
}

/// Everything wrong with a call's arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ArgumentErrors {
    /// One entry per offending field.
    pub problems: Vec<Problem>,
    /// `name (type, required)` of every declared field.
    pub valid_fields: Vec<String>,
}

/// One offending field.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// JSON-pointer-like path of the field (`city`, `filters/0/name`), or `(arguments)`.
    pub field: String,
    /// What was expected, and what came instead.
    pub message: String,
}

impl ArgumentCheck {
    /// Compiles `schema` (draft 2020-12 unless it names another draft). A schema
    /// the validator cannot compile (e.g. remote `$ref`s) is checked only for
    /// required fields and declared properties.
    pub fn compile(schema: &Value) -> ArgumentCheck {
        let validator = match jsonschema::options()
            .should_validate_formats(false)
            .build(schema)
        {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::debug!("input schema not compiled, checking structure only: {e}");
                None
            }
        };
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut fields: Vec<FieldInfo> = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .map(|(name, prop)| FieldInfo {
                        name: name.clone(),
                        kind: describe_type(prop),
                        required: required.contains(&name.as_str()),
                    })
                    .collect()
            })
            .unwrap_or_default();
        fields.sort_by(|a, b| b.required.cmp(&a.required).then(a.name.cmp(&b.name)));
        let closed = matches!(schema.get("additionalProperties"), Some(Value::Bool(false)));
        ArgumentCheck {
            validator,
            fields,
            closed,
        }
    }

    /// Checks `arguments` (an object, or absent) under `mode`.
    pub fn check(&self, arguments: &Value, mode: ValidationMode) -> Result<(), ArgumentErrors> {
        if mode == ValidationMode::Off {
            return Ok(());
        }
        let mut problems = Vec::new();
        let Some(object) = arguments.as_object() else {
            problems.push(Problem {
                field: "(arguments)".into(),
                message: format!("expected an object, got {}", type_name(arguments)),
            });
            return Err(self.errors(problems));
        };
        match &self.validator {
            Some(validator) => {
                for error in validator.iter_errors(arguments) {
                    let path = error.instance_path().to_string();
                    let field = path.trim_start_matches('/').to_string();
                    let field = if field.is_empty() {
                        "(arguments)".to_string()
                    } else {
                        field
                    };
                    problems.push(Problem {
                        field,
                        message: error.to_string(),
                    });
                }
            }
            None => {
                for f in self.fields.iter().filter(|f| f.required) {
                    if !object.contains_key(&f.name) {
                        problems.push(Problem {
                            field: f.name.clone(),
                            message: format!("required field is missing ({})", f.kind),
                        });
                    }
                }
            }
        }
        if mode == ValidationMode::Strict || (self.validator.is_none() && self.closed) {
            for key in object.keys() {
                if !self.fields.iter().any(|f| &f.name == key) {
                    problems.push(Problem {
                        field: key.clone(),
                        message: "not a field of this tool".into(),
                    });
                }
            }
        }
        problems.dedup();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(self.errors(problems))
        }
    }

    fn errors(&self, problems: Vec<Problem>) -> ArgumentErrors {
        let valid_fields = self
            .fields
            .iter()
            .map(|f| {
                if f.required {
                    format!("{} ({}, required)", f.name, f.kind)
                } else {
                    format!("{} ({})", f.name, f.kind)
                }
            })
            .collect();
        ArgumentErrors {
            problems,
            valid_fields,
        }
    }
}

impl ArgumentErrors {
    /// The message shown to a model, for tool `name`.
    pub fn message(&self, name: &str) -> String {
        let mut text = format!(
            "invalid arguments for `{name}`; nothing was sent to the tool. Fix these and call again:\n"
        );
        for p in &self.problems {
            let _ = writeln!(text, "- {}: {}", p.field, p.message);
        }
        if self.valid_fields.is_empty() {
            text.push_str("This tool takes no declared fields.");
        } else {
            let _ = write!(text, "Valid fields: {}.", self.valid_fields.join(", "));
        }
        text
    }

    /// The same as structured content.
    pub fn to_json(&self) -> Value {
        json!({
            "error": {
                "code": "invalid_arguments",
                "problems": self.problems.iter().map(|p| json!({"field": p.field, "message": p.message})).collect::<Vec<_>>(),
                "validFields": self.valid_fields,
            }
        })
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A short type description of a property schema (`string`, `"a"|"b"`, `integer[]`).
fn describe_type(schema: &Value) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let shown: Vec<String> = values.iter().take(6).map(Value::to_string).collect();
        let more = if values.len() > 6 { "|…" } else { "" };
        return format!("{}{more}", shown.join("|"));
    }
    match schema.get("type") {
        Some(Value::String(t)) if t == "array" => {
            let item = schema
                .get("items")
                .map(describe_type)
                .unwrap_or_else(|| "any".into());
            format!("{item}[]")
        }
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("|"),
        _ => "any".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weather() -> ArgumentCheck {
        ArgumentCheck::compile(&json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer", "minimum": 1},
                "units": {"enum": ["metric", "imperial"]}
            },
            "required": ["city"]
        }))
    }

    #[test]
    fn names_every_offending_field() {
        let errors = weather()
            .check(
                &json!({"days": "three", "units": "kelvin"}),
                ValidationMode::Schema,
            )
            .unwrap_err();
        let fields: Vec<&str> = errors.problems.iter().map(|p| p.field.as_str()).collect();
        assert!(
            fields.contains(&"(arguments)"),
            "missing required is reported at the root: {fields:?}"
        );
        assert!(fields.contains(&"days"), "{fields:?}");
        assert!(fields.contains(&"units"), "{fields:?}");
        let message = errors.message("weather__forecast");
        assert!(message.contains("city"), "{message}");
        assert!(
            message.contains("Valid fields: city (string, required)"),
            "{message}"
        );
    }

    #[test]
    fn strict_rejects_unknown_fields_schema_does_not() {
        let args = json!({"city": "Oslo", "colour": "blue"});
        assert!(weather().check(&args, ValidationMode::Schema).is_ok());
        let errors = weather().check(&args, ValidationMode::Strict).unwrap_err();
        assert_eq!(errors.problems[0].field, "colour");
    }

    #[test]
    fn off_accepts_anything() {
        assert!(weather().check(&json!(42), ValidationMode::Off).is_ok());
    }

    #[test]
    fn non_object_arguments_are_rejected() {
        let errors = weather()
            .check(&json!([1, 2]), ValidationMode::Schema)
            .unwrap_err();
        assert!(errors.problems[0].message.contains("expected an object"));
    }

    #[test]
    fn draft7_schemas_validate() {
        let check = ArgumentCheck::compile(&json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"n": {"type": "number", "exclusiveMaximum": 10}},
        }));
        assert!(
            check
                .check(&json!({"n": 5}), ValidationMode::Schema)
                .is_ok()
        );
        assert!(
            check
                .check(&json!({"n": 11}), ValidationMode::Schema)
                .is_err()
        );
    }

    #[test]
    fn uncompilable_schema_still_checks_required() {
        let check = ArgumentCheck::compile(&json!({
            "type": "object",
            "properties": {"a": {"$ref": "https://example.invalid/remote.json"}},
            "required": ["a"]
        }));
        assert!(check.check(&json!({}), ValidationMode::Schema).is_err());
        assert!(
            check
                .check(&json!({"a": 1}), ValidationMode::Schema)
                .is_ok()
        );
    }
}
