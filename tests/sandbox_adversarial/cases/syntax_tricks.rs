//! Tricks at the level of the source text: escapes in identifiers, look-alike
//! letters, comments scripts and modules read differently, nesting deep
//! enough to break a parser, and code that closes the function the script is
//! wrapped in.

use serde_json::json;

use crate::sandbox_adversarial::adversarial::case::{
    Case, FullPath::Runs, rejected, returns, throws,
};

pub fn cases() -> Vec<Case> {
    vec![
        Case::new(
            "unicode escape eval",
            "return \\u0065val('1') ? 'ESCAPED' : 'contained';",
            rejected("eval"),
            throws("ReferenceError: eval is not defined"),
        ),
        Case::new(
            "non-ascii identifier",
            "const еval = 1;\nreturn еval;",
            rejected("non-ascii-identifier"),
            returns(json!(1)),
        ),
        Case::new(
            "html comment",
            "<!-- x\nreturn 'after the comment';",
            rejected("html-comment"),
            returns(json!("after the comment")),
        ),
        Case::new(
            "deep nesting",
            &format!("return {}1{};", "[".repeat(10_000), "]".repeat(10_000)),
            rejected("too-deep"),
            throws("RangeError: Maximum call stack size exceeded"),
        ),
        Case::new(
            "deep parens",
            &format!("return {}1{};", "(".repeat(10_000), ")".repeat(10_000)),
            rejected("too-deep"),
            throws("RangeError: Maximum call stack size exceeded"),
        ),
        Case::new(
            "break out of wrapper",
            "}); globalThis.leaked = 1; (async () => { return typeof leaked;",
            rejected("syntax"),
            // The runtime alone runs the code outside the wrapper (and outside
            // strict mode); the frozen global object ignores the write.
            returns(json!("undefined")),
        ),
        Case::new(
            "close wrapper with return",
            "return 1; }); eval('1'); (() => {",
            rejected("syntax"),
            throws("ReferenceError: eval is not defined"),
        ),
        Case::new(
            "label abuse",
            "a: { break a; }\nreturn 'contained';",
            Runs,
            returns(json!("contained")),
        ),
        Case::new(
            "debugger",
            "debugger;\nreturn 'contained';",
            rejected("debugger"),
            returns(json!("contained")),
        ),
        Case::new(
            "octal escape",
            "return '\\101';",
            Runs,
            throws("SyntaxError: Octal escape sequences are not allowed in strict mode"),
        ),
    ]
}
