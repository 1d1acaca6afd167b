//! A newcomer's terminal session for the documentation tests: a checkout in
//! a temporary directory (the repository's `scripts/`, `deploy/` and
//! `examples/`, with the binary under test as `target/release/quiver` and as
//! `quiver` on `PATH`), an environment that carries from one block to the
//! next as it would in one shell, and the servers the blocks start, each
//! running until the session stops it.
//!
//! Nothing in a block is rewritten. What differs from a reader's machine is
//! only where tools come from: `python3` is the virtual environment of
//! `scripts/install-python-client.sh` (`pip install mcp`), Node 22 is the one
//! of `scripts/install-node-tools.sh`, and `cargo` runs in the repository.

use std::{
    collections::BTreeMap,
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex, mpsc},
    time::Duration,
};

use super::{markdown_blocks, node_tools, quiver_bin};

/// What one command of a block did.
#[derive(Debug, Clone)]
pub struct CommandRun {
    /// The command as the block has it.
    pub command: String,
    /// Its exit status (`None` when it ran in the background).
    pub status: Option<i32>,
    /// What it printed, stdout and stderr together.
    pub output: String,
}

/// A process a block started that keeps running.
struct Server {
    command: String,
    child: Child,
    startup_line: String,
    log: Arc<Mutex<Vec<String>>>,
}

/// The session.
pub struct DocSession {
    dir: tempfile::TempDir,
    env: BTreeMap<String, String>,
    servers: Vec<Server>,
    blocks_run: usize,
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn install_python_client() -> PathBuf {
    let output = Command::new(repo().join("scripts/install-python-client.sh"))
        .output()
        .expect("run scripts/install-python-client.sh");
    assert!(
        output.status.success(),
        "scripts/install-python-client.sh failed (it needs python3-venv and PyPI):\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
}

impl DocSession {
    /// A fresh checkout and an environment without any `QUIVER_` variable.
    pub fn new() -> DocSession {
        let dir = tempfile::tempdir().expect("a temporary directory");
        for shared in ["scripts", "deploy", "examples"] {
            std::os::unix::fs::symlink(repo().join(shared), dir.path().join(shared))
                .expect("link into the checkout");
        }
        std::fs::create_dir_all(dir.path().join("target/release")).expect("target/release");
        std::os::unix::fs::symlink(quiver_bin(), dir.path().join("target/release/quiver"))
            .expect("link the binary");
        let bin = dir.path().join(".doc-bin");
        std::fs::create_dir_all(&bin).expect(".doc-bin");
        std::os::unix::fs::symlink(quiver_bin(), bin.join("quiver")).expect("link quiver");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        std::fs::write(
            bin.join("cargo"),
            format!(
                "#!/bin/sh\ncd '{}' && exec '{cargo}' \"$@\"\n",
                repo().display()
            ),
        )
        .expect("write the cargo shim");
        std::fs::set_permissions(
            bin.join("cargo"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .expect("chmod the cargo shim");

        let node = node_tools::node();
        let mut path = vec![
            bin,
            install_python_client(),
            node.parent().expect("node's directory").to_path_buf(),
        ];
        path.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        let mut env: BTreeMap<String, String> = std::env::vars()
            .filter(|(k, _)| !k.starts_with("QUIVER_") && k != "RUST_LOG")
            .collect();
        env.insert(
            "PATH".into(),
            std::env::join_paths(path)
                .expect("PATH joins")
                .to_string_lossy()
                .into_owned(),
        );
        DocSession {
            dir,
            env,
            servers: Vec::new(),
            blocks_run: 0,
        }
    }

    /// The checkout.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The first line each running server printed, by its command.
    pub fn startup_line(&self, command_start: &str) -> Option<String> {
        self.servers
            .iter()
            .rev()
            .find(|s| s.command.starts_with(command_start))
            .map(|s| s.startup_line.clone())
    }

    /// Starts `command` in the background and waits for its start-up line:
    /// the first line on stdout for a `quiver` role (printed once it
    /// serves), the first line on either stream for anything else.
    pub fn start_server(&mut self, command: &str) -> String {
        let line = markdown_blocks::without_comment(command);
        let line = line.strip_suffix('&').unwrap_or(line).trim();
        let mut child = Command::new("bash")
            .args(["--noprofile", "--norc", "-c", &format!("exec env {line}")])
            .current_dir(self.dir())
            .env_clear()
            .envs(&self.env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start `{line}`: {e}"));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let from_stdout_only = markdown_blocks::quiver_role(line).is_some();
        let streams: [(Box<dyn std::io::Read + Send>, bool); 2] = [
            (Box::new(child.stdout.take().expect("stdout")), true),
            (Box::new(child.stderr.take().expect("stderr")), false),
        ];
        for (stream, is_stdout) in streams {
            let log = log.clone();
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if let Ok(mut log) = log.lock() {
                        log.push(line.clone());
                    }
                    if is_stdout || !from_stdout_only {
                        let _ = tx.send(line);
                    }
                }
            });
        }
        drop(tx);
        let first = rx.recv_timeout(Duration::from_secs(180));
        let Ok(first) = first else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`{line}` printed no start-up line (exit: {:?}):\n{}",
                child.try_wait().ok().flatten(),
                log.lock().map(|l| l.join("\n")).unwrap_or_default()
            );
        };
        self.servers.push(Server {
            command: line.to_string(),
            child,
            startup_line: first.clone(),
            log,
        });
        first
    }

    /// Stops every server the session started, newest first.
    pub fn stop_servers(&mut self) {
        while let Some(mut server) = self.servers.pop() {
            stop(&mut server);
        }
    }

    /// Runs a shell block as a reader types it into one terminal: the
    /// servers it starts first (each in a terminal of its own), then the
    /// rest in one shell, command by command, keeping what it exports.
    pub fn run_shell(&mut self, block: &str) -> Vec<CommandRun> {
        self.blocks_run += 1;
        let commands = markdown_blocks::shell_commands(block);
        let mut runs = Vec::new();
        let mut rest = commands.as_slice();
        while let Some((first, tail)) = rest.split_first() {
            if !markdown_blocks::starts_a_server(first) {
                break;
            }
            let banner = self.start_server(first);
            runs.push(CommandRun {
                command: first.clone(),
                status: None,
                output: banner,
            });
            rest = tail;
        }
        if let Some(late) = rest.iter().find(|c| markdown_blocks::starts_a_server(c)) {
            panic!("a block starts a server (`{late}`) after other commands: put servers first");
        }
        if rest.is_empty() {
            return runs;
        }
        const MARK: &str = "\u{1e}doc-status ";
        let env_file = self.dir().join(format!(".doc-env-{}", self.blocks_run));
        let mut script = String::from("exec 2>&1\n");
        for command in rest {
            script.push_str(command);
            script.push_str(&format!("\nprintf '\\n{MARK}%s\\n' \"$?\"\n"));
        }
        script.push_str(&format!("env -0 > '{}'\n", env_file.display()));
        let output = Command::new("timeout")
            .args(["600", "bash", "--noprofile", "--norc", "-c", &script])
            .current_dir(self.dir())
            .env_clear()
            .envs(&self.env)
            .stdin(Stdio::null())
            .output()
            .expect("run bash");
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let mut pieces = text.split(MARK);
        let mut before = pieces.next().unwrap_or_default().to_string();
        for (command, piece) in rest.iter().zip(pieces) {
            let (status, after) = piece.split_once('\n').unwrap_or((piece, ""));
            runs.push(CommandRun {
                command: command.clone(),
                status: status.trim().parse().ok(),
                output: before.trim_end_matches('\n').to_string(),
            });
            before = after.to_string();
        }
        assert_eq!(
            runs.iter().filter(|r| r.status.is_some()).count(),
            rest.len(),
            "the shell stopped before the end of the block:\n{text}"
        );
        if let Ok(saved) = std::fs::read(&env_file) {
            self.env = saved
                .split(|b| *b == 0)
                .filter_map(|kv| {
                    let kv = String::from_utf8_lossy(kv);
                    let (k, v) = kv.split_once('=')?;
                    (!["_", "SHLVL", "PWD", "OLDPWD"].contains(&k))
                        .then(|| (k.to_string(), v.to_string()))
                })
                .collect();
        }
        runs
    }

    /// Runs a Python block with the session's `python3`.
    pub fn run_python(&mut self, block: &str) -> CommandRun {
        self.blocks_run += 1;
        let file = self
            .dir()
            .join(format!(".doc-block-{}.py", self.blocks_run));
        std::fs::write(&file, block).expect("write the Python block");
        let output = Command::new("timeout")
            .args(["120", "python3"])
            .arg(&file)
            .current_dir(self.dir())
            .env_clear()
            .envs(&self.env)
            .stdin(Stdio::null())
            .output()
            .expect("run python3");
        CommandRun {
            command: format!("python3 {}", file.display()),
            status: output.status.code(),
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        }
    }

    /// What every running server has printed so far, for failure messages.
    pub fn server_logs(&self) -> String {
        self.servers
            .iter()
            .map(|s| {
                let log = s.log.lock().map(|l| l.join("\n")).unwrap_or_default();
                format!("--- {}\n{log}", s.command)
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

fn stop(server: &mut Server) {
    if let Ok(None) = server.child.try_wait() {
        let pid = i32::try_from(server.child.id()).expect("pid fits");
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
        for _ in 0..1500 {
            if !matches!(server.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = server.child.kill();
    }
    let _ = server.child.wait();
}

impl Drop for DocSession {
    fn drop(&mut self) {
        if self.dir().join(".quiver/cluster").exists() {
            let _ = Command::new("bash")
                .args(["scripts/cluster.sh", "down"])
                .current_dir(self.dir())
                .env_clear()
                .envs(&self.env)
                .output();
        }
        self.stop_servers();
    }
}
