//! Names a tool is known by outside its server: the namespaced name exposed over
//! MCP (`<namespace>__<tool>`, valid under `^[a-zA-Z0-9_-]{1,64}$`) and the
//! JavaScript identifiers used by code mode (`tools.<server>.<tool>`).

/// Assigns exposed names to `(namespace, tool)` pairs given in canonical order
/// (sorted by server id, then tool name). Deterministic: invalid characters are
/// replaced, over-long names shortened with a hash suffix, and collisions resolved
/// in input order (the first keeps the plain name).
pub fn assign_exposed_names(tools: &[(&str, &str)]) -> Vec<String> {
    todo!("{} names", tools.len())
}

/// A valid, non-reserved JavaScript identifier for `name` (deterministic).
pub fn js_identifier(name: &str) -> String {
    todo!("{name}")
}
