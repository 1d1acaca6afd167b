//! Captured `console.*` output of one execution, cut at the log budget. A
//! line costs what it takes in the outcome: its JSON-escaped bytes plus its
//! framing, so even an empty line is paid for.

/// What a line costs beyond its escaped text: quotes, separator and the
/// bookkeeping of one more entry.
pub(crate) const LINE_OVERHEAD: usize = 8;

/// The bytes `line` takes as a JSON string body.
fn escaped_len(line: &str) -> usize {
    line.chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if c.is_control() && (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        })
        .sum()
}

/// Lines logged by a script, at most `limit` bytes of them in total
/// (counted as [`escaped_len`] plus [`LINE_OVERHEAD`] per line).
#[derive(Debug)]
pub(crate) struct LogBuffer {
    lines: Vec<String>,
    used: usize,
    limit: usize,
    truncated: bool,
}

impl LogBuffer {
    pub(crate) fn new(limit: usize) -> Self {
        LogBuffer {
            lines: Vec::new(),
            used: 0,
            limit,
            truncated: false,
        }
    }

    /// Adds one line (cut if it does not fit); false once the budget is spent,
    /// so the script side can stop formatting values nobody will see.
    pub(crate) fn push(&mut self, line: &str) -> bool {
        if self.truncated {
            return false;
        }
        let room = self.limit - self.used;
        let cost = escaped_len(line) + LINE_OVERHEAD;
        if cost <= room {
            self.used += cost;
            self.lines.push(line.to_owned());
            return self.used < self.limit;
        }
        // Keep the part of the line that fits (bytes count at most 6 each
        // once escaped, so cutting by escaped size never overshoots).
        let mut cut = 0;
        let mut spent = LINE_OVERHEAD;
        for (at, c) in line.char_indices() {
            let step = escaped_len(&line[at..at + c.len_utf8()]);
            if spent + step > room {
                break;
            }
            spent += step;
            cut = at + c.len_utf8();
        }
        if cut > 0 {
            self.lines.push(line[..cut].to_owned());
            self.used += spent;
        }
        self.lines
            .push(format!("[logs truncated at {} bytes]", self.limit));
        self.truncated = true;
        false
    }

    pub(crate) fn truncated(&self) -> bool {
        self.truncated
    }

    pub(crate) fn take(&mut self) -> Vec<String> {
        std::mem::take(&mut self.lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_past_the_budget_are_cut_with_a_marker() {
        let mut logs = LogBuffer::new(26);
        assert!(logs.push("hello")); // 5 + 8
        assert!(!logs.push("wörld!")); // 13 left: 8 + "wörl" (5 bytes)
        assert!(!logs.push("dropped"));
        assert!(logs.truncated());
        assert_eq!(
            logs.take(),
            ["hello", "wörl", "[logs truncated at 26 bytes]"]
        );
    }

    #[test]
    fn exactly_full_is_not_truncated() {
        let mut logs = LogBuffer::new(4 + LINE_OVERHEAD);
        assert!(!logs.push("abcd"));
        assert!(!logs.truncated());
        assert!(!logs.push("e"));
        assert!(logs.truncated());
    }

    #[test]
    fn empty_lines_are_not_free() {
        let mut logs = LogBuffer::new(64 * 1024);
        let mut kept = 0;
        while logs.push("") {
            kept += 1;
        }
        assert_eq!(kept, 64 * 1024 / LINE_OVERHEAD - 1);
        assert!(logs.take().len() <= 64 * 1024 / LINE_OVERHEAD + 1);
    }

    #[test]
    fn escaped_characters_cost_what_they_take_in_json() {
        assert_eq!(escaped_len("a\"b"), 4);
        assert_eq!(escaped_len("\u{1}"), 6);
        let mut logs = LogBuffer::new(LINE_OVERHEAD + 12);
        assert!(!logs.push("\u{1}\u{1}\u{1}"));
        assert_eq!(logs.take()[0], "\u{1}\u{1}");
    }
}
