//! The nesting pre-scan: a lexer-only pass that bounds how deeply the parser
//! would recurse, run before parsing so a nesting bomb never reaches the parser.
//! It must stay cheap and never panic; it does not judge what the code does.

use super::finding::Finding;

/// A cheap lexical scan that bounds how deeply the parser will recurse, run
/// before parsing. It tracks open brackets (including template substitutions)
/// and, per bracket, the constructs the parser also recurses on without
/// brackets: prefix operators (`!!!x`, `typeof typeof x`, `new new X`),
/// right-associative chains (`a = b = c`, `a ? b : c ? …`, `a => b => …`,
/// `**`), statement heads (`if (…) if (…) …`, `else if` chains, labels).
///
/// It is a lexer without a parser, so it can be wrong about whether a `/`
/// starts a regular expression; the parse thread's stack is sized so that such
/// a mistake cannot overflow it (see [`super::PARSE_STACK_PER_BYTE`]).
pub(crate) fn scan_nesting(code: &str, max_depth: usize) -> Option<Finding> {
    let mut scan = NestingScan::new(code, max_depth);
    let excess = scan.run()?;
    let message = match excess {
        Excess::Brackets => format!(
            "the code is nested more than {max_depth} levels deep (brackets, blocks, function bodies): \
             flatten it with helper functions or intermediate variables"
        ),
        Excess::Chains => format!(
            "the code chains more than {} nested operators and statements (e.g. `!!!…`, `a = b = …`, \
             `if (…) if (…) …`, long `else if` chains): simplify it",
            max_depth.saturating_mul(2)
        ),
    };
    Some(Finding {
        offset: scan.token_start,
        rule: "too-deep",
        message,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Excess {
    Brackets,
    Chains,
}

/// Whether the previous token ends an operand (then `/` divides) or not (then
/// `/` starts a regular expression).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prev {
    Operator,
    Operand,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Boundary {
    None,
    /// After `;`: anything but `else` ends an `if … else if …` chain.
    Hard,
    /// After `}` or a line break that may end a statement: a token that can
    /// only start a statement ends every chain in the bracket.
    Soft,
}

#[derive(Debug, Clone, Copy, Default)]
struct Frame {
    /// `${` of a template literal: closing it resumes the template text.
    template: bool,
    /// `(` right after `if`/`while`/`for`/`with`: a `/` after its `)` is a regex.
    head: bool,
    /// Right-associative operators and statement heads pending in this bracket.
    chain: usize,
    /// Consecutive prefix operators waiting for their operand.
    prefix: usize,
    /// `else` keywords of one `if … else if …` chain.
    else_chain: usize,
}

impl Frame {
    fn weight(&self) -> usize {
        self.chain + self.prefix + self.else_chain
    }
}

struct NestingScan<'c> {
    text: &'c str,
    bytes: &'c [u8],
    pos: usize,
    token_start: usize,
    frames: Vec<Frame>,
    max_brackets: usize,
    max_total: usize,
    prev: Prev,
    newline: bool,
    boundary: Boundary,
    pending_head: bool,
    after_dot: bool,
}

/// How a token relates to statement boundaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Starts {
    /// Can only begin a new statement after an operand (identifier, literal).
    Statement,
    /// The `else` keyword.
    Else,
    /// Anything else.
    Other,
}

impl<'c> NestingScan<'c> {
    fn new(text: &'c str, max_depth: usize) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            token_start: 0,
            frames: vec![Frame::default()],
            max_brackets: max_depth,
            max_total: max_depth.saturating_mul(2),
            prev: Prev::Operator,
            newline: true,
            boundary: Boundary::None,
            pending_head: false,
            after_dot: false,
        }
    }

    fn peek(&self, ahead: usize) -> u8 {
        self.bytes.get(self.pos + ahead).copied().unwrap_or(0)
    }

    fn top(&mut self) -> &mut Frame {
        // The root frame is never popped.
        let last = self.frames.len() - 1;
        &mut self.frames[last]
    }

    fn check(&self) -> Option<Excess> {
        let brackets = self.frames.len() - 1;
        if brackets > self.max_brackets {
            return Some(Excess::Brackets);
        }
        let weight: usize = self.frames.iter().map(Frame::weight).sum();
        (brackets + weight > self.max_total).then_some(Excess::Chains)
    }

    fn run(&mut self) -> Option<Excess> {
        loop {
            self.skip_trivia();
            if self.pos >= self.bytes.len() {
                return None;
            }
            self.token_start = self.pos;
            if let Some(excess) = self.token() {
                return Some(excess);
            }
        }
    }

    /// Skips whitespace and comments, noting line breaks.
    fn skip_trivia(&mut self) {
        while self.pos < self.bytes.len() {
            let b = self.bytes[self.pos];
            match b {
                b'\n' | b'\r' => {
                    self.newline = true;
                    self.pos += 1;
                }
                b' ' | b'\t' | 0x0b | 0x0c => self.pos += 1,
                b'/' if self.peek(1) == b'/' => self.skip_line(),
                b'/' if self.peek(1) == b'*' => {
                    let rest = &self.text[self.pos + 2..];
                    let len = rest.find("*/").map_or(rest.len(), |end| end + 2);
                    if rest[..len].contains(['\n', '\r', '\u{2028}', '\u{2029}']) {
                        self.newline = true;
                    }
                    self.pos += 2 + len;
                }
                // HTML-like comments, as a script parser reads them.
                b'<' if self.bytes[self.pos..].starts_with(b"<!--") => self.skip_line(),
                b'-' if self.newline && self.bytes[self.pos..].starts_with(b"-->") => {
                    self.skip_line()
                }
                0x80.. => {
                    let c = self.char_at(self.pos);
                    if c == '\u{2028}' || c == '\u{2029}' {
                        self.newline = true;
                    } else if !(c.is_whitespace() || c == '\u{feff}') {
                        return;
                    }
                    self.pos += c.len_utf8();
                }
                _ => return,
            }
        }
    }

    fn skip_line(&mut self) {
        while self.pos < self.bytes.len() {
            match self.bytes[self.pos] {
                b'\n' | b'\r' => return,
                0xe2 if matches!(self.char_at(self.pos), '\u{2028}' | '\u{2029}') => return,
                _ => self.pos += 1,
            }
        }
    }

    /// The character at `pos`; `'\0'` (one byte) if `pos` is not a boundary.
    fn char_at(&self, pos: usize) -> char {
        self.text
            .get(pos..)
            .and_then(|rest| rest.chars().next())
            .unwrap_or('\0')
    }

    /// Applies line-break and statement-boundary effects before a token.
    fn begin(&mut self, starts: Starts) {
        if self.newline && self.prev == Prev::Operand && starts == Starts::Statement {
            self.boundary = Boundary::Soft;
        }
        self.newline = false;
        let boundary = std::mem::replace(&mut self.boundary, Boundary::None);
        let top = self.top();
        match (boundary, starts) {
            (_, Starts::Else) | (Boundary::None, _) => {}
            (Boundary::Hard, _) => top.else_chain = 0,
            (Boundary::Soft, Starts::Statement) => {
                top.chain = 0;
                top.prefix = 0;
                top.else_chain = 0;
            }
            (Boundary::Soft, Starts::Other) => {}
        }
    }

    /// An operand was completed: pending prefix operators are resolved.
    fn operand(&mut self) {
        self.prev = Prev::Operand;
        self.top().prefix = 0;
    }

    fn chain(&mut self) -> Option<Excess> {
        self.top().chain += 1;
        self.check()
    }

    fn prefix(&mut self) -> Option<Excess> {
        self.top().prefix += 1;
        self.check()
    }

    fn token(&mut self) -> Option<Excess> {
        let b = self.bytes[self.pos];
        let head = std::mem::take(&mut self.pending_head);
        let after_dot = std::mem::take(&mut self.after_dot);
        match b {
            b'\'' | b'"' => {
                self.begin(Starts::Statement);
                self.skip_string(b);
                self.operand();
            }
            b'`' => {
                self.begin(Starts::Other);
                self.pos += 1;
                return self.template_text();
            }
            b'/' => {
                self.begin(Starts::Other);
                if self.prev == Prev::Operator {
                    self.skip_regex();
                    self.operand();
                } else {
                    self.pos += 1;
                    self.prev = Prev::Operator;
                    if self.peek(0) == b'=' {
                        self.pos += 1;
                        return self.chain();
                    }
                }
            }
            b'0'..=b'9' => {
                self.begin(Starts::Statement);
                self.skip_number();
                self.operand();
            }
            b'.' if self.peek(1).is_ascii_digit() => {
                self.begin(Starts::Statement);
                self.skip_number();
                self.operand();
            }
            b'.' if self.peek(1) == b'.' && self.peek(2) == b'.' => {
                self.begin(Starts::Other);
                self.pos += 3;
                self.prev = Prev::Operator;
                return self.prefix();
            }
            b'.' => {
                self.begin(Starts::Other);
                self.pos += 1;
                self.prev = Prev::Operator;
                self.after_dot = true;
            }
            b'(' | b'[' | b'{' => {
                self.begin(Starts::Other);
                self.pos += 1;
                self.frames.push(Frame {
                    head: b == b'(' && head,
                    ..Frame::default()
                });
                self.prev = Prev::Operator;
                return self.check();
            }
            b')' | b']' | b'}' => {
                self.begin(Starts::Other);
                self.pos += 1;
                if self.frames.len() > 1 {
                    let frame = self.frames.pop().unwrap_or_default();
                    if frame.template {
                        return self.template_text();
                    }
                    self.operand();
                    if frame.head {
                        self.prev = Prev::Operator;
                    }
                    if b == b'}' {
                        self.boundary = Boundary::Soft;
                    }
                } else {
                    self.operand();
                }
            }
            b';' => {
                self.begin(Starts::Other);
                self.pos += 1;
                let top = self.top();
                top.chain = 0;
                top.prefix = 0;
                self.prev = Prev::Operator;
                self.boundary = Boundary::Hard;
            }
            b',' => {
                self.begin(Starts::Other);
                self.pos += 1;
                let top = self.top();
                top.chain = 0;
                top.prefix = 0;
                self.prev = Prev::Operator;
            }
            b'?' => {
                self.begin(Starts::Other);
                self.prev = Prev::Operator;
                if self.peek(1) == b'?' {
                    self.pos += 2;
                    if self.peek(0) == b'=' {
                        self.pos += 1;
                        return self.chain();
                    }
                } else if self.peek(1) == b'.' && !self.peek(2).is_ascii_digit() {
                    self.pos += 2;
                    self.after_dot = true;
                } else {
                    self.pos += 1;
                    return self.chain();
                }
            }
            b':' => {
                self.begin(Starts::Other);
                self.pos += 1;
                self.prev = Prev::Operator;
                return self.chain();
            }
            b'=' => {
                self.begin(Starts::Other);
                self.prev = Prev::Operator;
                match (self.peek(1), self.peek(2)) {
                    (b'=', b'=') => self.pos += 3,
                    (b'=', _) => self.pos += 2,
                    (b'>', _) => {
                        self.pos += 2;
                        return self.chain();
                    }
                    _ => {
                        self.pos += 1;
                        return self.chain();
                    }
                }
            }
            b'!' => {
                self.begin(Starts::Other);
                self.prev = Prev::Operator;
                if self.peek(1) == b'=' {
                    self.pos += if self.peek(2) == b'=' { 3 } else { 2 };
                } else {
                    self.pos += 1;
                    return self.prefix();
                }
            }
            b'~' => {
                self.begin(Starts::Other);
                self.pos += 1;
                self.prev = Prev::Operator;
                return self.prefix();
            }
            b'+' | b'-' => {
                let doubled = self.peek(1) == b;
                // `a\n++b` is two statements: the line break ends `a`.
                let postfix = doubled && self.prev == Prev::Operand && !self.newline;
                self.begin(if doubled && !postfix {
                    Starts::Statement
                } else {
                    Starts::Other
                });
                if postfix {
                    self.pos += 2;
                    self.prev = Prev::Operand;
                } else if doubled {
                    self.pos += 2;
                    self.prev = Prev::Operator;
                    return self.prefix();
                } else if self.peek(1) == b'=' {
                    self.pos += 2;
                    self.prev = Prev::Operator;
                    return self.chain();
                } else {
                    self.pos += 1;
                    let unary = self.prev == Prev::Operator;
                    self.prev = Prev::Operator;
                    if unary {
                        return self.prefix();
                    }
                }
            }
            b'*' => {
                self.begin(Starts::Other);
                self.prev = Prev::Operator;
                if self.peek(1) == b'*' {
                    self.pos += if self.peek(2) == b'=' { 3 } else { 2 };
                    return self.chain();
                }
                self.pos += 1;
                if self.peek(0) == b'=' {
                    self.pos += 1;
                    return self.chain();
                }
            }
            b'<' | b'>' | b'&' | b'|' | b'^' | b'%' => {
                self.begin(Starts::Other);
                self.prev = Prev::Operator;
                let mut len = 1;
                while len < 3 && self.peek(len) == b && matches!(b, b'<' | b'>' | b'&' | b'|') {
                    len += 1;
                }
                // `<<<` is not an operator; the third `<` starts the next token.
                if b == b'<' && len == 3 {
                    len = 2;
                }
                self.pos += len;
                if self.peek(0) == b'=' {
                    self.pos += 1;
                    let comparison = matches!(b, b'<' | b'>') && len == 1;
                    if !comparison {
                        return self.chain();
                    }
                }
            }
            _ if is_word_start(b) => return self.word(head, after_dot),
            _ => {
                self.begin(Starts::Other);
                self.pos += self.char_at(self.pos).len_utf8().max(1);
                self.prev = Prev::Operator;
            }
        }
        None
    }

    fn word(&mut self, head: bool, after_dot: bool) -> Option<Excess> {
        let start = self.pos;
        while self.pos < self.bytes.len() {
            let b = self.bytes[self.pos];
            if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'#') {
                self.pos += 1;
            } else if b == b'\\' {
                // `\uXXXX` / `\u{…}` escapes inside identifiers.
                self.pos += 1;
                if self.pos < self.bytes.len() {
                    self.pos += self.char_at(self.pos).len_utf8();
                }
            } else if b >= 0x80 {
                let c = self.char_at(self.pos);
                if c.is_whitespace() || c == '\u{feff}' || c == '\u{2028}' || c == '\u{2029}' {
                    break;
                }
                self.pos += c.len_utf8();
            } else {
                break;
            }
        }
        self.pos = self.pos.min(self.bytes.len());
        let word = self.text.get(start..self.pos).unwrap_or("");
        if after_dot {
            // A property name, even if spelled like a keyword.
            self.begin(Starts::Other);
            self.operand();
            return None;
        }
        let starts = match word {
            "else" => Starts::Else,
            "in" | "instanceof" | "of" => Starts::Other,
            _ => Starts::Statement,
        };
        self.begin(starts);
        match word {
            "typeof" | "void" | "delete" | "new" | "await" | "yield" => {
                if word == "await" && head {
                    // `for await (`
                    self.pending_head = true;
                }
                self.prev = Prev::Operator;
                self.prefix()
            }
            "if" | "while" | "for" | "with" => {
                self.pending_head = true;
                self.prev = Prev::Operator;
                self.chain()
            }
            "do" => {
                self.prev = Prev::Operator;
                self.chain()
            }
            "else" => {
                self.prev = Prev::Operator;
                self.top().else_chain += 1;
                self.check()
            }
            "case" | "default" => {
                let top = self.top();
                top.chain = 0;
                top.prefix = 0;
                self.prev = Prev::Operator;
                None
            }
            "return" | "throw" | "in" | "instanceof" | "of" | "extends" => {
                self.prev = Prev::Operator;
                None
            }
            _ => {
                self.operand();
                None
            }
        }
    }

    fn skip_string(&mut self, quote: u8) {
        self.pos += 1;
        while self.pos < self.bytes.len() {
            match self.bytes[self.pos] {
                b'\\' => {
                    self.pos += 1;
                    if self.bytes[self.pos..].starts_with(b"\r\n") {
                        self.pos += 2;
                    } else if self.pos < self.bytes.len() {
                        self.pos += self.char_at(self.pos).len_utf8();
                    }
                }
                b'\n' | b'\r' => return,
                b if b == quote => {
                    self.pos += 1;
                    return;
                }
                _ => self.pos += 1,
            }
        }
    }

    /// Scans template text up to the closing backtick or the next `${`.
    fn template_text(&mut self) -> Option<Excess> {
        while self.pos < self.bytes.len() {
            match self.bytes[self.pos] {
                b'\\' => self.pos += 2,
                b'`' => {
                    self.pos += 1;
                    self.operand();
                    return None;
                }
                b'$' if self.peek(1) == b'{' => {
                    self.pos += 2;
                    self.frames.push(Frame {
                        template: true,
                        ..Frame::default()
                    });
                    self.prev = Prev::Operator;
                    return self.check();
                }
                _ => self.pos += 1,
            }
        }
        self.pos = self.bytes.len();
        None
    }

    fn skip_regex(&mut self) {
        self.pos += 1;
        let mut in_class = false;
        while self.pos < self.bytes.len() {
            match self.bytes[self.pos] {
                b'\\' => {
                    self.pos += 1;
                    if self.pos < self.bytes.len() {
                        self.pos += self.char_at(self.pos).len_utf8();
                    }
                }
                b'\n' | b'\r' => return,
                0xe2 if matches!(self.char_at(self.pos), '\u{2028}' | '\u{2029}') => return,
                b'[' => {
                    in_class = true;
                    self.pos += 1;
                }
                b']' => {
                    in_class = false;
                    self.pos += 1;
                }
                b'/' if !in_class => {
                    self.pos += 1;
                    while self.pos < self.bytes.len()
                        && self.bytes[self.pos].is_ascii_alphanumeric()
                    {
                        self.pos += 1;
                    }
                    return;
                }
                _ => self.pos += 1,
            }
        }
    }

    fn skip_number(&mut self) {
        while self.pos < self.bytes.len() {
            let b = self.bytes[self.pos];
            let literal_part = b.is_ascii_alphanumeric() || b == b'_' || b == b'.';
            // The sign of a decimal exponent (`1e-3`), not of a hex digit (`0xe-1`).
            let exponent_sign = matches!(b, b'+' | b'-')
                && matches!(self.bytes[self.pos - 1], b'e' | b'E')
                && !self.bytes[self.token_start..].starts_with(b"0x")
                && !self.bytes[self.token_start..].starts_with(b"0X");
            if !(literal_part || exponent_sign) {
                break;
            }
            self.pos += 1;
        }
    }
}

fn is_word_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || matches!(b, b'_' | b'$' | b'\\' | b'#') || b >= 0x80
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;

    #[test]
    fn nesting_hidden_from_the_pre_scan_is_caught_on_the_ast() {
        // After a block, `/'/` is a regex to the parser but a division and a
        // string start to the pre-scan, which then misses the parentheses.
        // The parse thread's stack absorbs them and the AST walk rejects them.
        for n in [100, 20_000] {
            let code = format!("{{}}\n/'/; x = {}1{} //'", "(".repeat(n), ")".repeat(n));
            assert_eq!(rules(&code), ["too-deep"], "{n} parentheses");
        }
        let code = format!("{{}}\n/'/; x = {}1 //'", "[".repeat(30_000));
        assert!(!rules(&code).is_empty());
    }

    #[test]
    fn legitimate_nesting_passes() {
        let nested = format!("{}x{}", "f(".repeat(60), ")".repeat(60));
        assert_ok(&nested);
        let too = format!("{}x{}", "f(".repeat(65), ")".repeat(65));
        assert_eq!(rules(&too), ["too-deep"]);
        // Many sibling statements do not add up.
        let siblings = "if (a) { b() } else if (c) { d() } else { e() }\nx = y = 1\n".repeat(300);
        assert_ok(&siblings);
        let semicolonless = "const a = -b\nlet c = !d\nc = a ? 1 : 2\n".repeat(300);
        assert_ok(&semicolonless);
        let cases = format!("switch (x) {{ {} }}", "case 1: ".repeat(200));
        assert_ok(&cases);
    }
}
