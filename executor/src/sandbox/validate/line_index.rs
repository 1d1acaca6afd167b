//! Byte offsets to the 1-based lines and columns a script's author sees. Knows
//! nothing about rules; JavaScript's line terminators are its only concern.

/// Maps byte offsets in the user's code to 1-based lines and columns. Lines end
/// at `\n`, `\r\n`, `\r`, U+2028 and U+2029, as in JavaScript.
pub(crate) struct LineIndex<'c> {
    code: &'c str,
    starts: Vec<usize>,
}

impl<'c> LineIndex<'c> {
    pub(crate) fn new(code: &'c str) -> Self {
        let mut starts = vec![0];
        let mut chars = code.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '\n' | '\u{2028}' | '\u{2029}' => starts.push(i + c.len_utf8()),
                '\r' if chars.peek().is_some_and(|&(_, next)| next == '\n') => {}
                '\r' => starts.push(i + 1),
                _ => {}
            }
        }
        Self { code, starts }
    }

    pub(crate) fn position(&self, offset: usize) -> (u32, u32) {
        let mut offset = offset.min(self.code.len());
        while !self.code.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&start| start <= offset).max(1);
        let start = self.starts[line - 1];
        let column = self.code[start..offset].chars().count() + 1;
        (saturate(line), saturate(column))
    }
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_index_handles_all_terminators() {
        let code = "a\nb\r\nc\rd\u{2028}e";
        let index = LineIndex::new(code);
        assert_eq!(index.position(0), (1, 1));
        assert_eq!(index.position(code.find('b').unwrap()), (2, 1));
        assert_eq!(index.position(code.find('c').unwrap()), (3, 1));
        assert_eq!(index.position(code.find('d').unwrap()), (4, 1));
        assert_eq!(index.position(code.find('e').unwrap()), (5, 1));
        assert_eq!(index.position(code.len() + 10), (5, 2));
    }
}
