//! The crate's files form a layered graph: no file depends on another that
//! depends back on it, directly or through others. Dependencies are read from
//! the source (`use` trees and inline `crate::`/`super::` paths, comments and
//! literals skipped); `mod` declarations are not dependencies. Run with
//! `--nocapture` to print the graph, one file per line.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Punct(char),
}

/// Identifiers, `::` and punctuation; comments, strings, chars and lifetimes dropped.
fn tokens(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let at = |i: usize| chars.get(i).copied();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(c) = at(i) {
        if c == '/' && at(i + 1) == Some('/') {
            while at(i).is_some_and(|c| c != '\n') {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == Some('*') {
            i = skip_block_comment(&chars, i);
        } else if let Some(end) = skip_string(&chars, i) {
            i = end;
        } else if c == '\'' {
            if at(i + 1) == Some('\\') {
                i += 2;
                while at(i).is_some_and(|c| c != '\'') {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == Some('\'') {
                i += 3;
            } else {
                // A lifetime: the identifier after it is not a path.
                i += 1;
                while at(i).is_some_and(|c| c.is_alphanumeric() || c == '_') {
                    i += 1;
                }
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while at(i).is_some_and(|c| c.is_alphanumeric() || c == '_') {
                i += 1;
            }
            out.push(Token::Ident(chars[start..i].iter().collect()));
        } else if c == ':' && at(i + 1) == Some(':') {
            out.push(Token::PathSep);
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(Token::Punct(c));
            }
            i += 1;
        }
    }
    out
}

/// Past the end of the (nested) block comment starting at `i`.
fn skip_block_comment(chars: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i < chars.len() {
        if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                break;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// Past the end of a string literal (`"…"`, `b"…"`, `r#"…"#`, `br"…"`)
/// starting at `i`, if one does.
fn skip_string(chars: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    let raw = chars.get(j) == Some(&'r');
    if raw {
        j += 1;
    }
    let mut hashes = 0;
    while raw && chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if chars.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < chars.len() {
        if !raw && chars[j] == '\\' {
            j += 2;
            continue;
        }
        if chars[j] == '"' && (1..=hashes).all(|h| chars.get(j + h) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(j)
}

/// The paths a `use` tree names (`a::{b, c::d}` → `a::b`, `a::c::d`).
fn use_paths(tree: &[Token]) -> Vec<Vec<String>> {
    fn walk(tree: &[Token], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
        let mut path = prefix.clone();
        while *i < tree.len() {
            match &tree[*i] {
                Token::Ident(name) if name == "as" => {
                    *i += 2; // `as alias`
                }
                Token::Ident(name) => {
                    if name != "self" {
                        path.push(name.clone());
                    }
                    *i += 1;
                }
                Token::PathSep | Token::Punct('*') => *i += 1,
                Token::Punct('{') => {
                    *i += 1;
                    loop {
                        walk(tree, i, path.clone(), out);
                        match tree.get(*i) {
                            Some(Token::Punct(',')) => *i += 1,
                            _ => break,
                        }
                        if tree.get(*i) == Some(&Token::Punct('}')) {
                            break;
                        }
                    }
                    *i += 1; // `}`
                    return;
                }
                Token::Punct(',') | Token::Punct('}') => break,
                Token::Punct(_) => *i += 1,
            }
        }
        if path.len() > prefix.len() || prefix.is_empty() {
            out.push(path);
        }
    }
    let mut out = Vec::new();
    let mut i = 0;
    walk(tree, &mut i, Vec::new(), &mut out);
    out
}

/// `src/a/b.rs` → `["a", "b"]`; `lib.rs` → `[]`; `a/mod.rs` → `["a"]`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = relative
        .with_extension("")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// For each file's module, the other files' modules it names.
fn dependencies(src: &Path) -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_of(src, f)).collect();
    // The longest prefix of an absolute path that is a file's module.
    let owner = |path: &[String]| -> Vec<String> {
        (0..=path.len())
            .rev()
            .map(|n| path[..n].to_vec())
            .find(|p| modules.contains(p))
            .unwrap_or_default()
    };
    let mut graph = BTreeMap::new();
    for file in &files {
        let this = module_of(src, file);
        let source = std::fs::read_to_string(file).expect("read source");
        let toks = tokens(&source);
        let mut deps = BTreeSet::new();
        // Inline modules (`mod tests { … }`, `pub mod typ { … }`): (name, brace depth).
        let mut scopes: Vec<(String, usize)> = Vec::new();
        let mut depth = 0usize;
        let mut i = 0;
        let scope_path = |scopes: &[(String, usize)]| -> Vec<String> {
            let mut p = this.clone();
            p.extend(scopes.iter().map(|(n, _)| n.clone()));
            p
        };
        let resolve = |path: &[String], scope: &[String], deps: &mut BTreeSet<Vec<String>>| {
            let absolute: Vec<String> = match path.first().map(String::as_str) {
                Some("crate") => path[1..].to_vec(),
                Some("super") => {
                    let mut base = scope.to_vec();
                    let mut rest = path;
                    while rest.first().map(String::as_str) == Some("super") {
                        base.pop();
                        rest = &rest[1..];
                    }
                    base.extend(rest.iter().cloned());
                    base
                }
                Some(first) => {
                    // A child module of the current one (`pub use answer::…`).
                    let mut child = scope.to_vec();
                    child.push(first.to_string());
                    if !modules.contains(&child) {
                        return;
                    }
                    let mut p = scope.to_vec();
                    p.extend(path.iter().cloned());
                    p
                }
                None => return,
            };
            let target = owner(&absolute);
            if target != this {
                deps.insert(target);
            }
        };
        while i < toks.len() {
            match &toks[i] {
                Token::Ident(kw) if kw == "mod" => {
                    if let (Some(Token::Ident(name)), Some(Token::Punct('{'))) =
                        (toks.get(i + 1), toks.get(i + 2))
                    {
                        depth += 1;
                        scopes.push((name.clone(), depth));
                        i += 3;
                        continue;
                    }
                    i += 1;
                }
                Token::Ident(kw) if kw == "use" => {
                    let end = toks[i..]
                        .iter()
                        .position(|t| *t == Token::Punct(';'))
                        .map_or(toks.len(), |p| i + p);
                    let scope = scope_path(&scopes);
                    for path in use_paths(&toks[i + 1..end]) {
                        resolve(&path, &scope, &mut deps);
                    }
                    i = end + 1;
                }
                Token::Ident(head) if (head == "crate" || head == "super") => {
                    let mut path = vec![head.clone()];
                    let mut j = i + 1;
                    while let (Some(Token::PathSep), Some(Token::Ident(next))) =
                        (toks.get(j), toks.get(j + 1))
                    {
                        path.push(next.clone());
                        j += 2;
                    }
                    if path.len() > 1 {
                        resolve(&path, &scope_path(&scopes), &mut deps);
                    }
                    i = j;
                }
                Token::Punct('{') => {
                    depth += 1;
                    i += 1;
                }
                Token::Punct('}') => {
                    if scopes.last().is_some_and(|(_, d)| *d == depth) {
                        scopes.pop();
                    }
                    depth = depth.saturating_sub(1);
                    i += 1;
                }
                _ => i += 1,
            }
        }
        graph.insert(this, deps);
    }
    graph
}

fn name(module: &[String]) -> String {
    if module.is_empty() {
        "lib".into()
    } else {
        module.join("/")
    }
}

#[test]
fn no_module_depends_on_one_that_depends_back_on_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = dependencies(&src);
    for (module, deps) in &graph {
        let deps: Vec<String> = deps.iter().map(|d| name(d)).collect();
        println!("{:<24} -> {}", name(module), deps.join(", "));
    }
    // Depth-first search for a back edge; the cycle is named in the failure.
    fn visit(
        node: &Vec<String>,
        graph: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        stack: &mut Vec<Vec<String>>,
        done: &mut BTreeSet<Vec<String>>,
    ) {
        if done.contains(node) {
            return;
        }
        if let Some(at) = stack.iter().position(|n| n == node) {
            let cycle: Vec<String> = stack[at..].iter().chain([node]).map(|m| name(m)).collect();
            panic!("module cycle: {}", cycle.join(" -> "));
        }
        stack.push(node.clone());
        for dep in graph.get(node).into_iter().flatten() {
            visit(dep, graph, stack, done);
        }
        stack.pop();
        done.insert(node.clone());
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, &graph, &mut Vec::new(), &mut done);
    }
}

#[test]
fn the_reader_sees_nested_uses_inline_paths_and_skips_literals() {
    let toks = tokens(
        "use crate::{a::{B, c::D}, e as f}; // crate::nope\nlet s = \"crate::nope\"; x(crate::g::h); 'a'; '{';",
    );
    let end = toks.iter().position(|t| *t == Token::Punct(';')).unwrap();
    let paths = use_paths(&toks[1..end]);
    let joined: Vec<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(joined, ["crate::a::B", "crate::a::c::D", "crate::e"]);
    let idents: Vec<&Token> = toks
        .iter()
        .filter(|t| **t == Token::Ident("nope".into()))
        .collect();
    assert!(idents.is_empty(), "comments and strings are skipped");
    let braces = toks.iter().filter(|t| **t == Token::Punct('{')).count();
    assert_eq!(braces, 2, "a '{{' char literal is not a brace");
}
