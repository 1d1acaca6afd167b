//! How many tokens a text costs a model, estimated without a tokenizer: its
//! UTF-8 bytes over [`BYTES_PER_TOKEN`]. Cheap enough for metrics; `quiver
//! tokens` measures exactly (cl100k, o200k) where exactness matters.

/// Bytes per token. On the bundled catalogues' `tools/list` JSON, cl100k
/// counts 3.8 (metatool) to 4.9 (azure-mcp) bytes per token, so the
/// estimate stays within about a quarter of it.
pub const BYTES_PER_TOKEN: u64 = 4;

/// The estimated tokens of a text of `bytes` UTF-8 bytes.
pub fn estimate_tokens(bytes: usize) -> u64 {
    u64::try_from(bytes)
        .unwrap_or(u64::MAX)
        .div_ceil(BYTES_PER_TOKEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_bytes_make_a_token_and_a_partial_one_counts() {
        assert_eq!(estimate_tokens(0), 0);
        assert_eq!(estimate_tokens(4), 1);
        assert_eq!(estimate_tokens(5), 2);
    }
}
