//! Turning a script's serialised return value into the outcome's `result`,
//! cut to the output budget with an explicit marker.

use quiver_contract::encoded_size::prefix_within;
use serde_json::{Value, json};

/// Parses `text` (JSON produced by the bootstrap), or replaces it with
/// `{"truncated": true, "bytes": <len>, "preview": "<prefix>"}` when it is over
/// `limit` bytes; the marker itself stays within `limit` when it can.
/// Returns the value and whether it was cut.
pub(crate) fn bounded_result(text: &str, limit: usize) -> Result<(Value, bool), serde_json::Error> {
    if text.len() <= limit {
        return Ok((serde_json::from_str(text)?, false));
    }
    // The marker without its preview, then the longest preview that keeps
    // the whole marker, as encoded, within the limit.
    let bare = json!({ "truncated": true, "bytes": text.len(), "preview": "" });
    let room = limit.saturating_sub(bare.to_string().len() - 2);
    let preview = prefix_within(text, room);
    let marker = json!({ "truncated": true, "bytes": text.len(), "preview": preview });
    Ok((marker, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_results_pass_through() {
        let (value, cut) = bounded_result(r#"{"a":[1,2]}"#, 100).unwrap();
        assert_eq!(value, json!({"a": [1, 2]}));
        assert!(!cut);
    }

    #[test]
    fn large_results_become_a_marker_within_the_limit() {
        let text = serde_json::to_string(&vec!["\"quoted\" ünïcode"; 500]).unwrap();
        let (value, cut) = bounded_result(&text, 1000).unwrap();
        assert!(cut);
        assert_eq!(value["truncated"], json!(true));
        assert_eq!(value["bytes"], json!(text.len()));
        let preview = value["preview"].as_str().unwrap();
        assert!(text.starts_with(preview) && !preview.is_empty());
        assert!(value.to_string().len() <= 1000);
    }

    #[test]
    fn a_quote_heavy_result_keeps_a_preview_within_the_limit() {
        let text = serde_json::to_string(&"\"".repeat(5_000)).unwrap();
        let (value, cut) = bounded_result(&text, 1000).unwrap();
        assert!(cut);
        let preview = value["preview"].as_str().unwrap();
        assert!(preview.len() > 200, "{preview}");
        assert!(text.starts_with(preview));
        assert!(value.to_string().len() <= 1000);
    }

    #[test]
    fn a_tiny_limit_still_gives_a_marker() {
        let (value, cut) = bounded_result("[1,2,3,4,5,6,7,8,9]", 4).unwrap();
        assert!(cut);
        assert_eq!(value["preview"], json!(""));
    }
}
