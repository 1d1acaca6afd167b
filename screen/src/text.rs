//! The text of a tool definition, field by field, and what is invisible in
//! it: every string a model may read (name, title, description, every
//! description, title, enum value, default, example and property name of
//! the schemas, the annotations), each with a path naming where it sits.

use serde_json::Value;

use quiver_proto::ToolDef;

/// One string of a definition and where it sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// `name`, `description`, `inputSchema.properties.path.description`, ….
    pub path: String,
    /// The text as the upstream sent it.
    pub text: String,
}

/// Every string of `tool` a model may read, in a fixed order.
pub fn fields(tool: &ToolDef) -> Vec<Field> {
    let mut out = vec![Field {
        path: "name".into(),
        text: tool.name.clone(),
    }];
    if let Some(title) = &tool.title {
        out.push(Field {
            path: "title".into(),
            text: title.clone(),
        });
    }
    out.push(Field {
        path: "description".into(),
        text: tool.description.clone(),
    });
    walk(&tool.input_schema, "inputSchema", &mut out);
    if let Some(schema) = &tool.output_schema {
        walk(schema, "outputSchema", &mut out);
    }
    if let Some(annotations) = &tool.annotations {
        walk(annotations, "annotations", &mut out);
    }
    out
}

/// Every string inside `value` (object keys too: a property's name is read
/// by the model as much as its description).
fn walk(value: &Value, path: &str, out: &mut Vec<Field>) {
    match value {
        Value::String(s) if !s.is_empty() => out.push(Field {
            path: path.to_string(),
            text: s.clone(),
        }),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, &format!("{path}[{i}]"), out);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                if item.is_string() && SCHEMA_WORDS.contains(&key.as_str()) {
                    continue;
                }
                let here = format!("{path}.{key}");
                if is_user_named(path) {
                    out.push(Field {
                        path: format!("{here}#name"),
                        text: key.clone(),
                    });
                }
                walk(item, &here, out);
            }
        }
        _ => {}
    }
}

/// Schema keywords whose string values are drawn from a fixed vocabulary
/// (`"type": "object"`): nothing there for a model to read.
const SCHEMA_WORDS: [&str; 7] = [
    "type",
    "format",
    "$schema",
    "$ref",
    "$id",
    "contentEncoding",
    "contentMediaType",
];

/// Whether the keys of the object at `path` are names the server chose
/// (properties, definitions) rather than JSON Schema keywords.
fn is_user_named(path: &str) -> bool {
    ["properties", "$defs", "definitions", "patternProperties"]
        .iter()
        .any(|k| path.ends_with(&format!(".{k}")))
}

/// What kind of invisible character `c` is, if it is one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invisible {
    /// Unicode tag characters (U+E0000–U+E007F): ASCII written invisibly.
    Tag,
    /// Bidirectional overrides (U+202D, U+202E): they reverse how the text
    /// after them is shown.
    BidiOverride,
    /// Other bidirectional controls: embeddings, isolates, marks.
    Bidi,
    /// Zero-width spaces and joiners, word joiner, byte order mark, soft
    /// hyphen and other format characters that render as nothing.
    ZeroWidth,
    /// C0/C1 control characters other than tab and line breaks (an ANSI
    /// escape sequence starts with one).
    Control,
}

/// Classifies `c`.
pub fn invisible(c: char) -> Option<Invisible> {
    match c {
        '\u{E0000}'..='\u{E007F}' => Some(Invisible::Tag),
        '\u{202D}' | '\u{202E}' => Some(Invisible::BidiOverride),
        '\u{202A}'..='\u{202C}'
        | '\u{2066}'..='\u{2069}'
        | '\u{200E}'
        | '\u{200F}'
        | '\u{061C}' => Some(Invisible::Bidi),
        '\u{200B}'..='\u{200D}'
        | '\u{2060}'..='\u{2064}'
        | '\u{FEFF}'
        | '\u{00AD}'
        | '\u{180E}'
        | '\u{3164}'
        | '\u{FFA0}'
        | '\u{115F}'
        | '\u{1160}' => Some(Invisible::ZeroWidth),
        '\t' | '\n' | '\r' => None,
        c if c.is_control() => Some(Invisible::Control),
        _ => None,
    }
}

/// Whether the zero-width joiner at `chars[i]` joins two pictographs (an
/// emoji sequence such as a family), which is how it is meant to be used.
pub fn joins_emoji(chars: &[char], i: usize) -> bool {
    let pictograph = |c: Option<&char>| {
        c.is_some_and(|&c| matches!(c as u32, 0x1F000..=0x1FAFF | 0x2600..=0x27BF | 0xFE0F))
    };
    chars[i] == '\u{200D}' && i > 0 && pictograph(chars.get(i - 1)) && pictograph(chars.get(i + 1))
}

/// The emoji tag sequences that render as flags (the subdivision flags in
/// Unicode's recommended set: England, Scotland, Wales); any other tag
/// sequence after a black flag shows a plain flag and hides its letters.
const FLAG_TAGS: [&str; 3] = ["gbeng", "gbsct", "gbwls"];

/// Whether `chars[i]` belongs to one of the [`FLAG_TAGS`] sequences: a black
/// flag (U+1F3F4), tag characters, a cancel tag (U+E007F).
pub fn in_emoji_flag(chars: &[char], i: usize) -> bool {
    let is_tag = |c: char| ('\u{E0020}'..='\u{E007E}').contains(&c);
    let mut start = i;
    if chars[i] == '\u{E007F}' {
        // The cancel tag closes the tags just before it.
        start = i;
    } else if !is_tag(chars[i]) {
        return false;
    }
    while start > 0 && is_tag(chars[start - 1]) {
        start -= 1;
    }
    let mut end = start;
    while end < chars.len() && is_tag(chars[end]) {
        end += 1;
    }
    if start == 0 || chars[start - 1] != '\u{1F3F4}' || chars.get(end) != Some(&'\u{E007F}') {
        return false;
    }
    let letters: String = chars[start..end]
        .iter()
        .filter_map(|&c| char::from_u32(c as u32 - 0xE0000))
        .collect();
    FLAG_TAGS.contains(&letters.as_str())
}

/// Whether the invisible character at `chars[i]` is part of an emoji (a
/// joiner between pictographs, or a flag's tag sequence).
pub fn part_of_emoji(chars: &[char], i: usize) -> bool {
    joins_emoji(chars, i) || in_emoji_flag(chars, i)
}

/// `text` without its invisible characters (emoji joiners kept), and
/// whether anything was removed.
pub fn strip(text: &str) -> (String, bool) {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut removed = false;
    for (i, &c) in chars.iter().enumerate() {
        if invisible(c).is_some() && !part_of_emoji(&chars, i) {
            removed = true;
        } else {
            out.push(c);
        }
    }
    (out, removed)
}

/// What the model would read if it decoded tag characters: each tag
/// character U+E0020–U+E007E stands for the ASCII character 0x20–0x7E.
pub fn decode_tags(text: &str) -> String {
    text.chars()
        .filter_map(|c| match c as u32 {
            n @ 0xE0020..=0xE007E => char::from_u32(n - 0xE0000),
            _ => None,
        })
        .collect()
}

/// `text` with invisible characters written as `\u{…}`, shortened to about
/// `max` characters around its middle.
pub fn visible(text: &str, max: usize) -> String {
    let mut shown = String::new();
    for c in text.chars() {
        if invisible(c).is_some() {
            shown.push_str(&format!("\\u{{{:X}}}", c as u32));
        } else {
            shown.push(c);
        }
    }
    let count = shown.chars().count();
    if count <= max {
        return shown;
    }
    let head: String = shown.chars().take(max / 2).collect();
    let tail: String = shown.chars().skip(count - max / 2).collect();
    format!("{head} … {tail}")
}

/// Text prepared for matching: lower case, invisible characters dropped,
/// runs of white space folded to one space, full-width ASCII folded to
/// ASCII; with the position in the original text of every character kept.
pub struct Folded {
    /// The folded text.
    pub text: String,
    /// For each byte of `text`, the index of the original character it
    /// came from.
    origin: Vec<u32>,
}

impl Folded {
    /// Folds `original`.
    pub fn new(original: &str) -> Folded {
        let chars: Vec<char> = original.chars().collect();
        let mut text = String::with_capacity(original.len());
        let mut origin = Vec::with_capacity(original.len());
        let mut last_space = true;
        for (i, &c) in chars.iter().enumerate() {
            if invisible(c).is_some() {
                continue;
            }
            let c = match c as u32 {
                0xFF01..=0xFF5E => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
                _ => c,
            };
            if c.is_whitespace() {
                if last_space {
                    continue;
                }
                last_space = true;
                text.push(' ');
                origin.push(i as u32);
                continue;
            }
            last_space = false;
            for lower in c.to_lowercase() {
                let before = text.len();
                text.push(lower);
                origin.extend(std::iter::repeat_n(i as u32, text.len() - before));
            }
        }
        Folded { text, origin }
    }

    /// The original character span of the folded byte range `start..end`.
    pub fn span(&self, start: usize, end: usize) -> (u32, u32) {
        let first = self.origin.get(start).copied().unwrap_or(0);
        let last = if end == 0 {
            first
        } else {
            self.origin.get(end - 1).copied().map_or(first, |l| l + 1)
        };
        (first, last.max(first))
    }
}

/// The characters `start..end` of `text`.
pub fn chars_between(text: &str, start: u32, end: u32) -> String {
    text.chars()
        .skip(start as usize)
        .take(end.saturating_sub(start) as usize)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_readable_string_is_a_field() {
        let tool = ToolDef {
            name: "add".into(),
            title: None,
            description: "Adds.".into(),
            input_schema: serde_json::json!({
                "type": "object",
                "properties": {"sidenote": {"type": "string", "description": "Notes.",
                    "enum": ["a", "b"], "default": "c"}}
            }),
            output_schema: None,
            annotations: Some(serde_json::json!({"title": "Adder"})),
            meta: None,
        };
        let paths: Vec<String> = fields(&tool).into_iter().map(|f| f.path).collect();
        for want in [
            "name",
            "description",
            "inputSchema.properties.sidenote#name",
            "inputSchema.properties.sidenote.description",
            "inputSchema.properties.sidenote.enum[0]",
            "inputSchema.properties.sidenote.default",
            "annotations.title",
        ] {
            assert!(
                paths.iter().any(|p| p == want),
                "{want} missing from {paths:?}"
            );
        }
        assert!(!paths.iter().any(|p| p.ends_with(".type")), "{paths:?}");
    }

    #[test]
    fn stripping_keeps_emoji_joiners_and_drops_the_rest() {
        let family = "👨\u{200D}👩\u{200D}👧";
        assert_eq!(strip(family), (family.to_string(), false));
        let scotland = "\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F} regions";
        assert_eq!(strip(scotland), (scotland.to_string(), false));
        let hidden = "read\u{200B}me\u{E0041}\u{202E}";
        assert_eq!(strip(hidden), ("readme".to_string(), true));
    }

    #[test]
    fn tag_characters_decode_to_the_ascii_they_hide() {
        let hidden: String = "send keys"
            .chars()
            .map(|c| char::from_u32(c as u32 + 0xE0000).unwrap())
            .collect();
        assert_eq!(
            decode_tags(&format!("Adds two numbers.{hidden}")),
            "send keys"
        );
    }

    #[test]
    fn folded_spans_point_back_into_the_original() {
        let original = "Do  NOT\u{200B} tell the User";
        let folded = Folded::new(original);
        assert_eq!(folded.text, "do not tell the user");
        let at = folded.text.find("not tell").unwrap();
        let (start, end) = folded.span(at, at + "not tell".len());
        assert_eq!(chars_between(original, start, end), "NOT\u{200B} tell");
    }
}
