//! Rules of the code base that hold by themselves: a change that breaks one
//! fails here, whoever makes it and whatever they remember.
//!
//! - No function, type or trait of a library crate (its `src/` and its own
//!   `tests/`) has `String` as the error of a `Result`: callers need to tell
//!   failures apart (the console maps them to HTTP statuses, retries look at
//!   what failed), and a typed error keeps its source. The binary crate
//!   (`src/`, `tests/`) and `#[cfg(test)]` modules may.
//! - No hand-written source file is over 800 lines.
//! - A control-plane message carries JSON text only where
//!   docs/architecture.md's "JSON in control-plane messages" allows it.

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
};

use syn::visit::Visit;

/// The workspace's root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Source roots of the library crates: the workspace's, less the binary
/// and the test servers.
fn libraries() -> impl Iterator<Item = &'static str> {
    crate::import_layering::CRATES
        .iter()
        .copied()
        .filter(|root| *root != "src" && !root.starts_with("tests/"))
}

/// Every file under `dir` (recursively) whose name ends in one of `exts`,
/// leaving out build output, dependencies and VCS data.
fn files(dir: &Path, exts: &[&str]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !matches!(
                    name.as_str(),
                    "target" | "node_modules" | ".git" | ".quiver"
                ) && !name.starts_with('.')
                {
                    pending.push(path);
                }
            } else if exts.iter().any(|ext| name.ends_with(&format!(".{ext}"))) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Whether `attrs` hold `#[cfg(test)]`.
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<syn::Meta>()
                .is_ok_and(|meta| meta.path().is_ident("test"))
    })
}

/// Finds `Result<_, String>` in code that is not test-only, naming the item
/// it is in; and the files of `#[cfg(test)] mod name;` declarations.
#[derive(Default)]
struct StringErrors {
    item: Vec<String>,
    found: Vec<String>,
    test_modules: Vec<String>,
}

impl StringErrors {
    fn within(&mut self, name: String, visit: impl FnOnce(&mut Self)) {
        self.item.push(name);
        visit(self);
        self.item.pop();
    }
}

/// Whether `ty` is `String` (or `std::string::String`).
fn is_string(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none()
        && p.path.segments.last().is_some_and(|s| s.ident == "String" && s.arguments.is_none()))
}

impl<'ast> Visit<'ast> for StringErrors {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if test_only(&m.attrs) {
            if m.content.is_none() {
                self.test_modules.push(m.ident.to_string());
            }
            return;
        }
        self.within(format!("mod {}", m.ident), |v| {
            syn::visit::visit_item_mod(v, m)
        });
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if test_only(&f.attrs) {
            return;
        }
        self.within(format!("fn {}", f.sig.ident), |v| {
            syn::visit::visit_item_fn(v, f)
        });
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if test_only(&i.attrs) {
            return;
        }
        syn::visit::visit_item_impl(self, i);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if test_only(&f.attrs) {
            return;
        }
        self.within(format!("fn {}", f.sig.ident), |v| {
            syn::visit::visit_impl_item_fn(v, f)
        });
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        self.within(format!("fn {}", f.sig.ident), |v| {
            syn::visit::visit_trait_item_fn(v, f)
        });
    }

    fn visit_item_struct(&mut self, s: &'ast syn::ItemStruct) {
        if test_only(&s.attrs) {
            return;
        }
        self.within(format!("struct {}", s.ident), |v| {
            syn::visit::visit_item_struct(v, s)
        });
    }

    fn visit_item_enum(&mut self, e: &'ast syn::ItemEnum) {
        if test_only(&e.attrs) {
            return;
        }
        self.within(format!("enum {}", e.ident), |v| {
            syn::visit::visit_item_enum(v, e)
        });
    }

    fn visit_type_path(&mut self, p: &'ast syn::TypePath) {
        if let Some(last) = p.path.segments.last()
            && last.ident == "Result"
            && let syn::PathArguments::AngleBracketed(args) = &last.arguments
        {
            let types: Vec<&syn::Type> = args
                .args
                .iter()
                .filter_map(|a| match a {
                    syn::GenericArgument::Type(t) => Some(t),
                    _ => None,
                })
                .collect();
            if types.len() == 2 && is_string(types[1]) {
                self.found.push(self.item.join(" › "));
            }
        }
        syn::visit::visit_type_path(self, p);
    }
}

/// Where the child modules of `file` live.
fn module_dir(file: &Path) -> PathBuf {
    let stem = file.file_stem().unwrap().to_string_lossy();
    let parent = file.parent().unwrap();
    match stem.as_ref() {
        "lib" | "main" | "mod" => parent.to_path_buf(),
        stem => parent.join(stem),
    }
}

#[test]
fn no_library_code_has_a_string_as_its_error() {
    let mut offences = Vec::new();
    let mut scanned = 0;
    for library in libraries() {
        let mut files = files(&root().join(library), &["rs"]);
        assert!(!files.is_empty(), "{library} holds no source");
        // The crate's own integration tests and their helpers are its code too.
        let tests = Path::new(library).with_file_name("tests");
        files.extend(self::files(&root().join(tests), &["rs"]));
        let mut test_files = BTreeSet::new();
        // Parents come before their children in path order only sometimes:
        // find the test-only files first.
        let parsed: Vec<(PathBuf, syn::File)> = files
            .into_iter()
            .map(|path| {
                let text = std::fs::read_to_string(&path).unwrap();
                let file = syn::parse_file(&text)
                    .unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
                (path, file)
            })
            .collect();
        for (path, file) in &parsed {
            let mut visit = StringErrors::default();
            visit.visit_file(file);
            for module in visit.test_modules {
                let dir = module_dir(path);
                test_files.insert(dir.join(format!("{module}.rs")));
                test_files.insert(dir.join(&module));
            }
        }
        for (path, file) in &parsed {
            if test_files
                .iter()
                .any(|test| path == test || path.starts_with(test))
            {
                continue;
            }
            scanned += 1;
            let mut visit = StringErrors::default();
            visit.visit_file(file);
            let shown = path.strip_prefix(root()).unwrap().display().to_string();
            offences.extend(visit.found.into_iter().map(|at| format!("{shown}: {at}")));
        }
    }
    assert!(scanned > 100, "only {scanned} library files found");
    assert!(
        offences.is_empty(),
        "`Result<_, String>` in library code (give the failure a type of its own):\n{}",
        offences.join("\n")
    );
}

#[test]
fn the_string_error_rule_sees_what_it_should() {
    let code = r#"
        pub fn a() -> Result<(), String> { Ok(()) }
        pub trait T { fn b(&self) -> BoxFuture<'_, std::result::Result<u8, std::string::String>>; }
        struct S { answer: Result<Callback, String> }
        pub fn fine() -> Result<String, Error> { todo!() }
        pub fn io() -> std::io::Result<String> { todo!() }
        #[cfg(test)]
        mod tests { fn c() -> Result<(), String> { Ok(()) } }
    "#;
    let mut visit = StringErrors::default();
    visit.visit_file(&syn::parse_file(code).unwrap());
    assert_eq!(visit.found, ["fn a", "fn b", "struct S"]);
}

/// Longest a hand-written source file may be.
const MAX_LINES: usize = 800;

#[test]
fn no_hand_written_source_file_is_over_800_lines() {
    let mut long = Vec::new();
    let all = files(&root(), &["rs", "js", "mjs", "py", "sh", "proto", "css"]);
    assert!(all.len() > 200, "only {} source files found", all.len());
    for path in all {
        let lines = std::fs::read_to_string(&path).unwrap().lines().count();
        if lines > MAX_LINES {
            long.push(format!(
                "{}: {lines} lines",
                path.strip_prefix(root()).unwrap().display()
            ));
        }
    }
    assert!(
        long.is_empty(),
        "source files over {MAX_LINES} lines (split them by what their parts do):\n{}",
        long.join("\n")
    );
}

/// The control plane's own protocol files.
const CONTROL_PLANE_PROTOS: &[&str] = &[
    "admin.proto",
    "admin_cluster.proto",
    "control_plane.proto",
    "manifest.proto",
    "registry.proto",
];

/// `Message.field` of every string field of `proto` whose name or comment
/// says it holds JSON text.
fn json_fields(proto: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut messages: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut comment = String::new();
    for line in proto.lines() {
        let line = line.trim();
        if let Some(text) = line.strip_prefix("//") {
            comment.push_str(text);
            comment.push(' ');
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() == Some(&"message") && line.ends_with('{') {
            messages.push((words[1].to_string(), depth));
        }
        let field = match words.as_slice() {
            ["string", name, "=", ..] | ["optional" | "repeated", "string", name, "=", ..] => {
                Some(*name)
            }
            _ => None,
        };
        if let Some(name) = field
            && (name.ends_with("_json") || comment.contains("JSON"))
            && let Some((message, _)) = messages.last()
        {
            found.insert(format!("{message}.{name}"));
        }
        depth += line.matches('{').count();
        depth -= line.matches('}').count();
        while messages.last().is_some_and(|(_, at)| *at >= depth) {
            messages.pop();
        }
        comment.clear();
    }
    found
}

/// The fields the architecture allows JSON text in, from its table.
fn allowed_json_fields() -> BTreeSet<String> {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let section = doc
        .split("### JSON in control-plane messages")
        .nth(1)
        .expect("docs/architecture.md has a section \"JSON in control-plane messages\"");
    let section = section.split("\n#").next().unwrap();
    section
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split('`').next())
        .map(str::to_string)
        .collect()
}

#[test]
fn control_plane_messages_carry_json_only_where_the_architecture_allows() {
    let dir = root().join("proto/proto/quiver/v1");
    let mut found = BTreeSet::new();
    for proto in CONTROL_PLANE_PROTOS {
        let text = std::fs::read_to_string(dir.join(proto)).unwrap();
        found.extend(json_fields(&text));
    }
    let allowed = allowed_json_fields();
    assert!(!allowed.is_empty(), "the allow-list is empty");
    let unlisted: Vec<_> = found.difference(&allowed).collect();
    assert!(
        unlisted.is_empty(),
        "JSON text in control-plane messages the architecture does not allow (give them a type, or say why in docs/architecture.md): {unlisted:?}"
    );
    let stale: Vec<_> = allowed.difference(&found).collect();
    assert!(
        stale.is_empty(),
        "docs/architecture.md allows JSON in fields that no longer carry it: {stale:?}"
    );
}

#[test]
fn the_json_field_rule_sees_what_it_should() {
    let proto = r#"
message Outer {
  // The definition, as JSON.
  string definition = 1;
  string name = 2;
  message Inner {
    optional string arguments_json = 3;
  }
  repeated string logs_json = 4;
}
message Other { string plain = 1; }
"#;
    let found: Vec<String> = json_fields(proto).into_iter().collect();
    assert_eq!(
        found,
        [
            "Inner.arguments_json",
            "Outer.definition",
            "Outer.logs_json"
        ]
    );
}

/// The worker a default (release) build ships takes no benchmark flag: the
/// hooks that skip the OS lock-down exist only with `--features bench-hooks`.
#[cfg(not(feature = "bench-hooks"))]
#[test]
fn the_shipped_worker_has_no_benchmark_flag() {
    for flag in ["--bench-without-lock-down", "--bench-fresh-runtimes"] {
        let output = std::process::Command::new(crate::support::quiver_bin())
            .args(["__worker", flag])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{flag} was accepted");
        assert!(stderr.contains("unexpected argument"), "{flag}: {stderr}");
    }
}

/// Where `needle` first occurs in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    let mut at = 0;
    while let Some(offset) = haystack.get(at..)?.iter().position(|&b| b == first) {
        let start = at + offset;
        if haystack.get(start + 1..start + needle.len()) == Some(rest) {
            return Some(start);
        }
        at = start + 1;
    }
    None
}

/// The shipped `quiver` holds none of the benchmarks' or the test kit's
/// code: they are binaries of their own beside it (`quiver bench` runs
/// `quiver-bench`), and nothing of their crates is linked into it. Checked on
/// the built binaries, by the crates' symbols and source paths, which the
/// binaries that do hold them show (so the check can see them).
#[test]
fn the_shipped_binary_holds_no_benchmark_or_test_kit_code() {
    let read = |path: &str| std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let quiver = read(crate::support::quiver_bin());
    let kits = [
        (
            env!("CARGO_BIN_EXE_quiver-bench"),
            ["quiver_bench", "bench/src/"],
        ),
        (
            env!("CARGO_BIN_EXE_quiver-test-kit"),
            ["quiver_test_kit", "test-kit/src/"],
        ),
    ];
    for (binary, marks) in kits {
        let kit = read(binary);
        for mark in marks {
            assert!(
                find(&kit, mark.as_bytes()).is_some(),
                "{binary} does not show `{mark}`: the check would see nothing"
            );
            assert_eq!(
                find(&quiver, mark.as_bytes()),
                None,
                "the shipped quiver holds `{mark}`"
            );
        }
    }
}
