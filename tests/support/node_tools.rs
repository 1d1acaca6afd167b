//! The Node tooling some tests drive (Node 22, the MCP Inspector CLI, the
//! reference MCP servers), installed by `scripts/install-node-tools.sh` into
//! `.tools/node` at the pinned versions. Tests call the script themselves: it is
//! idempotent and serialises concurrent callers, so a test never skips for want
//! of a tool; without npm it fails with the script's message.

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
};

/// `.tools/node/node_modules` of the repository, after the install script ran.
pub fn node_modules() -> PathBuf {
    node();
    repo().join(".tools/node/node_modules")
}

/// The Node 22 binary the install script put in `.tools/node`.
pub fn node() -> PathBuf {
    static NODE: OnceLock<PathBuf> = OnceLock::new();
    NODE.get_or_init(|| {
        let output = Command::new(repo().join("scripts/install-node-tools.sh"))
            .output()
            .expect("run scripts/install-node-tools.sh");
        assert!(
            output.status.success(),
            "scripts/install-node-tools.sh failed (it needs npm and the npm registry):\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let path = String::from_utf8_lossy(&output.stdout).trim().to_string();
        PathBuf::from(path)
    })
    .clone()
}

/// A `node <script>` command with Node 22 first on `PATH`, so tools that spawn
/// `node` themselves (the Inspector's launcher) get the same one.
pub fn node_command(script: &Path) -> Command {
    let node = node();
    let bin_dir = node.parent().expect("node has a parent directory");
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin_dir.to_path_buf()];
    dirs.extend(std::env::split_paths(&path));
    let mut command = Command::new(&node);
    command
        .arg(script)
        .env("PATH", std::env::join_paths(dirs).expect("PATH joins"));
    command
}

/// The entry script of an installed package's binary, e.g.
/// `package_file("@modelcontextprotocol/server-memory", "dist/index.js")`.
pub fn package_file(package: &str, file: &str) -> PathBuf {
    let path = node_modules().join(package).join(file);
    assert!(
        path.exists(),
        "{} is missing; re-run scripts/install-node-tools.sh",
        path.display()
    );
    path
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}
