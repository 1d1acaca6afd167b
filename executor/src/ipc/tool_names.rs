//! What a script's runtime is told about the names under `tools` before it
//! starts. A view may hold 10,000 tools; a script names a handful. So the
//! host resolves only the names the script's source mentions
//! (`tools.github.create_issue`), and the runtime asks the host for anything
//! else when the script reaches it (`tools[name]`, `Object.keys(tools)`).
//! What crosses the pipe per execution grows with the script, never with the
//! view.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// Most distinct names taken from one script's source; past this the
/// runtime looks the rest up when it reaches them.
pub const MAX_MENTIONED_NAMES: usize = 256;

/// The part of a script's `tools` namespace known up front.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolNames {
    /// Servers known to exist, each with the tools known to exist there.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub present: BTreeMap<String, BTreeSet<String>>,
    /// `server` or `server.tool` known not to exist.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub absent: BTreeSet<String>,
    /// Whether `present` is every name (nothing is ever looked up), with
    /// each server's tools in the order a script lists them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete: Option<BTreeMap<String, Vec<String>>>,
}

impl ToolNames {
    /// Every name, known up front: `server -> tools` (for tests and
    /// embeddings with a handful of tools).
    pub fn complete(tools: BTreeMap<String, Vec<String>>) -> ToolNames {
        let present = tools
            .iter()
            .map(|(server, names)| (server.clone(), names.iter().cloned().collect()))
            .collect();
        ToolNames {
            present,
            absent: BTreeSet::new(),
            complete: Some(tools),
        }
    }

    /// The names `code` mentions as `tools.<server>` or
    /// `tools.<server>.<tool>`, each resolved through `has(server, tool)`.
    /// A lexical scan: a mention inside a string or comment only resolves
    /// a name the script did not need, and a name it misses is looked up
    /// later.
    pub fn mentioned_in(code: &str, has: impl Fn(&str, Option<&str>) -> bool) -> ToolNames {
        let mut names = ToolNames::default();
        let mut seen = 0usize;
        // `tools.call` is the API's own; no server shadows it.
        for (server, tool) in mentions(code).filter(|(server, _)| *server != "call") {
            if seen >= MAX_MENTIONED_NAMES {
                break;
            }
            if names.knows(server, None).is_none() {
                seen += 1;
                if has(server, None) {
                    names.present.entry(server.to_string()).or_default();
                } else {
                    names.absent.insert(server.to_string());
                }
            }
            let Some(tool) = tool else { continue };
            if names.knows(server, Some(tool)).is_none() {
                seen += 1;
                if has(server, Some(tool)) {
                    if let Some(tools) = names.present.get_mut(server) {
                        tools.insert(tool.to_string());
                    }
                } else {
                    names.absent.insert(format!("{server}.{tool}"));
                }
            }
        }
        names
    }

    /// Whether `tools.<server>` (or `tools.<server>.<tool>`) exists, when
    /// that is known here; `None` means the host must be asked.
    pub fn knows(&self, server: &str, tool: Option<&str>) -> Option<bool> {
        let complete = self.complete.is_some();
        match (self.present.get(server), tool) {
            (Some(_), None) => Some(true),
            (Some(tools), Some(tool)) => {
                if tools.contains(tool) {
                    Some(true)
                } else if complete || self.absent.contains(&format!("{server}.{tool}")) {
                    Some(false)
                } else {
                    None
                }
            }
            (None, _) => (complete || self.absent.contains(server)).then_some(false),
        }
    }

    /// The names under `tools` (`server` None) or `tools.<server>`, when
    /// every name is known here (`Some(None)`: no such server).
    pub fn listing(&self, server: Option<&str>) -> Option<Option<Vec<String>>> {
        let complete = self.complete.as_ref()?;
        Some(match server {
            None => Some(complete.keys().cloned().collect()),
            Some(server) => complete.get(server).cloned(),
        })
    }
}

/// `(server, tool)` for each `tools.<server>[.<tool>]` in `code`, in order
/// (optional chaining and spaces around the dots included).
fn mentions(code: &str) -> impl Iterator<Item = (&str, Option<&str>)> {
    let bytes = code.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while let Some(found) = code[at..].find("tools") {
            let start = at + found;
            at = start + "tools".len();
            if start > 0 && is_identifier_byte(bytes[start - 1]) {
                continue;
            }
            let Some((server, after)) = member(code, at) else {
                continue;
            };
            at = after;
            let tool = member(code, after).map(|(tool, after)| {
                at = after;
                tool
            });
            return Some((server, tool));
        }
        None
    })
}

/// The identifier after `.` or `?.` at `at` (spaces allowed around the
/// dot), and where it ends.
fn member(code: &str, at: usize) -> Option<(&str, usize)> {
    let rest = &code[at..];
    let trimmed = rest.trim_start();
    let dot = trimmed
        .strip_prefix("?.")
        .or_else(|| trimmed.strip_prefix('.'))?;
    let name_start = code.len() - dot.trim_start().len();
    let length = code[name_start..]
        .bytes()
        .take_while(|&b| is_identifier_byte(b))
        .count();
    let name = &code[name_start..name_start + length];
    let first = name.bytes().next()?;
    if first.is_ascii_digit() {
        return None;
    }
    Some((name, name_start + length))
}

fn is_identifier_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(code: &str) -> Vec<(&str, Option<&str>)> {
        mentions(code).collect()
    }

    #[test]
    fn mentions_are_the_static_member_chains_under_tools() {
        assert_eq!(
            found("await tools.github.create_issue({}); tools . weather ?. get_forecast(x)"),
            [
                ("github", Some("create_issue")),
                ("weather", Some("get_forecast"))
            ]
        );
        assert_eq!(
            found("tools.call('a.b'); mytools.x.y; tools[n]"),
            [("call", None)]
        );
        assert_eq!(found("tools.$a.b_2.c"), [("$a", Some("b_2"))]);
        assert_eq!(found("tools.1x; tools.;"), []);
    }

    #[test]
    fn mentioned_names_are_resolved_once_each_and_bounded() {
        let asked = std::cell::Cell::new(0);
        let names = ToolNames::mentioned_in(
            "tools.gh.issue(); tools.gh.issue(); tools.gh.nope(); tools.hidden.x()",
            |server, tool| {
                asked.set(asked.get() + 1);
                server == "gh" && tool != Some("nope")
            },
        );
        assert_eq!(asked.get(), 4, "gh, gh.issue, gh.nope, hidden");
        assert_eq!(names.knows("gh", Some("issue")), Some(true));
        assert_eq!(names.knows("gh", Some("nope")), Some(false));
        assert_eq!(names.knows("hidden", None), Some(false));
        assert_eq!(names.knows("hidden", Some("x")), Some(false));
        assert_eq!(names.knows("other", None), None, "never mentioned: ask");
        assert_eq!(names.knows("gh", Some("other")), None);
        assert_eq!(names.listing(None), None, "not every name is known");

        let many: String = (0..1000).map(|i| format!("tools.s{i}.t();")).collect();
        let names = ToolNames::mentioned_in(&many, |_, _| true);
        let resolved = names.present.len() + names.present.values().map(|t| t.len()).sum::<usize>();
        assert!(resolved <= MAX_MENTIONED_NAMES, "{resolved}");
    }

    #[test]
    fn a_complete_table_answers_everything() {
        let names = ToolNames::complete(
            [("gh".to_string(), vec!["b".to_string(), "a".to_string()])].into(),
        );
        assert_eq!(names.knows("gh", Some("a")), Some(true));
        assert_eq!(names.knows("gh", Some("z")), Some(false));
        assert_eq!(names.knows("x", None), Some(false));
        assert_eq!(names.listing(None), Some(Some(vec!["gh".to_string()])));
        assert_eq!(
            names.listing(Some("gh")),
            Some(Some(vec!["b".to_string(), "a".to_string()]))
        );
        assert_eq!(names.listing(Some("x")), Some(None));
    }
}
