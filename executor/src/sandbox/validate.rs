//! Static validation of model-written JavaScript before it reaches the sandbox.
//!
//! This module owns the parse-time rules: it rejects code that names the escape
//! hatches of a JavaScript runtime (string evaluation, the Function constructors,
//! module loading, the global object, prototype surgery, host APIs) and code too
//! large or too deeply nested to handle safely. It is one layer of defence in
//! depth: the runtime is hardened separately, and nothing here may assume it is.
//!
//! A script is the *body* of an async function, so top-level `await` and `return`
//! work. It is parsed wrapped as `(async () => {\n<code>\n})`; every position
//! reported refers to the user's own lines and columns.
//!
//! # How the rules are built
//!
//! Aliases (`const e = eval`, `const {constructor: c} = f`, `(0, eval)(…)`,
//! `g = eval` as a parameter default, …) are not tracked one by one. Instead the
//! dangerous names are forbidden wherever they appear — as identifier references,
//! as declared names, as property names in member accesses, object literals and
//! destructuring — so an alias can never be formed in the first place.
//!
//! Computed member access is the remaining way to spell a name without writing it.
//! `obj[key]` stays allowed because data-processing scripts need it (`rows[i]`,
//! `row[col]`), but keys *built from strings* (`x['con' + 'structor']`, templates
//! with substitutions, `String.fromCharCode(…)`, `[…].join('')`, …) are rejected,
//! as is any non-literal key on a function or class value, on a built-in such as
//! `Object`, or on the global object.
//!
//! # Decisions and known gaps
//!
//! - A key computed into a variable first (`const k = 'constr' + 'uctor'; f[k]`)
//!   passes this layer: proving what string a variable holds needs evaluation.
//!   The runtime layer (no string compilation, frozen intrinsics) covers it.
//! - `this` is only allowed inside class bodies, which are always strict: in a
//!   sloppy-mode plain function (including object-literal methods called
//!   unbound), `this` is the global object.
//! - Reading prototypes is allowed (`Array.prototype.slice.call(…)`), writing
//!   through them or into built-ins (`Array.prototype.x = …`, `Math.random = …`,
//!   `Object.assign(Object.prototype, …)`) is not. The reflection helpers
//!   (`getPrototypeOf`, `getOwnPropertyDescriptor(s)`, `getOwnPropertyNames`,
//!   `defineProperty`/`defineProperties`, `setPrototypeOf`) are rejected by name:
//!   they reach the Function constructor without ever naming it.
//! - Allowed on purpose: classes, generators, `async`, labels, regular
//!   expressions (ReDoS is bounded by the runtime's time limit), `new Promise`,
//!   getters and setters, `Symbol.toPrimitive` (coercion hooks only ever run
//!   script code, which is already subject to every rule here), mutating the
//!   sandbox API objects (`tools`, `stash`; the runtime freezes them), and names
//!   such as `fetch` or `process` that the sandbox simply does not provide.
//! - `caller`/`callee` are rejected as property names even on data objects:
//!   telling a data field apart from `fn.caller` needs types.
//! - HTML-like comments (`<!--`, `-->`) are rejected: scripts and modules parse
//!   them differently, and the validator must see the same code the engine runs.
//! - The engine currently runs scripts as `(async () => {"use strict";…})()`;
//!   strict mode alone already defuses sloppy `this` and `with`, and the rules
//!   for them are kept so that this layer does not depend on it.
//!
//! # Rules
//!
//! | id | rejects |
//! |----|---------|
//! | `syntax` | parse errors; code that closes the wrapper function early |
//! | `too-large` | scripts over [`ValidationLimits::max_code_bytes`] |
//! | `too-deep` | nesting over [`ValidationLimits::max_depth`] (pre-scan and AST) |
//! | `eval` | `eval` anywhere; strings passed to `setTimeout`/`setInterval` |
//! | `function-constructor` | `Function`, `AsyncFunction`, `GeneratorFunction`, `AsyncGeneratorFunction` |
//! | `constructor-chain` | `constructor` as name, key or string; non-literal keys on functions, classes, `super` |
//! | `computed-key` | computed keys built from strings |
//! | `dynamic-import`, `import-meta`, `import`, `export`, `require` | module loading |
//! | `with`, `debugger` | those statements |
//! | `proxy`, `reflect`, `webassembly`, `deno`, `shared-memory` | those globals, by any name |
//! | `global-alias`, `global-computed` | `globalThis`/`window`/`self`/`global` (only `typeof` is allowed) |
//! | `proto` | `__proto__` and the `__define…`/`__lookup…` accessors |
//! | `reflection` | `getPrototypeOf`, `setPrototypeOf`, property-descriptor helpers |
//! | `builtin-mutation`, `builtin-computed` | writes into built-ins and prototypes; non-literal keys on built-ins |
//! | `stack-trace` | `prepareStackTrace`, `captureStackTrace` |
//! | `caller` | `.caller`, `.callee` |
//! | `this` | `this` outside class bodies |
//! | `non-ascii-identifier` | any identifier or unquoted key with a non-ASCII character |
//! | `internal-name` | undeclared `__…` names (runtime internals) |
//! | `html-comment` | `<!--`, `-->` |
//! | `internal` | the validator itself failed (fail closed) |

use std::{collections::HashSet, fmt, thread};

use oxc_allocator::Allocator;
use oxc_ast::ast::*;
use oxc_ast_visit::{Visit, walk};
use oxc_parser::{ParseOptions, Parser};
use oxc_span::{GetSpan, SourceType, Span};
use oxc_syntax::{
    operator::{AssignmentOperator, BinaryOperator, UnaryOperator},
    scope::ScopeFlags,
};
use serde::Serialize;

/// Limits applied before and during validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationLimits {
    /// Largest accepted script, in bytes of UTF-8. Default 64 KiB.
    pub max_code_bytes: usize,
    /// Deepest accepted nesting of brackets, blocks, functions and expressions.
    /// Default 64.
    pub max_depth: usize,
}

impl Default for ValidationLimits {
    fn default() -> Self {
        Self {
            max_code_bytes: 64 * 1024,
            max_depth: 64,
        }
    }
}

/// Every reason a script was rejected, sorted by position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ValidationErrors {
    /// At most [`MAX_VIOLATIONS`] violations, deduplicated, in source order.
    pub errors: Vec<Violation>,
}

impl ValidationErrors {
    /// The rule ids of all violations, in order (handy in tests and logs).
    pub fn rules(&self) -> Vec<&'static str> {
        self.errors.iter().map(|v| v.rule).collect()
    }

    /// A rejection because validation itself could not complete.
    pub fn internal(message: &str) -> ValidationErrors {
        ValidationErrors {
            errors: vec![Violation {
                rule: "internal",
                message: message.to_string(),
                line: 1,
                column: 1,
            }],
        }
    }
}

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, violation) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{violation}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ValidationErrors {}

/// One rejected construct.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// Stable rule id, e.g. `eval`, `constructor-chain`, `syntax`.
    pub rule: &'static str,
    /// What was found, why it is rejected and, where useful, what to do instead.
    pub message: String,
    /// 1-based line in the user's script.
    pub line: u32,
    /// 1-based column, counted in characters.
    pub column: u32,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, col {}: {}",
            self.line, self.column, self.message
        )
    }
}

/// At most this many violations are reported.
pub const MAX_VIOLATIONS: usize = 20;

/// Checks `code` (the body of an async function) against every rule.
///
/// ```
/// use quiver_executor::sandbox::validate::{validate, ValidationLimits};
///
/// let limits = ValidationLimits::default();
/// assert!(validate("const r = await tools.call('a__b', {});\nreturn r;", &limits).is_ok());
/// let err = validate("return eval('1')", &limits).unwrap_err();
/// assert_eq!(err.errors[0].rule, "eval");
/// ```
///
/// Parsing runs on a short-lived thread whose stack is sized for the worst
/// case of the input's length, so even input that fools the nesting pre-scan
/// cannot overflow the caller's stack. Call it from blocking context (it takes
/// about a millisecond for a large script).
pub fn validate(code: &str, limits: &ValidationLimits) -> Result<(), ValidationErrors> {
    let findings = collect_findings(code, limits);
    if findings.is_empty() {
        return Ok(());
    }
    Err(ValidationErrors {
        errors: into_violations(code, findings),
    })
}

// ---------------------------------------------------------------------------
// Pipeline
// ---------------------------------------------------------------------------

const PREFIX: &str = "(async () => {\n";
const SUFFIX: &str = "\n})";

/// Parser stack per byte of input for the worst case measured (a run of `(`
/// costs ~2.9 KB of stack per byte in debug builds, ~1.6 KB in release), plus
/// a floor and a ceiling.
const PARSE_STACK_PER_BYTE: usize = 4 * 1024;
const PARSE_STACK_FLOOR: usize = 4 << 20;
const PARSE_STACK_CEILING: usize = 512 << 20;

/// The AST walk also bounds plain recursion (long operator and member chains
/// that do not count as nesting) at this multiple of `max_depth`.
const CHAIN_FACTOR: usize = 16;

const HTML_COMMENT_MESSAGE: &str = "HTML-style comments (`<!--`, `-->`) are not allowed: scripts \
                                    and modules parse them differently; use `//`";

/// A violation before its position is turned into line and column.
#[derive(Debug, Clone)]
struct Finding {
    /// Byte offset into the user's code.
    offset: usize,
    rule: &'static str,
    message: String,
}

fn collect_findings(code: &str, limits: &ValidationLimits) -> Vec<Finding> {
    if code.len() > limits.max_code_bytes {
        return vec![Finding {
            offset: 0,
            rule: "too-large",
            message: format!(
                "the script is {} bytes; the limit is {} bytes: leave data in tool results \
                 instead of pasting it into the script, or split the work",
                code.len(),
                limits.max_code_bytes
            ),
        }];
    }
    if let Some(too_deep) = scan_nesting(code, limits.max_depth) {
        return vec![too_deep];
    }
    let stack = PARSE_STACK_FLOOR
        .saturating_add(code.len().saturating_mul(PARSE_STACK_PER_BYTE))
        .min(PARSE_STACK_CEILING);
    let outcome = thread::scope(|scope| {
        let spawned = thread::Builder::new()
            .name("quiver-validate".into())
            .stack_size(stack)
            .spawn_scoped(scope, || check_ast(code, limits));
        match spawned {
            Ok(handle) => handle.join().ok(),
            Err(_) => None,
        }
    });
    // Fail closed: a validator that could not run (or panicked) rejects.
    outcome.unwrap_or_else(|| {
        vec![Finding {
            offset: 0,
            rule: "internal",
            message: "the validator could not check this script, so it was rejected; try again"
                .to_string(),
        }]
    })
}

fn into_violations(code: &str, mut findings: Vec<Finding>) -> Vec<Violation> {
    findings.sort_by(|a, b| a.offset.cmp(&b.offset).then(a.rule.cmp(b.rule)));
    findings
        .dedup_by(|later, earlier| later.offset == earlier.offset && later.rule == earlier.rule);
    findings.truncate(MAX_VIOLATIONS);
    let lines = LineIndex::new(code);
    findings
        .into_iter()
        .map(|f| {
            let (line, column) = lines.position(f.offset);
            Violation {
                rule: f.rule,
                message: f.message,
                line,
                column,
            }
        })
        .collect()
}

/// Parses the wrapped script and runs the rule visitor over it.
fn check_ast(code: &str, limits: &ValidationLimits) -> Vec<Finding> {
    let wrapped = format!("{PREFIX}{code}{SUFFIX}");
    let allocator = Allocator::default();
    // Parentheses stay in the AST (the default) so nesting through them counts.
    let options = ParseOptions::default();
    let parsed = Parser::new(&allocator, &wrapped, SourceType::script())
        .with_options(options)
        .parse();

    let to_user = |wrapped_offset: u32| -> usize {
        (wrapped_offset as usize)
            .saturating_sub(PREFIX.len())
            .min(code.len())
    };

    let mut findings = Vec::new();
    let mut syntax_errors = 0;
    for diagnostic in parsed.diagnostics.iter() {
        // `import.meta` is reported by its own rule below.
        if diagnostic.message.starts_with("Unexpected import.meta") {
            continue;
        }
        syntax_errors += 1;
        let offset = diagnostic.labels.first().map_or(0, |label| label.offset());
        let mut message = format!("syntax error: {}", diagnostic.message);
        if let Some(help) = &diagnostic.help {
            message.push_str(&format!(" ({help})"));
        }
        findings.push(Finding {
            offset: to_user(offset),
            rule: "syntax",
            message,
        });
    }
    if parsed.panicked {
        return findings;
    }

    for comment in parsed.program.comments.iter() {
        let text = comment.span.source_text(&wrapped);
        if text.starts_with("<!--") || text.starts_with("-->") {
            findings.push(Finding {
                offset: to_user(comment.span.start),
                rule: "html-comment",
                message: HTML_COMMENT_MESSAGE.to_string(),
            });
        }
    }

    let mut visitor = RuleVisitor::new(limits);
    match wrapper_body(&parsed.program, wrapped.len()) {
        Some(body) => {
            visitor.visit_directives(&body.directives);
            visitor.visit_statements(&body.statements);
        }
        None => {
            if syntax_errors == 0 {
                let offset = early_close_offset(&parsed.program);
                findings.push(Finding {
                    offset: to_user(offset),
                    rule: "syntax",
                    message: "syntax error: an unbalanced `}` closes the script's function body \
                              early; a script is the body of a function"
                        .to_string(),
                });
            }
            visitor.visit_program(&parsed.program);
        }
    }
    findings.extend(
        visitor
            .finish()
            .into_iter()
            .map(|(offset, rule, message)| Finding {
                offset: to_user(offset),
                rule,
                message,
            }),
    );
    findings
}

/// The body of the wrapper function if the program is exactly the wrapper, i.e.
/// the script did not close the function early and add code after it.
fn wrapper_body<'p, 'a>(
    program: &'p Program<'a>,
    wrapped_len: usize,
) -> Option<&'p FunctionBody<'a>> {
    let [Statement::ExpressionStatement(statement)] = program.body.as_slice() else {
        return None;
    };
    let Expression::ArrowFunctionExpression(arrow) = statement.expression.without_parentheses()
    else {
        return None;
    };
    let expected = Span::new(1, u32::try_from(wrapped_len.saturating_sub(1)).ok()?);
    if !arrow.r#async || arrow.span != expected || !arrow.params.items.is_empty() {
        return None;
    }
    match &arrow.body {
        ArrowFunctionBody::FunctionBody(body) => Some(body),
        _ => None,
    }
}

/// Where the wrapper function was closed early, for the error position.
fn early_close_offset(program: &Program<'_>) -> u32 {
    if let Some(Statement::ExpressionStatement(statement)) = program.body.first()
        && let Expression::ArrowFunctionExpression(arrow) =
            statement.expression.without_parentheses()
    {
        return arrow.span.end.saturating_sub(1);
    }
    program.body.first().map_or(0, |s| s.span().start)
}

/// Maps byte offsets in the user's code to 1-based lines and columns. Lines end
/// at `\n`, `\r\n`, `\r`, U+2028 and U+2029, as in JavaScript.
struct LineIndex<'c> {
    code: &'c str,
    starts: Vec<usize>,
}

impl<'c> LineIndex<'c> {
    fn new(code: &'c str) -> Self {
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

    fn position(&self, offset: usize) -> (u32, u32) {
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

// ---------------------------------------------------------------------------
// Nesting pre-scan
// ---------------------------------------------------------------------------

/// A cheap lexical scan that bounds how deeply the parser will recurse, run
/// before parsing. It tracks open brackets (including template substitutions)
/// and, per bracket, the constructs the parser also recurses on without
/// brackets: prefix operators (`!!!x`, `typeof typeof x`, `new new X`),
/// right-associative chains (`a = b = c`, `a ? b : c ? …`, `a => b => …`,
/// `**`), statement heads (`if (…) if (…) …`, `else if` chains, labels).
///
/// It is a lexer without a parser, so it can be wrong about whether a `/`
/// starts a regular expression; the parse thread's stack is sized so that such
/// a mistake cannot overflow it (see [`PARSE_STACK_PER_BYTE`]).
fn scan_nesting(code: &str, max_depth: usize) -> Option<Finding> {
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

// ---------------------------------------------------------------------------
// Rule tables
// ---------------------------------------------------------------------------

/// The name is blocked as an identifier reference.
const REF: u8 = 1;
/// …as a declared name (variable, parameter, function, class, catch binding).
const BIND: u8 = 2;
/// …as a property name: member access, object literal key, destructuring key,
/// class member key.
const PROP: u8 = 4;
/// …as the exact value of a string literal (it would work as a computed key).
const STR: u8 = 8;

struct NameRule {
    name: &'static str,
    rule: &'static str,
    uses: u8,
    why: &'static str,
}

const fn blocked(name: &'static str, rule: &'static str, uses: u8, why: &'static str) -> NameRule {
    NameRule {
        name,
        rule,
        uses,
        why,
    }
}

const WHY_EVAL: &str = "scripts cannot evaluate strings as code";
const WHY_FUNCTION: &str = "the Function constructors evaluate strings as code; write ordinary \
                            functions (and test for them with `typeof x === \"function\"`)";
const WHY_REQUIRE: &str = "there is no module system in the sandbox; call tools through `tools`";
const WHY_PROXY: &str = "proxies can intercept and impersonate the sandbox's own objects";
const WHY_REFLECT: &str = "reflection reaches internals that ordinary property access cannot; use \
                           ordinary property access";
const WHY_WASM: &str = "WebAssembly is not available to scripts";
const WHY_DENO: &str = "the host runtime's API is not available to scripts";
const WHY_SAB: &str = "shared memory enables timing attacks; use `ArrayBuffer`";
const WHY_ATOMICS: &str = "atomics enable timing attacks and blocking waits";
const WHY_GLOBAL: &str = "the global object reaches every name these rules block; use the globals \
                          you need (`JSON`, `Math`, …) by name";
const WHY_CONSTRUCTOR: &str = "it leads from any value to the Function constructor, which \
                               evaluates strings as code; to check a type use `typeof`, \
                               `Array.isArray` or `instanceof`";
const WHY_PROTO: &str = "it reads and rewrites prototypes that the whole sandbox shares; use \
                         classes and plain objects";
const WHY_STACK: &str = "V8 stack-trace hooks expose the functions on the call stack";
const WHY_CALLER: &str = "`caller`/`callee` expose functions further up the call stack; to read \
                          a data field with that name use `Object.entries()`";
const WHY_REFLECTION: &str = "prototype and property-descriptor reflection reaches or rewrites \
                              hidden internals such as the Function constructor without naming \
                              them; use `Object.keys`/`Object.entries`";

/// Short names for the `uses` masks, to keep the table readable.
const ANY: u8 = REF | BIND | PROP;
const ANY_STR: u8 = REF | BIND | PROP | STR;

const NAME_RULES: &[NameRule] = &[
    blocked("eval", "eval", ANY, WHY_EVAL),
    blocked("Function", "function-constructor", ANY, WHY_FUNCTION),
    blocked("AsyncFunction", "function-constructor", ANY, WHY_FUNCTION),
    blocked(
        "GeneratorFunction",
        "function-constructor",
        ANY,
        WHY_FUNCTION,
    ),
    blocked(
        "AsyncGeneratorFunction",
        "function-constructor",
        ANY,
        WHY_FUNCTION,
    ),
    blocked("require", "require", ANY, WHY_REQUIRE),
    blocked("Proxy", "proxy", ANY, WHY_PROXY),
    blocked("Reflect", "reflect", ANY, WHY_REFLECT),
    blocked("WebAssembly", "webassembly", ANY, WHY_WASM),
    blocked("Deno", "deno", ANY, WHY_DENO),
    blocked("SharedArrayBuffer", "shared-memory", ANY, WHY_SAB),
    blocked("Atomics", "shared-memory", ANY, WHY_ATOMICS),
    blocked("globalThis", "global-alias", ANY, WHY_GLOBAL),
    blocked("window", "global-alias", REF | BIND, WHY_GLOBAL),
    blocked("self", "global-alias", REF | BIND, WHY_GLOBAL),
    blocked("global", "global-alias", REF | BIND, WHY_GLOBAL),
    blocked("constructor", "constructor-chain", ANY_STR, WHY_CONSTRUCTOR),
    blocked("__proto__", "proto", ANY_STR, WHY_PROTO),
    blocked("__defineGetter__", "proto", ANY_STR, WHY_PROTO),
    blocked("__defineSetter__", "proto", ANY_STR, WHY_PROTO),
    blocked("__lookupGetter__", "proto", ANY_STR, WHY_PROTO),
    blocked("__lookupSetter__", "proto", ANY_STR, WHY_PROTO),
    blocked(
        "prepareStackTrace",
        "stack-trace",
        REF | PROP | STR,
        WHY_STACK,
    ),
    blocked(
        "captureStackTrace",
        "stack-trace",
        REF | PROP | STR,
        WHY_STACK,
    ),
    blocked("caller", "caller", PROP, WHY_CALLER),
    blocked("callee", "caller", PROP, WHY_CALLER),
    blocked("getPrototypeOf", "reflection", PROP, WHY_REFLECTION),
    blocked("setPrototypeOf", "reflection", PROP, WHY_REFLECTION),
    blocked(
        "getOwnPropertyDescriptor",
        "reflection",
        PROP,
        WHY_REFLECTION,
    ),
    blocked(
        "getOwnPropertyDescriptors",
        "reflection",
        PROP,
        WHY_REFLECTION,
    ),
    blocked("getOwnPropertyNames", "reflection", PROP, WHY_REFLECTION),
    blocked("defineProperty", "reflection", PROP, WHY_REFLECTION),
    blocked("defineProperties", "reflection", PROP, WHY_REFLECTION),
];

fn name_rule(name: &str, use_: u8) -> Option<&'static NameRule> {
    NAME_RULES
        .iter()
        .find(|r| r.uses & use_ != 0 && r.name == name)
}

/// Names that denote the global object.
const GLOBAL_OBJECTS: &[&str] = &["globalThis", "window", "self", "global"];

/// Standard globals other code in the sandbox relies on: writing into them is
/// rejected, and so is computed access on them with a non-literal key.
const BUILTINS: &[&str] = &[
    "Object",
    "Array",
    "String",
    "Number",
    "Boolean",
    "Symbol",
    "BigInt",
    "Math",
    "JSON",
    "Date",
    "RegExp",
    "Promise",
    "Error",
    "TypeError",
    "RangeError",
    "SyntaxError",
    "ReferenceError",
    "EvalError",
    "URIError",
    "AggregateError",
    "Map",
    "Set",
    "WeakMap",
    "WeakSet",
    "WeakRef",
    "FinalizationRegistry",
    "ArrayBuffer",
    "DataView",
    "Int8Array",
    "Uint8Array",
    "Uint8ClampedArray",
    "Int16Array",
    "Uint16Array",
    "Int32Array",
    "Uint32Array",
    "Float32Array",
    "Float64Array",
    "BigInt64Array",
    "BigUint64Array",
    "Intl",
    "Iterator",
    "console",
    "parseInt",
    "parseFloat",
    "isNaN",
    "isFinite",
    "encodeURI",
    "encodeURIComponent",
    "decodeURI",
    "decodeURIComponent",
    "structuredClone",
    "queueMicrotask",
    "setTimeout",
    "setInterval",
    "clearTimeout",
    "clearInterval",
    "TextEncoder",
    "TextDecoder",
    "URL",
    "URLSearchParams",
    "atob",
    "btoa",
];

/// Calls whose result is a string assembled from pieces: as computed keys they
/// spell names the rules block.
const STRING_BUILDER_FUNCTIONS: &[&str] = &[
    "String",
    "atob",
    "btoa",
    "unescape",
    "escape",
    "decodeURI",
    "decodeURIComponent",
];
const STRING_BUILDER_METHODS: &[&str] = &[
    "fromCharCode",
    "fromCodePoint",
    "raw",
    "join",
    "concat",
    "repeat",
    "replace",
    "replaceAll",
    "padStart",
    "padEnd",
    "reverse",
];

/// Functions that evaluate a string first argument as code.
const STRING_TIMERS: &[&str] = &["setTimeout", "setInterval", "setImmediate"];

fn blocked_name_message(name: &str, use_: u8, why: &str) -> String {
    match use_ {
        BIND => {
            format!("`{name}` cannot be declared: it is a blocked name ({why}); pick another name")
        }
        STR => format!(
            "the string \"{name}\" is not allowed: as a computed key it reaches `{name}` ({why})"
        ),
        PROP if !why.contains("Object.entries") => format!(
            "`{name}` is not allowed: {why} (to read a data field with this name, iterate \
             `Object.entries()`)"
        ),
        _ => format!("`{name}` is not allowed: {why}"),
    }
}

// ---------------------------------------------------------------------------
// AST rules
// ---------------------------------------------------------------------------

/// Walks the AST once, recording violations by (wrapped) byte offset.
struct RuleVisitor<'a> {
    max_depth: usize,
    max_chain: usize,
    /// Nesting as reported to users: compound statements, functions, classes,
    /// patterns and expressions, except the continuation of left-associative
    /// chains (`a + b + c`, `a.b.c()`).
    depth: usize,
    /// Plain recursion depth over statements and expressions.
    recursion: usize,
    /// The next expression continues a chain and does not nest.
    flat_next: bool,
    too_deep: bool,
    /// Whether `this` is allowed in the innermost non-arrow function.
    this_allowed: Vec<bool>,
    /// The next function visited is a class method.
    method_next: bool,
    findings: Vec<(u32, &'static str, String)>,
    /// Names bound to function or class values anywhere in the script.
    function_names: HashSet<&'a str>,
    /// Every declared name.
    declared: HashSet<&'a str>,
    /// `name[<non-literal>]` accesses, checked against `function_names` at the end.
    computed_on_names: Vec<(&'a str, u32)>,
    /// References to `__…` names, checked against `declared` at the end.
    dunder_refs: Vec<(&'a str, u32)>,
}

impl<'a> RuleVisitor<'a> {
    fn new(limits: &ValidationLimits) -> Self {
        Self {
            max_depth: limits.max_depth,
            max_chain: limits
                .max_depth
                .saturating_mul(CHAIN_FACTOR)
                .max(CHAIN_FACTOR),
            depth: 0,
            recursion: 0,
            flat_next: false,
            too_deep: false,
            this_allowed: vec![false],
            method_next: false,
            findings: Vec::new(),
            function_names: HashSet::new(),
            declared: HashSet::new(),
            computed_on_names: Vec::new(),
            dunder_refs: Vec::new(),
        }
    }

    fn finish(mut self) -> Vec<(u32, &'static str, String)> {
        for (name, offset) in std::mem::take(&mut self.computed_on_names) {
            if self.function_names.contains(name) {
                self.report(
                    offset,
                    "constructor-chain",
                    format!(
                        "computed property access on the function or class `{name}` can reach its \
                         `constructor`: use a named property"
                    ),
                );
            }
        }
        for (name, offset) in std::mem::take(&mut self.dunder_refs) {
            if !self.declared.contains(name) {
                self.report(
                    offset,
                    "internal-name",
                    format!(
                        "`{name}` is not allowed: names starting with `__` are reserved for the \
                         sandbox runtime (declare it in your script if it is yours)"
                    ),
                );
            }
        }
        self.findings
    }

    fn report(&mut self, offset: u32, rule: &'static str, message: String) {
        self.findings.push((offset, rule, message));
    }

    /// Enters a node; `false` if it is too deep to visit.
    fn enter(&mut self, nests: bool, span: Span) -> bool {
        let depth = self.depth + usize::from(nests);
        let recursion = self.recursion + 1;
        if depth > self.max_depth || recursion > self.max_chain {
            if !self.too_deep {
                self.too_deep = true;
                let message = if depth > self.max_depth {
                    format!(
                        "the code is nested more than {} levels deep: flatten it with helper \
                         functions or intermediate variables",
                        self.max_depth
                    )
                } else {
                    format!(
                        "an expression chains more than {} operators, calls or member accesses: \
                         split it into several statements",
                        self.max_chain
                    )
                };
                self.report(span.start, "too-deep", message);
            }
            return false;
        }
        self.depth = depth;
        self.recursion = recursion;
        true
    }

    fn leave(&mut self, nests: bool) {
        self.depth -= usize::from(nests);
        self.recursion -= 1;
    }

    fn check_identifier(&mut self, name: &str, span: Span) {
        if !name.is_ascii() {
            self.report(
                span.start,
                "non-ascii-identifier",
                format!(
                    "identifier `{name}` contains non-ASCII characters, which can hide look-alike \
                     names: use ASCII names, and quote non-ASCII property keys (`{{\"{name}\": 1}}`, \
                     `obj[\"{name}\"]`); non-ASCII text is fine in strings and comments"
                ),
            );
        }
    }

    fn check_name(&mut self, name: &str, use_: u8, span: Span) {
        if let Some(rule) = name_rule(name, use_) {
            self.report(
                span.start,
                rule.rule,
                blocked_name_message(name, use_, rule.why),
            );
        }
    }

    fn check_literal_key(&mut self, key: &Expression<'a>) {
        if let Some((span, name)) = literal_key(key) {
            self.check_name(name, PROP, span);
        }
    }

    /// Rules for a computed key that reads a property (`x[key]`, `{[key]: v} = x`).
    fn check_computed_key(&mut self, key: &Expression<'a>) {
        if key_is_built_from_strings(key) {
            self.report(
                key.span().start,
                "computed-key",
                "property names built from strings (concatenation, templates with substitutions, \
                 `String.fromCharCode`, `join`, …) are not allowed as computed keys: that is how \
                 blocked names get smuggled in; use a literal name, a plain variable, or \
                 `Object.entries()`"
                    .to_string(),
            );
        }
    }

    /// Rules for writing through a member expression.
    fn check_member_write(&mut self, member: &MemberExpression<'a>) {
        let mut through_prototype = false;
        let mut root = None;
        let mut current = member;
        loop {
            if member_name(current) == Some("prototype") {
                through_prototype = true;
            }
            match current.object().without_parentheses() {
                Expression::Identifier(id) => {
                    root = Some(id.name.as_str());
                    break;
                }
                object => match object.as_member_expression() {
                    Some(inner) => current = inner,
                    None => break,
                },
            }
        }
        let builtin = root.filter(|name| BUILTINS.contains(name));
        let target = match (builtin, root, through_prototype) {
            (Some(name), _, true) | (None, Some(name), true) => format!("`{name}.prototype`"),
            (Some(name), _, false) => format!("built-in `{name}`"),
            (None, None, true) => "a `.prototype`".to_string(),
            (None, _, false) => return,
        };
        self.report(
            member.span().start,
            "builtin-mutation",
            format!(
                "modifying {target} is not allowed: the sandbox and other code rely on built-ins and \
                 prototypes; write a helper function or a class instead"
            ),
        );
    }

    fn check_call(&mut self, call: &CallExpression<'a>) {
        let callee = value_of(&call.callee);
        let callee_name = match callee {
            Expression::Identifier(id) => Some(id.name.as_str()),
            Expression::StaticMemberExpression(member) => Some(member.property.name.as_str()),
            _ => None,
        };
        let first = call.arguments.first().and_then(Argument::as_expression);
        if let (Some(name), Some(first)) = (callee_name, first)
            && STRING_TIMERS.contains(&name)
            && is_string_valued(first)
        {
            self.report(
                first.span().start,
                "eval",
                format!(
                    "passing a string to `{name}` evaluates it as code, and scripts cannot evaluate \
                     strings as code: pass a function"
                ),
            );
        }
        if let Expression::StaticMemberExpression(member) = callee
            && member.object.without_parentheses().is_specific_id("Object")
            && member.property.name == "assign"
            && let Some(target) = first
            && let Some(described) = describe_shared_target(target)
        {
            self.report(
                target.span().start,
                "builtin-mutation",
                format!(
                    "`Object.assign` into {described} is not allowed: the sandbox and other code rely \
                     on built-ins and prototypes; copy into a new object (`{{...a, ...b}}`) instead"
                ),
            );
        }
    }

    /// Rules for `object[key]` that depend on what the object is.
    fn check_computed_object(&mut self, object: &Expression<'a>, key: &Expression<'a>) -> bool {
        let literal = literal_key(key).is_some() || is_number_literal(key);
        let object = value_of(object);
        match object {
            Expression::Identifier(id) if GLOBAL_OBJECTS.contains(&id.name.as_str()) => {
                self.report(
                    id.span.start,
                    "global-computed",
                    format!(
                        "computed access on the global object `{}` is not allowed: it reaches every \
                         blocked global by name; use the globals you need (`JSON`, `Math`, …) directly",
                        id.name
                    ),
                );
                return false;
            }
            _ if literal => {}
            Expression::FunctionExpression(_)
            | Expression::ArrowFunctionExpression(_)
            | Expression::ClassExpression(_)
            | Expression::Super(_) => {
                self.report(
                    key.span().start,
                    "constructor-chain",
                    "computed property access on a function, class or `super` can reach its \
                     `constructor`: use a named property"
                        .to_string(),
                );
            }
            _ => {
                if let Some(root) = builtin_root(object) {
                    self.report(
                        key.span().start,
                        "builtin-computed",
                        format!(
                            "computed property access on built-in `{root}` with a non-literal key is \
                             not allowed: it can reach internals such as its constructor; use a named \
                             property"
                        ),
                    );
                } else if let Expression::Identifier(id) = object {
                    self.computed_on_names
                        .push((id.name.as_str(), key.span().start));
                }
            }
        }
        true
    }

    fn record_function_binding(&mut self, name: &'a str, value: &Expression<'a>) {
        if matches!(
            value.without_parentheses(),
            Expression::FunctionExpression(_)
                | Expression::ArrowFunctionExpression(_)
                | Expression::ClassExpression(_)
        ) {
            self.function_names.insert(name);
        }
    }
}

impl<'a> Visit<'a> for RuleVisitor<'a> {
    fn visit_statement(&mut self, it: &Statement<'a>) {
        let nests = matches!(
            it,
            Statement::IfStatement(_)
                | Statement::ForStatement(_)
                | Statement::ForInStatement(_)
                | Statement::ForOfStatement(_)
                | Statement::WhileStatement(_)
                | Statement::DoWhileStatement(_)
                | Statement::TryStatement(_)
                | Statement::SwitchStatement(_)
                | Statement::LabeledStatement(_)
                | Statement::WithStatement(_)
        );
        if !self.enter(nests, it.span()) {
            return;
        }
        match it {
            Statement::WithStatement(with) => self.report(
                with.span.start,
                "with",
                "`with` is not allowed: it makes every name lookup depend on an object's contents; \
                 use the object's properties directly"
                    .to_string(),
            ),
            Statement::DebuggerStatement(debugger) => self.report(
                debugger.span.start,
                "debugger",
                "`debugger` is not allowed: no debugger is attached to the sandbox; use \
                 `console.log`"
                    .to_string(),
            ),
            Statement::ImportDeclaration(import) => self.report(
                import.span.start,
                "import",
                "static `import` is not allowed: scripts cannot load modules; call tools through \
                 `tools`"
                    .to_string(),
            ),
            Statement::ExportAllDeclaration(_)
            | Statement::ExportDefaultDeclaration(_)
            | Statement::ExportDeclaration(_)
            | Statement::ExportNamedDeclaration(_)
            | Statement::ExportFromDeclaration(_) => self.report(
                it.span().start,
                "export",
                "`export` is not allowed: a script is the body of a function; `return` its result \
                 instead"
                    .to_string(),
            ),
            _ => {}
        }
        walk::walk_statement(self, it);
        self.leave(nests);
    }

    fn visit_expression(&mut self, it: &Expression<'a>) {
        let flat = std::mem::take(&mut self.flat_next);
        // Functions and classes count in their own visit methods.
        let nests = !flat
            && !matches!(
                it,
                Expression::BooleanLiteral(_)
                    | Expression::NullLiteral(_)
                    | Expression::NumericLiteral(_)
                    | Expression::BigIntLiteral(_)
                    | Expression::RegExpLiteral(_)
                    | Expression::StringLiteral(_)
                    | Expression::Identifier(_)
                    | Expression::ThisExpression(_)
                    | Expression::Super(_)
                    | Expression::FunctionExpression(_)
                    | Expression::ArrowFunctionExpression(_)
                    | Expression::ClassExpression(_)
            );
        if !self.enter(nests, it.span()) {
            return;
        }
        walk::walk_expression(self, it);
        self.leave(nests);
    }

    fn visit_binding_pattern(&mut self, it: &BindingPattern<'a>) {
        let nests = matches!(
            it,
            BindingPattern::ObjectPattern(_) | BindingPattern::ArrayPattern(_)
        );
        if !self.enter(nests, it.span()) {
            return;
        }
        walk::walk_binding_pattern(self, it);
        self.leave(nests);
    }

    fn visit_assignment_target_pattern(&mut self, it: &AssignmentTargetPattern<'a>) {
        if !self.enter(true, it.span()) {
            return;
        }
        walk::walk_assignment_target_pattern(self, it);
        self.leave(true);
    }

    fn visit_function(&mut self, it: &Function<'a>, flags: ScopeFlags) {
        let is_method = std::mem::take(&mut self.method_next);
        if let Some(id) = &it.id {
            self.function_names.insert(id.name.as_str());
        }
        if !self.enter(true, it.span) {
            return;
        }
        self.this_allowed.push(is_method);
        walk::walk_function(self, it, flags);
        self.this_allowed.pop();
        self.leave(true);
    }

    fn visit_arrow_function_expression(&mut self, it: &ArrowFunctionExpression<'a>) {
        if !self.enter(true, it.span) {
            return;
        }
        walk::walk_arrow_function_expression(self, it);
        self.leave(true);
    }

    fn visit_class(&mut self, it: &Class<'a>) {
        if let Some(id) = &it.id {
            self.function_names.insert(id.name.as_str());
        }
        if !self.enter(true, it.span) {
            return;
        }
        walk::walk_class(self, it);
        self.leave(true);
    }

    fn visit_method_definition(&mut self, it: &MethodDefinition<'a>) {
        self.visit_decorators(&it.decorators);
        // A class's own `constructor() {}` is fine; any other member named
        // `constructor` (static method, computed key) is not.
        if it.kind != MethodDefinitionKind::Constructor {
            self.visit_property_key(&it.key);
        }
        let flags = match it.kind {
            MethodDefinitionKind::Get => ScopeFlags::Function | ScopeFlags::GetAccessor,
            MethodDefinitionKind::Set => ScopeFlags::Function | ScopeFlags::SetAccessor,
            MethodDefinitionKind::Constructor => ScopeFlags::Function | ScopeFlags::Constructor,
            MethodDefinitionKind::Method => ScopeFlags::Function,
        };
        self.method_next = true;
        self.visit_function(&it.value, flags);
        self.method_next = false;
    }

    fn visit_property_definition(&mut self, it: &PropertyDefinition<'a>) {
        self.visit_decorators(&it.decorators);
        self.visit_property_key(&it.key);
        if let Some(value) = &it.value {
            self.this_allowed.push(true);
            self.visit_expression(value);
            self.this_allowed.pop();
        }
    }

    fn visit_accessor_property(&mut self, it: &AccessorProperty<'a>) {
        self.visit_decorators(&it.decorators);
        self.visit_property_key(&it.key);
        if let Some(value) = &it.value {
            self.this_allowed.push(true);
            self.visit_expression(value);
            self.this_allowed.pop();
        }
    }

    fn visit_static_block(&mut self, it: &StaticBlock<'a>) {
        self.this_allowed.push(true);
        walk::walk_static_block(self, it);
        self.this_allowed.pop();
    }

    fn visit_this_expression(&mut self, it: &ThisExpression) {
        if !self.this_allowed.last().copied().unwrap_or(false) {
            self.report(
                it.span.start,
                "this",
                "`this` outside a class body is not allowed: in a plain function it can be the \
                 global object; use a class, or pass the object as a parameter"
                    .to_string(),
            );
        }
    }

    fn visit_identifier_reference(&mut self, it: &IdentifierReference<'a>) {
        let name = it.name.as_str();
        self.check_identifier(name, it.span);
        self.check_name(name, REF, it.span);
        if name.starts_with("__") {
            self.dunder_refs.push((name, it.span.start));
        }
    }

    fn visit_binding_identifier(&mut self, it: &BindingIdentifier<'a>) {
        let name = it.name.as_str();
        self.declared.insert(name);
        self.check_identifier(name, it.span);
        self.check_name(name, BIND, it.span);
    }

    fn visit_identifier_name(&mut self, it: &IdentifierName<'a>) {
        self.check_identifier(it.name.as_str(), it.span);
        self.check_name(it.name.as_str(), PROP, it.span);
    }

    fn visit_label_identifier(&mut self, it: &LabelIdentifier<'a>) {
        self.check_identifier(it.name.as_str(), it.span);
    }

    fn visit_private_identifier(&mut self, it: &PrivateIdentifier<'a>) {
        self.check_identifier(it.name.as_str(), it.span);
    }

    fn visit_string_literal(&mut self, it: &StringLiteral<'a>) {
        self.check_name(it.value.as_str(), STR, it.span);
    }

    fn visit_template_literal(&mut self, it: &TemplateLiteral<'a>) {
        if let Some(text) = it.single_quasi() {
            self.check_name(text.as_str(), STR, it.span);
        }
        walk::walk_template_literal(self, it);
    }

    fn visit_property_key(&mut self, it: &PropertyKey<'a>) {
        if let Some(key) = it.as_expression() {
            self.check_literal_key(key);
        }
        walk::walk_property_key(self, it);
    }

    fn visit_static_member_expression(&mut self, it: &StaticMemberExpression<'a>) {
        self.flat_next = true;
        self.visit_expression(&it.object);
        self.flat_next = false;
        self.visit_identifier_name(&it.property);
    }

    fn visit_computed_member_expression(&mut self, it: &ComputedMemberExpression<'a>) {
        if self.check_computed_object(&it.object, &it.expression) {
            self.flat_next = true;
            self.visit_expression(&it.object);
            self.flat_next = false;
        }
        self.check_literal_key(&it.expression);
        self.check_computed_key(&it.expression);
        self.visit_expression(&it.expression);
    }

    fn visit_private_field_expression(&mut self, it: &PrivateFieldExpression<'a>) {
        self.flat_next = true;
        self.visit_expression(&it.object);
        self.flat_next = false;
        self.visit_private_identifier(&it.field);
    }

    fn visit_call_expression(&mut self, it: &CallExpression<'a>) {
        self.check_call(it);
        self.flat_next = true;
        self.visit_expression(&it.callee);
        self.flat_next = false;
        self.visit_arguments(&it.arguments);
    }

    fn visit_tagged_template_expression(&mut self, it: &TaggedTemplateExpression<'a>) {
        self.flat_next = true;
        self.visit_expression(&it.tag);
        self.flat_next = false;
        self.visit_template_literal(&it.quasi);
    }

    fn visit_binary_expression(&mut self, it: &BinaryExpression<'a>) {
        self.flat_next = true;
        self.visit_expression(&it.left);
        self.flat_next = false;
        self.visit_expression(&it.right);
    }

    fn visit_logical_expression(&mut self, it: &LogicalExpression<'a>) {
        self.flat_next = true;
        self.visit_expression(&it.left);
        self.flat_next = false;
        self.visit_expression(&it.right);
    }

    fn visit_unary_expression(&mut self, it: &UnaryExpression<'a>) {
        match (&it.operator, it.argument.without_parentheses()) {
            // `typeof window` only ever yields a string.
            (UnaryOperator::Typeof, Expression::Identifier(id))
                if GLOBAL_OBJECTS.contains(&id.name.as_str()) =>
            {
                return;
            }
            (UnaryOperator::Delete, argument) => {
                if let Some(member) = argument.as_member_expression() {
                    self.check_member_write(member);
                }
            }
            _ => {}
        }
        walk::walk_unary_expression(self, it);
    }

    fn visit_simple_assignment_target(&mut self, it: &SimpleAssignmentTarget<'a>) {
        if let Some(member) = it.as_member_expression() {
            self.check_member_write(member);
        } else if let SimpleAssignmentTarget::AssignmentTargetIdentifier(id) = it
            && BUILTINS.contains(&id.name.as_str())
        {
            self.report(
                id.span.start,
                "builtin-mutation",
                format!(
                    "reassigning built-in `{}` is not allowed: the sandbox and other code rely on it; \
                     use a variable with another name",
                    id.name
                ),
            );
        }
        walk::walk_simple_assignment_target(self, it);
    }

    fn visit_assignment_expression(&mut self, it: &AssignmentExpression<'a>) {
        if it.operator == AssignmentOperator::Assign
            && let AssignmentTarget::AssignmentTargetIdentifier(id) = &it.left
        {
            self.record_function_binding(id.name.as_str(), &it.right);
        }
        walk::walk_assignment_expression(self, it);
    }

    fn visit_variable_declarator(&mut self, it: &VariableDeclarator<'a>) {
        if let (BindingPattern::BindingIdentifier(id), Some(init)) = (&it.id, &it.init) {
            self.record_function_binding(id.name.as_str(), init);
        }
        walk::walk_variable_declarator(self, it);
    }

    fn visit_binding_property(&mut self, it: &BindingProperty<'a>) {
        if it.computed
            && let Some(key) = it.key.as_expression()
        {
            self.check_computed_key(key);
        }
        walk::walk_binding_property(self, it);
    }

    fn visit_assignment_target_property_property(
        &mut self,
        it: &AssignmentTargetPropertyProperty<'a>,
    ) {
        if it.computed
            && let Some(key) = it.name.as_expression()
        {
            self.check_computed_key(key);
        }
        walk::walk_assignment_target_property_property(self, it);
    }

    fn visit_import_expression(&mut self, it: &ImportExpression<'a>) {
        self.report(
            it.span.start,
            "dynamic-import",
            "`import()` is not allowed: scripts cannot load modules; call tools through `tools`"
                .to_string(),
        );
        walk::walk_import_expression(self, it);
    }

    fn visit_import_meta(&mut self, it: &ImportMeta) {
        self.report(
            it.span.start,
            "import-meta",
            "`import.meta` is not allowed: it describes the host's module, not the script"
                .to_string(),
        );
    }
}

/// The value an expression evaluates to when that is syntactically evident:
/// `(x)` and `(0, x)` are `x`.
fn value_of<'x, 'a>(expression: &'x Expression<'a>) -> &'x Expression<'a> {
    let mut current = expression.without_parentheses();
    while let Expression::SequenceExpression(sequence) = current {
        match sequence.expressions.last() {
            Some(last) => current = last.without_parentheses(),
            None => break,
        }
    }
    current
}

/// The property a member expression names, if it is spelled out (`a.b`, `a["b"]`).
fn member_name<'x>(member: &'x MemberExpression<'_>) -> Option<&'x str> {
    match member {
        MemberExpression::StaticMemberExpression(m) => Some(m.property.name.as_str()),
        MemberExpression::ComputedMemberExpression(m) => {
            literal_key(&m.expression).map(|(_, name)| name)
        }
        MemberExpression::PrivateFieldExpression(_) => None,
    }
}

/// The name spelled by a string or substitution-free template key.
fn literal_key<'x>(key: &'x Expression<'_>) -> Option<(Span, &'x str)> {
    match key.without_parentheses() {
        Expression::StringLiteral(lit) => Some((lit.span, lit.value.as_str())),
        Expression::TemplateLiteral(lit) => {
            lit.single_quasi().map(|text| (lit.span, text.as_str()))
        }
        _ => None,
    }
}

fn is_number_literal(key: &Expression<'_>) -> bool {
    let key = key.without_parentheses();
    matches!(
        key,
        Expression::NumericLiteral(_) | Expression::BigIntLiteral(_)
    ) || matches!(key, Expression::UnaryExpression(u)
            if u.operator == UnaryOperator::UnaryNegation && is_number_literal(&u.argument))
}

/// Whether a computed key can spell a property name out of string pieces.
fn key_is_built_from_strings(key: &Expression<'_>) -> bool {
    match key {
        Expression::StringLiteral(_)
        | Expression::NumericLiteral(_)
        | Expression::BigIntLiteral(_)
        | Expression::BooleanLiteral(_)
        | Expression::NullLiteral(_)
        | Expression::Identifier(_)
        | Expression::ThisExpression(_)
        | Expression::Super(_)
        | Expression::StaticMemberExpression(_)
        | Expression::ComputedMemberExpression(_)
        | Expression::PrivateFieldExpression(_)
        | Expression::ChainExpression(_)
        | Expression::PrivateInExpression(_)
        | Expression::UnaryExpression(_)
        | Expression::UpdateExpression(_) => false,
        Expression::TemplateLiteral(template) => !template.expressions.is_empty(),
        Expression::BinaryExpression(binary) => {
            (binary.operator == BinaryOperator::Addition
                && (has_string_operand(&binary.left) || has_string_operand(&binary.right)))
                || key_is_built_from_strings(&binary.left)
                || key_is_built_from_strings(&binary.right)
        }
        Expression::ConditionalExpression(conditional) => {
            key_is_built_from_strings(&conditional.consequent)
                || key_is_built_from_strings(&conditional.alternate)
        }
        Expression::LogicalExpression(logical) => {
            key_is_built_from_strings(&logical.left) || key_is_built_from_strings(&logical.right)
        }
        Expression::SequenceExpression(sequence) => sequence
            .expressions
            .last()
            .is_some_and(key_is_built_from_strings),
        Expression::AwaitExpression(await_) => key_is_built_from_strings(&await_.argument),
        Expression::ParenthesizedExpression(paren) => key_is_built_from_strings(&paren.expression),
        Expression::CallExpression(call) => is_string_builder_call(call),
        // Arrays (`[['constructor']]` stringifies), objects, functions,
        // assignments, tagged templates, `new`, regexes, …
        _ => true,
    }
}

/// Whether an operand of `+` makes it a string concatenation.
fn has_string_operand(operand: &Expression<'_>) -> bool {
    match operand {
        Expression::StringLiteral(_) | Expression::TemplateLiteral(_) => true,
        Expression::TaggedTemplateExpression(_) => true,
        Expression::BinaryExpression(binary) if binary.operator == BinaryOperator::Addition => {
            has_string_operand(&binary.left) || has_string_operand(&binary.right)
        }
        Expression::ParenthesizedExpression(paren) => has_string_operand(&paren.expression),
        Expression::CallExpression(call) => is_string_builder_call(call),
        _ => false,
    }
}

fn is_string_builder_call(call: &CallExpression<'_>) -> bool {
    match call.callee.without_parentheses() {
        Expression::Identifier(id) => STRING_BUILDER_FUNCTIONS.contains(&id.name.as_str()),
        callee => {
            let Some(member) = callee.as_member_expression() else {
                return false;
            };
            let method = member_name(member);
            method.is_some_and(|m| STRING_BUILDER_METHODS.contains(&m))
                // `(1234).toString(36)` spells any lowercase word.
                || (method == Some("toString") && !call.arguments.is_empty())
                || rooted_in_literal(member.object())
        }
    }
}

/// `'abc'.split('')…`, `[...].map(…)…`: the receiver chain starts at a literal.
fn rooted_in_literal(expression: &Expression<'_>) -> bool {
    let mut current = expression;
    loop {
        match current {
            Expression::StringLiteral(_)
            | Expression::TemplateLiteral(_)
            | Expression::ArrayExpression(_)
            | Expression::NumericLiteral(_) => return true,
            Expression::CallExpression(call) => current = &call.callee,
            Expression::ParenthesizedExpression(paren) => current = &paren.expression,
            other => match other.as_member_expression() {
                Some(member) => current = member.object(),
                None => return false,
            },
        }
    }
}

/// Whether an argument is evidently a string (for string-evaluating timers).
fn is_string_valued(expression: &Expression<'_>) -> bool {
    match expression.without_parentheses() {
        Expression::StringLiteral(_)
        | Expression::TemplateLiteral(_)
        | Expression::TaggedTemplateExpression(_) => true,
        Expression::BinaryExpression(binary) => {
            binary.operator == BinaryOperator::Addition
                && (has_string_operand(&binary.left) || has_string_operand(&binary.right))
        }
        Expression::CallExpression(call) => is_string_builder_call(call),
        _ => false,
    }
}

/// The built-in a static member chain starts at: `Object`, `Object.prototype`,
/// `Array.prototype.map` all start at a built-in.
fn builtin_root<'x>(expression: &'x Expression<'_>) -> Option<&'x str> {
    let mut current = expression;
    loop {
        match current.without_parentheses() {
            Expression::Identifier(id) => {
                let name = id.name.as_str();
                return BUILTINS.contains(&name).then_some(name);
            }
            Expression::StaticMemberExpression(member) => current = &member.object,
            Expression::ComputedMemberExpression(member)
                if literal_key(&member.expression).is_some() =>
            {
                current = &member.object;
            }
            _ => return None,
        }
    }
}

/// Describes `target` if it is a built-in or a prototype (for `Object.assign`).
fn describe_shared_target(target: &Expression<'_>) -> Option<String> {
    let through_prototype = {
        let mut current = target;
        let mut found = false;
        while let Some(member) = current.without_parentheses().as_member_expression() {
            found |= member_name(member) == Some("prototype");
            current = member.object();
        }
        found
    };
    match (builtin_root(target), through_prototype) {
        (Some(root), true) => Some(format!("`{root}.prototype`")),
        (Some(root), false) => Some(format!("built-in `{root}`")),
        (None, true) => Some("a `.prototype`".to_string()),
        (None, false) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(code: &str) -> Result<(), ValidationErrors> {
        validate(code, &ValidationLimits::default())
    }

    fn rules(code: &str) -> Vec<&'static str> {
        match check(code) {
            Ok(()) => Vec::new(),
            Err(errors) => errors.rules(),
        }
    }

    #[track_caller]
    fn assert_rule(code: &str, rule: &str) {
        let found = rules(code);
        assert!(
            found.contains(&rule),
            "expected `{rule}` for {code:?}, got {found:?}"
        );
    }

    #[track_caller]
    fn assert_ok(code: &str) {
        if let Err(errors) = check(code) {
            panic!("expected {code:?} to pass, got:\n{errors}");
        }
    }

    #[test]
    fn ordinary_scripts_pass() {
        assert_ok("const r = await tools.github.create_issue({ title: 'x' });\nreturn r;");
        assert_ok("for (const row of rows) { total += row[col]; }");
        assert_ok("const x = results[i + 1]; return x?.name ?? '无';");
        assert_ok("class A { constructor(x) { this.x = x; } get v() { return this.x; } }");
        assert_ok("outer: for (const a of xs) { for (const b of a) { if (b) continue outer; } }");
        assert_ok("return Object.prototype.hasOwnProperty.call(o, 'k');");
        assert_ok("if (typeof window === 'undefined') { return 1 }");
    }

    #[test]
    fn eval_in_every_spelling() {
        assert_rule("eval('1')", "eval");
        assert_rule("(0, eval)('1')", "eval");
        assert_rule("const e = eval; e('1')", "eval");
        assert_rule("x.eval('1')", "eval");
        assert_rule("const { eval: e } = obj", "eval");
        assert_rule("let eval = 1", "eval");
        assert_rule("\\u0065val('1')", "eval");
        assert_rule("setTimeout('alert(1)', 0)", "eval");
    }

    #[test]
    fn function_constructors() {
        assert_rule("new Function('return 1')()", "function-constructor");
        assert_rule("const F = AsyncFunction", "function-constructor");
        assert_rule("function Function() {}", "function-constructor");
        assert_rule("(async function(){}).constructor('x')", "constructor-chain");
        assert_rule("x['constructor']", "constructor-chain");
        assert_rule("x[`constructor`]", "constructor-chain");
        assert_rule("const k = 'constructor'", "constructor-chain");
        assert_rule("(function(){})[k]", "constructor-chain");
        assert_rule("function f() {}\nf[k]", "constructor-chain");
        assert_rule("class A { static constructor() {} }", "constructor-chain");
    }

    #[test]
    fn modules_and_host() {
        assert_rule("await import('x')", "dynamic-import");
        assert_rule("import.meta.url", "import-meta");
        assert_rule("import fs from 'fs'", "import");
        assert_rule("export const a = 1", "export");
        assert_rule("require('fs')", "require");
        assert_rule("Deno.exit()", "deno");
        assert_rule("new Proxy({}, {})", "proxy");
        assert_rule("Reflect.ownKeys(x)", "reflect");
        assert_rule("WebAssembly.compile(b)", "webassembly");
        assert_rule("new SharedArrayBuffer(8)", "shared-memory");
        assert_rule("Atomics.wait(a, 0, 0)", "shared-memory");
        assert_rule("with (o) { x }", "with");
        assert_rule("debugger;", "debugger");
        assert_rule("__bootstrap.core", "internal-name");
        assert_ok("const __cache = {}; __cache.a = 1;");
    }

    #[test]
    fn globals_and_prototypes() {
        assert_rule("globalThis['ev' + 'al']", "global-computed");
        assert_rule("window[k]", "global-computed");
        assert_rule("const g = globalThis", "global-alias");
        assert_rule("self.x", "global-alias");
        assert_rule("x.__proto__ = y", "proto");
        assert_rule("({ __proto__: p })", "proto");
        assert_rule("o.__defineGetter__('a', f)", "proto");
        assert_rule("Object.setPrototypeOf(a, b)", "reflection");
        assert_rule("Array.prototype.map = f", "builtin-mutation");
        assert_rule("Math.random = () => 4", "builtin-mutation");
        assert_rule("delete Array.prototype.push", "builtin-mutation");
        assert_rule("JSON = {}", "builtin-mutation");
        assert_rule(
            "Object.assign(Object.prototype, { x: 1 })",
            "builtin-mutation",
        );
        assert_rule("Object[k]", "builtin-computed");
        assert_rule("Error.prepareStackTrace = f", "stack-trace");
        assert_rule("Error.captureStackTrace(o)", "stack-trace");
        assert_rule("function f() { return arguments.callee }", "caller");
        assert_rule("function f() { return this }", "this");
    }

    #[test]
    fn computed_keys() {
        assert_rule("x['con' + 'structor']", "computed-key");
        assert_rule("x[`con${s}`]", "computed-key");
        assert_rule("x[String.fromCharCode(99)]", "computed-key");
        assert_rule("x[['con', 'structor'].join('')]", "computed-key");
        assert_rule("x[(1234).toString(36)]", "computed-key");
        assert_rule("const { ['con' + 'structor']: c } = f", "computed-key");
        assert_ok("x[i]; x[i + 1]; x[key]; x[a.b]; x[f(y)]; x[-1]; x[k.trim()]");
        assert_ok("const o = { ['field_' + i]: 1 }");
    }

    #[test]
    fn non_ascii() {
        assert_rule("const café = 1", "non-ascii-identifier");
        assert_rule("x.naïve", "non-ascii-identifier");
        assert_rule("const a\u{200d} = 1", "non-ascii-identifier");
        assert_ok("const s = '你好，世界'; // 注释\nreturn `${s}！`;");
    }

    #[test]
    fn positions_refer_to_user_lines() {
        let errors = check("const a = 1;\n\n    eval('x');").unwrap_err();
        assert_eq!(errors.errors.len(), 1);
        let v = &errors.errors[0];
        assert_eq!((v.line, v.column), (3, 5));
        assert_eq!(
            v.to_string(),
            "line 3, col 5: `eval` is not allowed: scripts cannot evaluate strings as code"
        );

        let errors = check("eval").unwrap_err();
        assert_eq!((errors.errors[0].line, errors.errors[0].column), (1, 1));

        // CRLF counts once; columns count characters, not bytes.
        let errors = check("a;\r\nconst s = '你好'; eval").unwrap_err();
        assert_eq!((errors.errors[0].line, errors.errors[0].column), (2, 17));

        // A syntax error at the end of input stays inside the user's code.
        let errors = check("foo(\n").unwrap_err();
        assert_eq!(errors.errors[0].rule, "syntax");
        assert!(errors.errors[0].line <= 2, "{errors}");
    }

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

    #[test]
    fn syntax_errors_and_breakout() {
        assert_rule("let = ;", "syntax");
        assert_rule("}); globalThis.x = 1; (async () => {", "syntax");
        assert_rule("}); (async () => {", "syntax");
        assert_rule("x = 1 <!-- hidden", "html-comment");
    }

    #[test]
    fn size_and_depth() {
        let limits = ValidationLimits {
            max_code_bytes: 10,
            max_depth: 64,
        };
        let errors = validate("return 12345678901;", &limits).unwrap_err();
        assert_eq!(errors.rules(), ["too-large"]);

        for deep in [
            "[".repeat(10_000),
            "(".repeat(10_000),
            "{".repeat(10_000),
            format!("x = {}1", "!".repeat(60_000)),
            format!("x = {}1", "- ".repeat(30_000)),
            format!("x = {}1", "typeof ".repeat(9_000)),
            format!("{}1", "if (a) ".repeat(9_000)),
            format!("if (a) b;{}", "else if (a) b;".repeat(4_000)),
            format!("x = {}1", "a = ".repeat(16_000)),
            format!("x = {}1", "a ? b : ".repeat(8_000)),
            format!("x = {}1", "a => ".repeat(12_000)),
            format!("x = {}", "`${".repeat(20_000)),
            "l: ".repeat(20_000),
        ] {
            assert_eq!(rules(&deep), ["too-deep"], "{}", &deep[..40]);
        }
        // Long but flat chains are fine up to a point…
        assert_ok(&format!("x = 1{}", " + 1".repeat(500)));
        // …and then rejected without exhausting the stack.
        assert_eq!(
            rules(&format!("x = 1{}", " + 1".repeat(15_000))),
            ["too-deep"]
        );
        assert_eq!(
            rules(&format!("x = a{}", ".b".repeat(30_000))),
            ["too-deep"]
        );
    }

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

    #[test]
    fn violations_are_sorted_deduplicated_and_capped() {
        let errors = check("Reflect.x; eval; eval;").unwrap_err();
        assert_eq!(errors.rules(), ["reflect", "eval", "eval"]);
        let errors = check("({ eval })").unwrap_err();
        assert_eq!(errors.rules(), ["eval"]);
        let many = "eval;\n".repeat(50);
        let errors = check(&many).unwrap_err();
        assert_eq!(errors.errors.len(), MAX_VIOLATIONS);
        assert!(errors.errors.windows(2).all(|w| w[0].line <= w[1].line));
        let shown = errors.to_string();
        assert_eq!(shown.lines().count(), MAX_VIOLATIONS);
    }

    #[test]
    fn serializes_for_clients() {
        let errors = check("eval").unwrap_err();
        let json = serde_json::to_value(&errors).unwrap();
        assert_eq!(json["errors"][0]["rule"], "eval");
        assert_eq!(json["errors"][0]["line"], 1);
    }
}
