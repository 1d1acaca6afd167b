//! The layering of every crate's files: no two files of one crate import
//! each other, and no two top-level modules of one crate do either (a folder
//! such as `engine/` may use `ipc/`, but then `ipc/` must not use `engine/`).
//! Imports are read with `syn` from `use` trees and from every path in the
//! code that starts with `crate::`, `super::` or `self::`.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use syn::visit::Visit;

/// Source roots of the workspace's crates (the binary's included).
const CRATES: &[&str] = &[
    "proto/src",
    "upstream/src",
    "view/src",
    "screen/src",
    "contract/src",
    "control-plane/src",
    "executor/src",
    "edge/src",
    "src",
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
    for (module, path) in &modules {
        let source = std::fs::read_to_string(path).unwrap();
        let file = syn::parse_file(&source)
            .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
        let mut paths = Paths::default();
        paths.visit_file(&file);
        for (name, target) in &paths.reexports {
            if let Some(target) = absolute(module, target, &modules) {
                reexports.insert((module.clone(), name.clone()), target);
            }
        }
        parsed.push((module, path, paths.paths));
    }
    let mut files = BTreeSet::new();
    let mut folders = BTreeSet::new();
    for (module, path, named) in parsed {
        for (inline, named) in named {
            let mut at = module.clone();
            at.extend(inline);
            let Some(target) = absolute(&at, &named, &modules)
                .and_then(|full| defining_file(&full, &modules, &reexports, 0))
            else {
                continue;
            };
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

#[test]
fn no_two_files_or_top_level_modules_of_a_crate_import_each_other() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut problems = Vec::new();
    for krate in CRATES {
        let Imports { files, folders } = imports(&workspace.join(krate));
        for (a, b) in &files {
            if a < b && files.contains(&(b.clone(), a.clone())) {
                problems.push(format!("{} <-> {}", a.display(), b.display()));
            }
        }
        for (a, b) in &folders {
            if a < b && folders.contains(&(b.clone(), a.clone())) {
                problems.push(format!("{krate}: modules `{a}` <-> `{b}`"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "these import each other:\n{}",
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
