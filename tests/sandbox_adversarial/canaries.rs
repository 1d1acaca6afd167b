//! Secrets planted outside the sandbox before any worker starts, and the
//! checks made from outside that no script reached them: an environment
//! variable of the test process (read back from each worker's
//! `/proc/<pid>/environ`), a file in a temporary folder, a value in another
//! session's stash, and a loopback TCP listener that records every connection.

use std::{
    io::Read,
    net::{SocketAddr, TcpListener, TcpStream},
    path::PathBuf,
    sync::{OnceLock, mpsc},
    time::Duration,
};

use quiver_executor::engine::BYTECODE_CACHE_OFF;
use tempfile::TempDir;

/// The environment variable planted in the test process.
pub const ENV_NAME: &str = "QUIVER_ADVERSARIAL_CANARY";

/// How long the listener may take to hand over a connection the test itself
/// made (an upper bound on a wait for an event, not a pause).
const LISTENER_ANSWER: Duration = Duration::from_secs(10);

/// The planted secrets and the listener.
pub struct Canaries {
    /// Value of [`ENV_NAME`] in the test process.
    pub env_secret: String,
    /// Contents of [`Canaries::file_path`].
    pub file_secret: String,
    /// A file only the test process should be able to read.
    pub file_path: PathBuf,
    /// The victim session's stash value.
    pub stash_secret: String,
    /// Port of the loopback listener.
    pub port: u16,
    _dir: TempDir,
    accepted: mpsc::Receiver<SocketAddr>,
}

impl Canaries {
    /// Plants every canary. Call before the worker pool starts, while no
    /// other thread of this test reads the environment.
    pub fn plant() -> Canaries {
        let env_secret = planted_environment().to_string();

        let dir = tempfile::tempdir().expect("a temporary folder for the file canary");
        let file_path = dir.path().join("secret.txt");
        let file_secret = format!("file-canary-{}", random_hex());
        std::fs::write(&file_path, &file_secret).expect("write the file canary");

        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the loopback canary");
        let port = listener.local_addr().expect("listener address").port();
        let (record, accepted) = mpsc::channel();
        std::thread::Builder::new()
            .name("loopback-canary".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    let Ok(stream) = stream else { continue };
                    let peer = stream
                        .peer_addr()
                        .unwrap_or_else(|_| ([0, 0, 0, 0], 0).into());
                    if record.send(peer).is_err() {
                        return;
                    }
                }
            })
            .expect("start the listener thread");

        let canaries = Canaries {
            env_secret,
            file_secret,
            file_path,
            stash_secret: format!("stash-canary-{}", random_hex()),
            port,
            _dir: dir,
            accepted,
        };
        // The listener is only evidence if it records: prove it once now.
        let recorded = canaries.connections_through_control();
        assert!(
            recorded.is_empty(),
            "the loopback canary saw connections before any script ran: {recorded:?}"
        );
        canaries
    }

    /// Every secret, named, for scanning what crossed out of the sandbox.
    pub fn secrets(&self) -> [(&'static str, &str); 3] {
        [
            ("environment", &self.env_secret),
            ("file", &self.file_secret),
            ("stash", &self.stash_secret),
        ]
    }

    /// The names of the secrets that appear in `text`.
    pub fn leaked_in(&self, text: &str) -> Vec<&'static str> {
        self.secrets()
            .into_iter()
            .filter(|(_, secret)| text.contains(secret))
            .map(|(name, _)| name)
            .collect()
    }

    /// Connections the listener accepted from anyone but the test itself.
    ///
    /// The test connects once more and waits for that connection to be
    /// handed over: the listener accepts in order, so every connection
    /// made before it has been recorded by then.
    pub fn connections_through_control(&self) -> Vec<SocketAddr> {
        let control = TcpStream::connect(("127.0.0.1", self.port))
            .expect("the test's own connection to the loopback canary");
        let control_port = control.local_addr().expect("control address").port();
        let mut others = Vec::new();
        loop {
            match self.accepted.recv_timeout(LISTENER_ANSWER) {
                Ok(peer) if peer.port() == control_port => return others,
                Ok(peer) => others.push(peer),
                Err(e) => panic!(
                    "the loopback canary did not record the test's own connection ({e}): it proves nothing"
                ),
            }
        }
    }

    /// Reads a worker's environment from outside: `Ok(None)` when the
    /// process is already gone, else whether it holds the planted secret.
    pub fn worker_environment(&self, pid: u32) -> Result<Option<WorkerEnvironment>, String> {
        let path = format!("/proc/{pid}/environ");
        match std::fs::read(&path) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                Ok(Some(WorkerEnvironment {
                    holds_secret: text.contains(&self.env_secret) || text.contains(ENV_NAME),
                    // Workers get exactly this variable: seeing it proves the read is real.
                    holds_expected: text.contains(&format!(
                        "{}={}",
                        BYTECODE_CACHE_OFF.0, BYTECODE_CACHE_OFF.1
                    )),
                }))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            // A worker that exits while being read answers with an empty read or ESRCH.
            Err(e) if e.raw_os_error() == Some(3) => Ok(None),
            Err(e) => Err(format!("reading {path}: {e}")),
        }
    }
}

/// What a worker's environment holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerEnvironment {
    /// The planted name or value is there.
    pub holds_secret: bool,
    /// The one variable workers are given is there.
    pub holds_expected: bool,
}

/// The environment canary, set once per process (tests of one binary may
/// run on threads of one process).
fn planted_environment() -> &'static str {
    static SECRET: OnceLock<String> = OnceLock::new();
    SECRET.get_or_init(|| {
        let secret = format!("env-canary-{}", random_hex());
        // SAFETY: runs once, first thing in a test and before its runtime
        // and pool start; nothing in this process reads the environment
        // from C code meanwhile, and Rust's own readers take the same lock.
        unsafe { std::env::set_var(ENV_NAME, &secret) };
        secret
    })
}

/// 128 random bits as hex, so no script could guess a secret.
fn random_hex() -> String {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .expect("read /dev/urandom");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
