//! The output cap on what leaves the edge: a script's reply (text and
//! structured content together, as encoded on the wire) stays within the
//! cap. A reply over it keeps one copy of its text, cut to a valid,
//! non-empty preview, and structured content that says it was cut.

use quiver_contract::encoded_size::{json_string_len, prefix_within};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

/// Room left for the JSON-RPC envelope around a result (`jsonrpc`, `id`,
/// `result`), so that the whole message stays within the cap.
const ENVELOPE_BYTES: usize = 256;

/// Bytes `result` takes encoded.
pub(crate) fn encoded_len(result: &CallToolResult) -> usize {
    serde_json::to_vec(result).map_or(usize::MAX, |v| v.len())
}

/// `result` if its encoding fits within `cap` bytes with room for the
/// envelope; else the same kind of result (error or not) whose text is the
/// longest preview that fits and whose structured content says how large the
/// reply was and what the cap is.
pub(crate) fn within_cap(result: CallToolResult, cap: usize) -> CallToolResult {
    let limit = cap.saturating_sub(ENVELOPE_BYTES);
    let encoded = encoded_len(&result);
    if encoded <= limit {
        return result;
    }
    let text: String = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n");
    let note = format!(
        "\n[cut: the reply was {encoded} bytes encoded, over the {cap}-byte output cap; return less, or keep the rest in the stash and read it in parts]"
    );
    let structured = json!({
        "truncated": true,
        "reply_bytes": encoded,
        "cap_bytes": cap,
    });
    let mut cut = CallToolResult::success(vec![ContentBlock::text(String::new())]);
    cut.is_error = result.is_error;
    cut.structured_content = Some(structured);
    // What the reply costs with an empty text, and so what the text may take.
    let bare = encoded_len(&cut);
    let room = limit.saturating_sub(bare - 2 + json_string_len(&note) - 2);
    let preview = prefix_within(&text, room);
    cut.content = vec![ContentBlock::text(format!("{preview}{note}"))];
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modes::tool_result::tool_ok;

    fn text_of(result: &CallToolResult) -> &str {
        result.content[0].as_text().map_or("", |t| t.text.as_str())
    }

    #[test]
    fn a_reply_within_the_cap_is_untouched() {
        let reply = tool_ok("42".into(), Some(json!({"result": 42})));
        assert_eq!(within_cap(reply.clone(), 10_000), reply);
    }

    #[test]
    fn a_large_reply_is_cut_to_one_preview_within_the_cap() {
        let result = "x".repeat(20_000);
        let reply = tool_ok(result.clone(), Some(json!({"result": result})));
        let cut = within_cap(reply, 10_000);
        assert!(encoded_len(&cut) <= 10_000 - ENVELOPE_BYTES);
        assert!(text_of(&cut).starts_with("xxxx"), "{}", text_of(&cut));
        assert!(text_of(&cut).len() > 9_000);
        assert_eq!(cut.structured_content.as_ref().unwrap()["truncated"], true);
        assert_ne!(cut.is_error, Some(true));
    }

    #[test]
    fn a_quote_heavy_reply_keeps_a_non_empty_preview() {
        let result = "\"".repeat(20_000);
        let text = serde_json::to_string(&result).unwrap();
        let reply = tool_ok(text, Some(json!({"result": result})));
        let cut = within_cap(reply, 10_000);
        assert!(encoded_len(&cut) <= 10_000 - ENVELOPE_BYTES);
        assert!(text_of(&cut).starts_with("\"\\\"\\\""), "{}", text_of(&cut));
        assert!(text_of(&cut).len() > 2_000);
    }
}
