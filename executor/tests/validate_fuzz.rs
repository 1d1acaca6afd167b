//! Arbitrary input never crashes the validator: random Unicode, JavaScript
//! token soup (unbalanced brackets, stray quotes, comment and regex
//! delimiters) and nesting bombs all come back as `Ok` or as well-formed
//! violations. A panic or a stack overflow here would take the host down.

use proptest::prelude::*;
use quiver_executor::sandbox::validate::{
    MAX_VIOLATIONS, ValidationErrors, ValidationLimits, validate,
};

/// Fragments that stress the lexer, the parser's error recovery and the
/// nesting checks.
const TOKENS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "`",
    "${",
    "'",
    "\"",
    "/",
    "/=",
    "*",
    "//",
    "/*",
    "*/",
    "\n",
    "\r\n",
    " ",
    "\\",
    "if",
    "else",
    "for",
    "while",
    "do",
    "with",
    "typeof",
    "new",
    "await",
    "yield",
    "async",
    "function",
    "class",
    "=>",
    "!",
    "~",
    "-",
    "--",
    "+",
    "++",
    "=",
    "==",
    "?",
    "?.",
    "??",
    ":",
    ";",
    ",",
    ".",
    "...",
    "eval",
    "constructor",
    "x",
    "1",
    "0x1f",
    "1e-3",
    "a.b",
    "this",
    "import",
    "export",
    "return",
    "<!--",
    "-->",
    "#p",
    "é",
    "你好",
    "\u{2028}",
    "\u{200d}",
    "\u{feff}",
    "\u{a0}",
    "\\u0065",
    "/[/]/",
    "/a/g",
    "'str'",
    "\"s\\\"\"",
    "`t${1}`",
    "globalThis",
    "__proto__",
    "tools.x()",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..3_000).prop_map(|tokens| tokens.concat())
}

fn nesting_bomb() -> impl Strategy<Value = String> {
    let openers = prop::sample::select(
        &[
            "(",
            "[",
            "{",
            "`${",
            "!",
            "- ",
            "typeof ",
            "new ",
            "a = ",
            "a ? b : ",
            "x => ",
            "if (a) ",
            "else ",
            "l: ",
            "function f() {",
            "() => {",
            "{a:",
            "...[",
            "2 ** ",
        ][..],
    );
    (openers, 0..20_000usize, "(?s).{0,40}")
        .prop_map(|(opener, n, tail)| format!("{}{tail}", opener.repeat(n)))
}

fn check_well_formed(code: &str) -> Result<(), TestCaseError> {
    let limits = ValidationLimits::default();
    let Err(ValidationErrors { errors }) = validate(code, &limits) else {
        return Ok(());
    };
    prop_assert!(!errors.is_empty() && errors.len() <= MAX_VIOLATIONS);
    for violation in &errors {
        prop_assert!(
            violation.line >= 1 && violation.column >= 1,
            "{violation:?}"
        );
        prop_assert_ne!(
            violation.rule.as_ref(),
            "internal",
            "the validator failed: {}",
            violation.message
        );
    }
    let lines: Vec<u32> = errors.iter().map(|v| v.line).collect();
    prop_assert!(
        lines.windows(2).all(|w| w[0] <= w[1]),
        "not sorted: {lines:?}"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_unicode_never_panics(code in "(?s).{0,600}") {
        check_well_formed(&code)?;
    }

    #[test]
    fn token_soup_never_panics(code in token_soup()) {
        check_well_formed(&code)?;
    }

    #[test]
    fn nesting_bombs_never_overflow(code in nesting_bomb()) {
        check_well_formed(&code)?;
    }

    #[test]
    fn wrapped_bombs_never_overflow(prefix in token_soup(), bomb in nesting_bomb()) {
        check_well_formed(&format!("{prefix}\n{bomb}"))?;
    }
}
