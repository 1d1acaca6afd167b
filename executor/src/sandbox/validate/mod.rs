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
//! # Layout
//!
//! This file holds the public entry point and the pipeline (size check,
//! pre-scan, parse on a sized thread, AST pass, positions). The limits are in
//! `validation_limits`, what the passes report in `finding`, the pre-scan in
//! `nesting`, the name tables and messages in `rules`, the AST pass in
//! `visitor` (with the expression facts it needs in `expressions`), offsets to
//! lines in `line_index`, and what callers receive in `quiver_contract::ValidationErrors`.
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

mod expressions;
mod finding;
mod line_index;
mod nesting;
mod rules;
#[cfg(test)]
mod test_support;
mod validation_limits;
mod visitor;

use std::thread;

use oxc_allocator::Allocator;
use oxc_ast::ast::*;
use oxc_ast_visit::Visit;
use oxc_parser::{ParseOptions, Parser};
use oxc_span::{GetSpan, SourceType, Span};

pub use self::validation_limits::ValidationLimits;
use self::{
    finding::Finding, line_index::LineIndex, nesting::scan_nesting, rules::HTML_COMMENT_MESSAGE,
    visitor::RuleVisitor,
};
// What a rejected script is told lives in the contract crate: clients read it too.
pub use quiver_contract::{MAX_VIOLATIONS, ValidationErrors, Violation};

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
    verdict(code, collect_findings(code, limits))
}

/// [`validate`] as if rule `rule` were broken: its findings are dropped.
/// Test-only: the adversarial suite uses it to prove that it notices a rule
/// that stops firing.
#[doc(hidden)]
pub fn validate_without_rule(
    code: &str,
    limits: &ValidationLimits,
    rule: &str,
) -> Result<(), ValidationErrors> {
    let mut findings = collect_findings(code, limits);
    findings.retain(|finding| finding.rule != rule);
    verdict(code, findings)
}

fn verdict(code: &str, findings: Vec<Finding>) -> Result<(), ValidationErrors> {
    if findings.is_empty() {
        return Ok(());
    }
    Err(ValidationErrors {
        errors: into_violations(code, findings),
    })
}

const PREFIX: &str = "(async () => {\n";
const SUFFIX: &str = "\n})";

/// Parser stack per byte of input for the worst case measured (a run of `(`
/// costs ~2.9 KB of stack per byte in debug builds, ~1.6 KB in release), plus
/// a floor and a ceiling.
const PARSE_STACK_PER_BYTE: usize = 4 * 1024;
const PARSE_STACK_FLOOR: usize = 4 << 20;
const PARSE_STACK_CEILING: usize = 512 << 20;

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
                rule: f.rule.into(),
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

#[cfg(test)]
mod tests {
    // These tests call `validate` itself: `test_support` runs the pipeline in
    // this file, so using it here would make the two files import each other.
    use super::*;

    #[test]
    fn positions_refer_to_user_lines() {
        let check = |code: &str| validate(code, &ValidationLimits::default());
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
    fn syntax_errors_and_breakout() {
        for (code, rule) in [
            ("let = ;", "syntax"),
            ("}); globalThis.x = 1; (async () => {", "syntax"),
            ("}); (async () => {", "syntax"),
            ("x = 1 <!-- hidden", "html-comment"),
        ] {
            let errors = validate(code, &ValidationLimits::default()).unwrap_err();
            assert!(
                errors.rules().contains(&rule),
                "expected `{rule}` for {code:?}, got {:?}",
                errors.rules()
            );
        }
    }

    #[test]
    fn size_and_depth() {
        let limits = ValidationLimits {
            max_code_bytes: 10,
            max_depth: 64,
        };
        let errors = validate("return 12345678901;", &limits).unwrap_err();
        assert_eq!(errors.rules(), ["too-large"]);

        let defaults = ValidationLimits::default();
        let rules =
            |code: &str| validate(code, &defaults).map_err(|errors| errors.rules().join(" "));

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
            assert_eq!(rules(&deep), Err("too-deep".into()), "{}", &deep[..40]);
        }
        // Long but flat chains are fine up to a point…
        assert_eq!(rules(&format!("x = 1{}", " + 1".repeat(500))), Ok(()));
        // …and then rejected without exhausting the stack.
        assert_eq!(
            rules(&format!("x = 1{}", " + 1".repeat(15_000))),
            Err("too-deep".into())
        );
        assert_eq!(
            rules(&format!("x = a{}", ".b".repeat(30_000))),
            Err("too-deep".into())
        );
    }

    #[test]
    fn violations_are_sorted_deduplicated_and_capped() {
        let check = |code: &str| validate(code, &ValidationLimits::default());
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
        let errors = validate("eval", &ValidationLimits::default()).unwrap_err();
        let json = serde_json::to_value(&errors).unwrap();
        assert_eq!(json["errors"][0]["rule"], "eval");
        assert_eq!(json["errors"][0]["line"], 1);
    }
}
