//! Captured `console.*` output of one execution, cut at the log budget.

/// Lines logged by a script, at most `limit` bytes of them in total.
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
        if line.len() <= room {
            self.used += line.len();
            self.lines.push(line.to_owned());
            return self.used < self.limit;
        }
        let cut = line.floor_char_boundary(room);
        if cut > 0 {
            self.lines.push(line[..cut].to_owned());
        }
        self.used += cut;
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
        let mut logs = LogBuffer::new(10);
        assert!(logs.push("hello"));
        assert!(!logs.push("wörld!")); // 5 bytes fit: "wörl"
        assert!(!logs.push("dropped"));
        assert!(logs.truncated());
        assert_eq!(
            logs.take(),
            ["hello", "wörl", "[logs truncated at 10 bytes]"]
        );
    }

    #[test]
    fn exactly_full_is_not_truncated() {
        let mut logs = LogBuffer::new(4);
        assert!(!logs.push("abcd"));
        assert!(!logs.truncated());
        assert!(!logs.push("e"));
        assert!(logs.truncated());
    }
}
