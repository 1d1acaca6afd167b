//! MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865) as a tool declares it:
//! the `ui://` resource its view renders and who may call it. Read from a
//! tool's `_meta` in the current form (`_meta.ui.resourceUri`,
//! `_meta.ui.visibility`) and the older flat key (`_meta["ui/resourceUri"]`).

use serde_json::Value;

/// The extension's id in `capabilities.extensions`, on both sides of
/// `initialize`.
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The MIME type of an app's view (`resources/read` of its `ui://` resource).
pub const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The older flat key some servers still put the view's URI under.
const LEGACY_RESOURCE_KEY: &str = "ui/resourceUri";

/// The settings a client or server sends for the extension: it renders (or
/// serves) views of [`APP_MIME_TYPE`].
pub fn extension_settings() -> serde_json::Map<String, Value> {
    let mut settings = serde_json::Map::new();
    settings.insert("mimeTypes".into(), Value::from(vec![APP_MIME_TYPE]));
    settings
}

/// Who may call a tool, from its `_meta.ui.visibility`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Visibility {
    /// The model may see and call it (listed, searched, scripted).
    pub model: bool,
    /// An app's view of the same server may call it.
    pub app: bool,
}

impl Visibility {
    /// The visibility `meta` declares; both when it declares none (or a
    /// value that is not a list of names), as the extension defines.
    pub fn of(meta: Option<&Value>) -> Visibility {
        let Some(list) = meta
            .and_then(|m| m.pointer("/ui/visibility"))
            .and_then(Value::as_array)
        else {
            return Visibility {
                model: true,
                app: true,
            };
        };
        let has = |name: &str| list.iter().any(|v| v.as_str() == Some(name));
        let (model, app) = (has("model"), has("app"));
        if !model && !app {
            // An empty or unknown list hides nothing: the model's view of a
            // tool is only ever taken away by an explicit `["app"]`.
            return Visibility {
                model: true,
                app: false,
            };
        }
        Visibility { model, app }
    }
}

/// The `ui://` resource whose view renders the tool's results, if `meta`
/// links one.
pub fn resource_uri(meta: Option<&Value>) -> Option<&str> {
    let meta = meta?;
    meta.pointer("/ui/resourceUri")
        .or_else(|| meta.get(LEGACY_RESOURCE_KEY))
        .and_then(Value::as_str)
        .filter(|uri| uri.starts_with("ui://"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn visibility_defaults_to_both_and_only_app_alone_hides_from_the_model() {
        let of = |v: Value| Visibility::of(Some(&json!({"ui": {"visibility": v}})));
        let both = Visibility {
            model: true,
            app: true,
        };
        assert_eq!(Visibility::of(None), both);
        assert_eq!(Visibility::of(Some(&json!({"ui": {}}))), both);
        assert_eq!(of(json!("app")), both, "not a list");
        assert_eq!(
            of(json!(["app"])),
            Visibility {
                model: false,
                app: true
            }
        );
        assert_eq!(
            of(json!(["model"])),
            Visibility {
                model: true,
                app: false
            }
        );
        assert_eq!(of(json!(["model", "app"])), both);
        assert_eq!(
            of(json!([])),
            Visibility {
                model: true,
                app: false
            }
        );
    }

    #[test]
    fn the_view_link_is_read_in_both_forms_and_only_as_ui_uri() {
        let current = json!({"ui": {"resourceUri": "ui://dash/chart.html"}});
        assert_eq!(resource_uri(Some(&current)), Some("ui://dash/chart.html"));
        let legacy = json!({"ui/resourceUri": "ui://dash/old.html"});
        assert_eq!(resource_uri(Some(&legacy)), Some("ui://dash/old.html"));
        let web = json!({"ui": {"resourceUri": "https://example.com/x.html"}});
        assert_eq!(resource_uri(Some(&web)), None);
        assert_eq!(resource_uri(None), None);
    }

    #[test]
    fn the_extension_settings_name_the_app_mime_type() {
        assert_eq!(
            Value::Object(extension_settings()),
            json!({"mimeTypes": ["text/html;profile=mcp-app"]})
        );
    }
}
