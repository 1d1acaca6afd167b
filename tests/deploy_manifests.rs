//! Every `quiver` invocation in the Kubernetes manifests and the compose file
//! uses subcommands and flags the binary has: each is checked against
//! `quiver … --help`, so a renamed flag cannot leave `deploy/` behind. And
//! the files themselves are valid: the Kubernetes objects against the API
//! schemas of Kubernetes 1.37 (`kubernetes-validate --strict`: unknown
//! fields are errors), the compose file against the Compose specification's
//! JSON schema. Both checkers run offline; `scripts/install-deploy-checkers.sh`
//! installs them.

use crate::support;

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
    process::Command,
};

/// What `quiver <path> --help` says: its flags (and whether each takes a
/// value) and its subcommands.
#[derive(Default)]
struct Help {
    flags: BTreeMap<String, bool>,
    subcommands: BTreeSet<String>,
}

fn load_help(path: &[String]) -> Help {
    let output = Command::new(support::quiver_bin())
        .args(path)
        .arg("--help")
        .output()
        .expect("run quiver --help");
    assert!(
        output.status.success(),
        "quiver {} --help failed: {}",
        path.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut parsed = Help::default();
    let mut in_commands = false;
    for line in text.lines() {
        if line.starts_with("Commands:") {
            in_commands = true;
            continue;
        }
        if !line.starts_with(' ') {
            in_commands = false;
        }
        let trimmed = line.trim_start();
        if in_commands {
            if let Some(name) = trimmed.split_whitespace().next() {
                parsed.subcommands.insert(name.to_string());
            }
            continue;
        }
        // `-c, --config <CONFIG>` or `--bootstrap`.
        for (i, word) in trimmed.split_whitespace().enumerate() {
            if i > 2 {
                break;
            }
            let word = word.trim_end_matches(',');
            if let Some(flag) = word.strip_prefix("--") {
                let takes_value = trimmed
                    .split_whitespace()
                    .nth(i + 1)
                    .is_some_and(|next| next.starts_with('<'));
                parsed.flags.insert(format!("--{flag}"), takes_value);
            }
        }
    }
    parsed
}

/// The `quiver` invocations in one file, as argument lists (without
/// `quiver`): YAML flow arrays of a container's `args`/`command`, and shell
/// lines that run `quiver …`.
fn invocations(text: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        for key in ["args: [", "command: ["] {
            if let Some(rest) = trimmed.strip_prefix(key) {
                let array = format!("[{rest}");
                let items: Vec<String> =
                    serde_json::from_str(&array).unwrap_or_else(|e| panic!("{line}: {e}"));
                let items = match items.first().map(String::as_str) {
                    // A shell (its script's lines are read below), or
                    // another image's program (the compose file's etcd).
                    Some("/bin/sh" | "etcd") => continue,
                    Some("quiver") => items[1..].to_vec(),
                    _ => items,
                };
                found.push(items);
            }
        }
        if let Some(at) = trimmed.find("quiver ") {
            let before = &trimmed[..at];
            // A shell command, not an image name or prose in a comment.
            if !trimmed.starts_with('#') && (before.is_empty() || before.ends_with(' ')) {
                let words: Vec<String> = trimmed[at + "quiver ".len()..]
                    .split_whitespace()
                    .take_while(|w| !["||", "&&", ";", "|"].contains(w))
                    .map(str::to_string)
                    .collect();
                if !words.is_empty() && !trimmed.contains("image:") {
                    found.push(words);
                }
            }
        }
    }
    found
}

/// Checks one invocation; the subcommand path it ran.
fn check(args: &[String], cache: &mut BTreeMap<Vec<String>, Help>, file: &Path) -> String {
    let mut path: Vec<String> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let word = &args[i];
        let known = cache
            .entry(path.clone())
            .or_insert_with(|| load_help(&path));
        if word.starts_with("--") {
            let flag = word.split('=').next().unwrap().to_string();
            let takes_value = *known.flags.get(&flag).unwrap_or_else(|| {
                panic!(
                    "{}: `quiver {}` has no flag {flag} (in: quiver {})",
                    file.display(),
                    path.join(" "),
                    args.join(" ")
                )
            });
            i += if takes_value && !word.contains('=') {
                2
            } else {
                1
            };
            continue;
        }
        if known.subcommands.contains(word) {
            path.push(word.clone());
        } else {
            assert!(
                !path.is_empty(),
                "{}: `{word}` is not a quiver subcommand (in: quiver {})",
                file.display(),
                args.join(" ")
            );
        }
        i += 1;
    }
    path.join(" ")
}

fn manifests() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("kubernetes"))
        .expect("deploy/kubernetes")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.push(root.join("compose.yaml"));
    files.sort();
    files
}

#[test]
fn every_flag_the_deployment_manifests_use_exists() {
    let mut cache = BTreeMap::new();
    let mut roles = BTreeSet::new();
    let mut checked = 0;
    for file in manifests() {
        let text = std::fs::read_to_string(&file).unwrap();
        for args in invocations(&text) {
            roles.insert(check(&args, &mut cache, &file));
            checked += 1;
        }
    }
    // Not vacuous: every role and the operator commands were seen.
    for role in [
        "control-plane",
        "executor",
        "edge",
        "ctl cluster add-learner",
        "ctl cluster promote",
        "ctl upstream add",
    ] {
        assert!(
            roles.contains(role),
            "no `quiver {role}` in deploy/: {roles:?}"
        );
    }
    assert!(checked >= 10, "only {checked} invocations found");
}

#[test]
fn a_misspelt_flag_is_caught() {
    let mut cache = BTreeMap::new();
    let args: Vec<String> = [
        "edge",
        "--listen",
        "0.0.0.0:8080",
        "--control-plain",
        "cp:7401",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        check(&args, &mut cache, Path::new("example.yaml"))
    }));
    let message = caught
        .expect_err("an unknown flag must fail the check")
        .downcast::<String>()
        .map(|m| *m)
        .unwrap_or_default();
    assert!(message.contains("--control-plain"), "{message}");
}

/// Where `scripts/install-deploy-checkers.sh` put the checkers (`None`: a
/// partial run without them; skip).
fn deploy_checkers() -> Option<PathBuf> {
    let dir = match std::env::var_os("QUIVER_DEPLOY_CHECK_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"));
            cache.join("quiver/deploy-check")
        }
    };
    support::partial_run::required_input(
        &dir.join("compose_spec.json"),
        "run scripts/install-deploy-checkers.sh",
    )?;
    Some(dir)
}

/// `kubernetes-validate --strict` on `files`: whether it passed, and what it said.
fn kubernetes_validate(checkers: &Path, files: &[PathBuf]) -> (bool, String) {
    support::output_of(
        Command::new(checkers.join("venv/bin/kubernetes-validate"))
            .args(["--strict", "--kubernetes-version", "1.37.0", "--no-warn"])
            .args(files),
    )
}

/// The Compose schema's complaints about `file` (none: valid).
fn compose_errors(checkers: &Path, file: &Path) -> Vec<String> {
    let check = r#"
import json, sys, yaml, jsonschema
schema = json.load(open(sys.argv[1]))
document = yaml.safe_load(open(sys.argv[2]))
for error in jsonschema.Draft7Validator(schema).iter_errors(document):
    print("/".join(str(p) for p in error.path) + ": " + error.message)
"#;
    let output = Command::new(checkers.join("venv/bin/python"))
        .args(["-c", check])
        .arg(checkers.join("compose_spec.json"))
        .arg(file)
        .output()
        .expect("run the compose schema check");
    assert!(
        output.status.success(),
        "the compose check itself failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_kubernetes_manifests_are_valid_kubernetes_objects() {
    let Some(checkers) = deploy_checkers() else {
        return;
    };
    let files: Vec<PathBuf> = manifests()
        .into_iter()
        .filter(|f| f.parent().is_some_and(|p| p.ends_with("kubernetes")))
        .collect();
    assert!(files.len() >= 4, "{files:?}");
    let (passed, said) = kubernetes_validate(&checkers, &files);
    assert!(passed, "{said}");
    for kind in [
        "statefulset/",
        "deployment/quiver-edge",
        "deployment/quiver-executor",
        "horizontalpodautoscaler/",
        "poddisruptionbudget/",
        "service/",
    ] {
        assert!(said.contains(kind), "no {kind} was checked: {said}");
    }

    // The checker can fail: a misspelt field in a copy of the edge's.
    let dir = tempfile::tempdir().unwrap();
    let edge =
        std::fs::read_to_string(files.iter().find(|f| f.ends_with("edge.yaml")).unwrap()).unwrap();
    assert!(edge.contains("containerPort:"));
    let broken = dir.path().join("edge.yaml");
    std::fs::write(
        &broken,
        edge.replacen("containerPort:", "containerPorts:", 1),
    )
    .unwrap();
    let (passed, said) = kubernetes_validate(&checkers, &[broken]);
    assert!(!passed, "a misspelt field passed: {said}");
    assert!(
        said.contains("did not validate for resource deployment/quiver-edge")
            && said.contains("containerPort"),
        "{said}"
    );
}

#[test]
fn the_compose_file_matches_the_compose_specification() {
    let Some(checkers) = deploy_checkers() else {
        return;
    };
    let compose = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/compose.yaml");
    let errors = compose_errors(&checkers, &compose);
    assert!(errors.is_empty(), "{errors:#?}");

    // The check can fail: a misspelt service key in a copy.
    let text = std::fs::read_to_string(&compose).unwrap();
    assert!(text.contains("depends_on:"));
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("compose.yaml");
    std::fs::write(&broken, text.replacen("depends_on:", "depend_on:", 1)).unwrap();
    let errors = compose_errors(&checkers, &broken);
    assert!(
        errors.iter().any(|e| e.contains("depend_on")),
        "a misspelt key passed: {errors:#?}"
    );
}
