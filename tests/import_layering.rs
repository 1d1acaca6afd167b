//! The layering of every crate's files: no cycle of imports among the files
//! of one crate, of any length, and none among its top-level modules either
//! (a folder such as `engine/` may use `ipc/`, but then nothing `ipc/` uses,
//! directly or through others, may use `engine/`). Code under `#[cfg(test)]`
//! (inline test modules, test-support files) is left out: tests may reach
//! anywhere.
//! Imports are read with `syn` from `use` trees and from every path in the
//! code that starts with `crate::`, `super::` or `self::`.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use syn::visit::Visit;

/// Source roots of the workspace's crates (the binary's included).
pub(crate) const CRATES: &[&str] = &[
    "proto/src",
    "upstream/src",
    "view/src",
    "screen/src",
    "telemetry/src",
    "contract/src",
    "fleet/src",
    "admin/src",
    "control-plane/src",
    "executor/src",
    "edge/src",
    "encoder/src",
    "demo/src",
    "bench/src",
    "test-kit/src",
    "src",
    "tests/conformance-upstream/src",
];

/// Module path (`["modes", "code"]`) → file, for one crate.
fn modules(root: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut found = BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path.strip_prefix(root).unwrap().with_extension("");
            let mut module: Vec<String> = relative
                .iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect();
            if matches!(
                module.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                module.pop();
            }
            found.insert(module, path);
        }
    }
    found
}

/// Every path a file names through `crate`, `super`, `self` or a child
/// module, each with the inline modules (`mod tests { … }`) it sits in; and
/// what the file re-exports with `pub use`, which is a facade, not an import.
#[derive(Default)]
struct Paths {
    /// `(inline modules, path)`.
    paths: Vec<(Vec<String>, Vec<String>)>,
    /// Re-exported name → the path it re-exports.
    reexports: Vec<(String, Vec<String>)>,
    inline: Vec<String>,
    /// Child module files declared `#[cfg(test)] mod name;`.
    test_files: Vec<String>,
}

/// Whether `attrs` hold `#[cfg(test)]`: code that only tests compile, which
/// may reach anywhere in its crate without making a layer depend on another.
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

impl Paths {
    fn use_tree(&mut self, public: bool, prefix: &[String], tree: &syn::UseTree) {
        let leaf = |paths: &mut Paths, name: String, alias: String| {
            let mut next = prefix.to_vec();
            next.push(name);
            if public && paths.inline.is_empty() {
                paths.reexports.push((alias, next));
            } else {
                paths.paths.push((paths.inline.clone(), next));
            }
        };
        match tree {
            syn::UseTree::Path(p) => {
                let mut next = prefix.to_vec();
                next.push(p.ident.to_string());
                self.use_tree(public, &next, &p.tree);
            }
            syn::UseTree::Name(n) => leaf(self, n.ident.to_string(), n.ident.to_string()),
            syn::UseTree::Rename(r) => leaf(self, r.ident.to_string(), r.rename.to_string()),
            syn::UseTree::Glob(_) => self.paths.push((self.inline.clone(), prefix.to_vec())),
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    self.use_tree(public, prefix, item);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let public = matches!(item.vis, syn::Visibility::Public(_));
        self.use_tree(public, &[], &item.tree);
    }

    // `pub(super)` and `pub(in crate::x)` say who may see an item, not what it uses.
    fn visit_visibility(&mut self, _visibility: &'ast syn::Visibility) {}

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if test_only(&item.attrs) {
            if item.content.is_none() {
                self.test_files.push(item.ident.to_string());
            }
            return;
        }
        self.inline.push(item.ident.to_string());
        syn::visit::visit_item_mod(self, item);
        self.inline.pop();
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if matches!(
            segments.first().map(String::as_str),
            Some("crate" | "super" | "self")
        ) {
            self.paths.push((self.inline.clone(), segments));
        }
        syn::visit::visit_path(self, path);
    }
}

/// A path made absolute from the module `at` (a file's module plus the
/// inline modules around the path); `None` for other crates' paths.
fn absolute(
    at: &[String],
    path: &[String],
    modules: &BTreeMap<Vec<String>, PathBuf>,
) -> Option<Vec<String>> {
    let (mut full, rest) = match path.first().map(String::as_str) {
        Some("crate") => (Vec::new(), &path[1..]),
        Some("self") => (at.to_vec(), &path[1..]),
        Some("super") => (at.to_vec(), path),
        // A relative `use child::…`.
        Some(first) => {
            let mut child = at.to_vec();
            child.push(first.to_string());
            if !modules.contains_key(&child) {
                return None;
            }
            (at.to_vec(), path)
        }
        None => return None,
    };
    for segment in rest {
        match segment.as_str() {
            "super" => {
                full.pop();
            }
            "self" => {}
            other => full.push(other.to_string()),
        }
    }
    Some(full)
}

/// The file that defines what `path` (absolute) names: the deepest module
/// file on the path, followed through `pub use` re-exports of module files.
fn defining_file(
    path: &[String],
    modules: &BTreeMap<Vec<String>, PathBuf>,
    reexports: &BTreeMap<(Vec<String>, String), Vec<String>>,
    depth: usize,
) -> Option<Vec<String>> {
    let module = (0..=path.len())
        .rev()
        .map(|k| path[..k].to_vec())
        .find(|candidate| modules.contains_key(candidate))?;
    if depth < 8
        && let Some(name) = path.get(module.len())
        && let Some(target) = reexports.get(&(module.clone(), name.clone()))
    {
        let mut target = target.clone();
        target.extend(path[module.len() + 1..].iter().cloned());
        return defining_file(&target, modules, reexports, depth + 1).or(Some(module));
    }
    Some(module)
}

/// What imports what in one crate.
struct Imports {
    /// `file → a file it imports`.
    files: BTreeSet<(PathBuf, PathBuf)>,
    /// `top-level module → a top-level module it imports`.
    folders: BTreeSet<(String, String)>,
}

/// The imports between the files and top-level modules of the crate at `root`.
fn imports(root: &Path) -> Imports {
    let modules = modules(root);
    let mut parsed = Vec::new();
    let mut reexports = BTreeMap::new();
    let mut test_modules: BTreeSet<Vec<String>> = BTreeSet::new();
    for (module, path) in &modules {
        let source = std::fs::read_to_string(path).unwrap();
        let file = syn::parse_file(&source)
            .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
        let mut paths = Paths::default();
        paths.visit_file(&file);
        for name in &paths.test_files {
            let mut child = module.clone();
            child.push(name.clone());
            test_modules.insert(child);
        }
        for (name, target) in &paths.reexports {
            if let Some(target) = absolute(module, target, &modules) {
                reexports.insert((module.clone(), name.clone()), target);
            }
        }
        parsed.push((module, path, paths.paths));
    }
    let mut files = BTreeSet::new();
    let mut folders = BTreeSet::new();
    // A test-only module file, and everything under it, is left out.
    let is_test = |m: &[String]| (1..=m.len()).any(|k| test_modules.contains(&m[..k]));
    for (module, path, named) in parsed {
        if is_test(module) {
            continue;
        }
        for (inline, named) in named {
            let mut at = module.clone();
            at.extend(inline);
            let Some(target) = absolute(&at, &named, &modules)
                .and_then(|full| defining_file(&full, &modules, &reexports, 0))
            else {
                continue;
            };
            if is_test(&target) {
                continue;
            }
            let target_file = &modules[&target];
            if target_file != path {
                files.insert((path.clone(), target_file.clone()));
            }
            if let (Some(from), Some(to)) = (module.first(), target.first())
                && from != to
            {
                folders.insert((from.clone(), to.clone()));
            }
        }
    }
    Imports { files, folders }
}

/// One cycle in each strongly connected part of `edges` with more than one
/// member (Tarjan's algorithm), each as the members in import order.
fn cycles<T: Ord + Clone>(edges: &BTreeSet<(T, T)>) -> Vec<Vec<T>> {
    let mut next: BTreeMap<&T, Vec<&T>> = BTreeMap::new();
    for (a, b) in edges {
        next.entry(a).or_default().push(b);
        next.entry(b).or_default();
    }
    let nodes: Vec<&T> = next.keys().copied().collect();
    let index_of: BTreeMap<&T, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let succ: Vec<Vec<usize>> = nodes
        .iter()
        .map(|n| next[n].iter().map(|m| index_of[m]).collect())
        .collect();
    // Iterative Tarjan: index, lowlink, on-stack, and an explicit call stack.
    let n = nodes.len();
    let (mut index, mut low, mut on) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
    let (mut stack, mut parts, mut counter) = (Vec::new(), Vec::new(), 0);
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut calls = vec![(root, 0usize)];
        index[root] = counter;
        low[root] = counter;
        counter += 1;
        stack.push(root);
        on[root] = true;
        while let Some(&mut (v, ref mut child)) = calls.last_mut() {
            if let Some(&w) = succ[v].get(*child) {
                *child += 1;
                if index[w] == usize::MAX {
                    index[w] = counter;
                    low[w] = counter;
                    counter += 1;
                    stack.push(w);
                    on[w] = true;
                    calls.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            calls.pop();
            if let Some(&(parent, _)) = calls.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut part = Vec::new();
                while let Some(w) = stack.pop() {
                    on[w] = false;
                    part.push(w);
                    if w == v {
                        break;
                    }
                }
                if part.len() > 1 {
                    parts.push(part);
                }
            }
        }
    }
    // Within each part, walk imports that stay in it until a member repeats.
    parts
        .into_iter()
        .map(|part| {
            let members: BTreeSet<usize> = part.iter().copied().collect();
            let mut path = vec![part[0]];
            loop {
                let last = *path.last().unwrap_or(&part[0]);
                let Some(&step) = succ[last].iter().find(|w| members.contains(w)) else {
                    break;
                };
                if let Some(at) = path.iter().position(|p| *p == step) {
                    path.drain(..at);
                    break;
                }
                path.push(step);
            }
            path.into_iter().map(|i| nodes[i].clone()).collect()
        })
        .collect()
}

#[test]
fn no_crate_has_a_cycle_of_imports_between_files_or_top_level_modules() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut problems = Vec::new();
    for krate in CRATES {
        let Imports { files, folders } = imports(&workspace.join(krate));
        for cycle in cycles(&files) {
            let names: Vec<String> = cycle.iter().map(|p| p.display().to_string()).collect();
            problems.push(format!("{} -> {}", names.join(" -> "), names[0]));
        }
        for cycle in cycles(&folders) {
            problems.push(format!(
                "{krate}: modules `{}` -> `{}`",
                cycle.join("` -> `"),
                cycle[0]
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "these import each other in a cycle:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_checker_sees_a_cycle_when_there_is_one() {
    let dir = std::env::temp_dir().join(format!("quiver-layering-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("b")).unwrap();
    std::fs::write(dir.join("lib.rs"), "mod a; mod b;").unwrap();
    std::fs::write(dir.join("a.rs"), "use crate::b::thing::X; pub struct Y;").unwrap();
    std::fs::write(dir.join("b/mod.rs"), "pub mod thing;").unwrap();
    std::fs::write(
        dir.join("b/thing.rs"),
        "pub struct X; fn f() -> crate::a::Y { crate::a::Y }",
    )
    .unwrap();
    let Imports { files, folders } = imports(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(files.contains(&(dir.join("a.rs"), dir.join("b/thing.rs"))));
    assert!(files.contains(&(dir.join("b/thing.rs"), dir.join("a.rs"))));
    assert!(folders.contains(&("a".into(), "b".into())));
    assert!(folders.contains(&("b".into(), "a".into())));
}

#[test]
fn the_checker_sees_a_three_module_cycle() {
    let dir = std::env::temp_dir().join(format!("quiver-layering-3-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("lib.rs"), "mod a; mod b; mod c;").unwrap();
    std::fs::write(dir.join("a.rs"), "use crate::b::B; pub struct A;").unwrap();
    std::fs::write(dir.join("b.rs"), "use crate::c::C; pub struct B;").unwrap();
    std::fs::write(
        dir.join("c.rs"),
        "pub struct C; fn f() -> crate::a::A { crate::a::A }",
    )
    .unwrap();
    let Imports { files, folders } = imports(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    // No two of them import each other: only a cycle finder sees it.
    assert!(!files.contains(&(dir.join("b.rs"), dir.join("a.rs"))));
    let found = cycles(&files);
    assert_eq!(found.len(), 1, "{found:?}");
    let mut members = found[0].clone();
    members.sort();
    assert_eq!(
        members,
        [dir.join("a.rs"), dir.join("b.rs"), dir.join("c.rs")]
    );
    assert_eq!(cycles(&folders).len(), 1);
    // And a chain without the closing import is no cycle.
    let chain: BTreeSet<(u8, u8)> = [(1, 2), (2, 3)].into_iter().collect();
    assert!(cycles(&chain).is_empty());
}

#[test]
fn test_only_code_makes_no_layer() {
    let dir = std::env::temp_dir().join(format!("quiver-layering-t-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("lib.rs"),
        "mod a; mod b; #[cfg(test)] mod support;",
    )
    .unwrap();
    std::fs::write(dir.join("a.rs"), "use crate::b::B; pub struct A;").unwrap();
    std::fs::write(
        dir.join("b.rs"),
        "pub struct B; #[cfg(test)] mod tests { use crate::a::A; use crate::support::S; }",
    )
    .unwrap();
    std::fs::write(dir.join("support.rs"), "use crate::a::A; pub struct S;").unwrap();
    let Imports { files, .. } = imports(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        files,
        BTreeSet::from([(dir.join("a.rs"), dir.join("b.rs"))]),
        "only the non-test import counts"
    );
}

/// Every crate of the workspace is under the rules that read [`CRATES`]
/// (the cycle check here, the error and length rules in code_rules.rs): a
/// new crate left out of the list fails here.
#[test]
fn every_workspace_crate_is_checked() {
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .expect("the workspace manifest");
    let members = manifest
        .lines()
        .find_map(|line| line.trim().strip_prefix("members = "))
        .expect("a one-line `members = [...]`");
    let mut missing = Vec::new();
    for member in members.trim_matches(['[', ']']).split(',') {
        let member = member.trim().trim_matches('"');
        if !CRATES.contains(&format!("{member}/src").as_str()) {
            missing.push(member.to_string());
        }
    }
    assert!(members.contains("proto"), "read no members from {members}");
    assert!(missing.is_empty(), "not in CRATES: {missing:?}");
}
