//! `quiver`: one binary for every role of the Quiver MCP gateway.

mod cli;
mod config;

use clap::{Parser, Subcommand};

/// Quiver: a distributed gateway for the Model Context Protocol.
#[derive(Parser)]
#[command(name = "quiver", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a whole gateway on this machine (control plane, executor and edge in one process).
    Dev(cli::dev::DevArgs),
    /// Run the edge role: MCP and gRPC for clients, routing every call and script to the executor fleet.
    Edge(cli::edge::EdgeArgs),
    /// Run the executor role: upstream connections, sandboxed scripts, gRPC `quiver.v1.Executor`.
    Executor(cli::executor::ExecutorArgs),
    /// Run one control-plane node (Raft-replicated manifest, upstreams, tenants).
    ControlPlane(cli::control_plane::ControlPlaneArgs),
    /// Operate a cluster: membership, upstreams, tenants, keys, manifests.
    Ctl(cli::ctl::CtlArgs),
    /// Serve one server of a catalog file (or of the demo catalog) as an MCP server (deterministic answers).
    MockUpstream(cli::mock_upstream::MockUpstreamArgs),
    /// Ask a role's admin listener whether it is ready (exit 0 on 2xx): the image's healthcheck.
    Probe(cli::probe::ProbeArgs),
    /// Print the token cost of what a client loads up front, per mode.
    Tokens(cli::tokens::TokensArgs),
    /// Print a shell completion script: `quiver completions bash > ~/.local/share/bash-completion/completions/quiver`.
    Completions(cli::completions::CompletionsArgs),
    /// Benchmarks: runs `quiver-bench` from this binary's folder (built
    /// beside it by `cargo build --release`; release builds for numbers).
    #[command(disable_help_flag = true)]
    Bench {
        /// What `quiver-bench` takes: a benchmark and its options (`quiver bench --help`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// A sandbox worker process (started by the executor; speaks frames on stdin/stdout).
    #[command(name = "__worker", hide = true)]
    Worker(WorkerArgs),
}

/// Arguments of the hidden worker command (set only by the executor host).
#[derive(clap::Args)]
struct WorkerArgs {
    /// Test hook: after locking down, attempt this forbidden call
    /// (`socket`, `execve`, `fork`, `open`) and exit; proves the seccomp filter.
    #[arg(long, hide = true)]
    test_forbidden_syscall: Option<String>,
    /// Benchmark hook: skip the OS lock-down, so `quiver bench executor` can
    /// report what it costs. The executor refuses such a worker for scripts.
    /// Only in builds with the `bench-hooks` feature.
    #[cfg(feature = "bench-hooks")]
    #[arg(long, hide = true)]
    bench_without_lock_down: bool,
    /// Read the startup snapshot the executor host made (length-prefixed) from
    /// stdin before anything else, instead of making one.
    #[arg(long, hide = true)]
    snapshot_from_stdin: bool,
    /// Benchmark hook: build a fresh runtime for every execution on a thread
    /// of its own (the worker before forking), so `quiver bench executor`
    /// can compare the two. Only in builds with the `bench-hooks` feature.
    #[cfg(feature = "bench-hooks")]
    #[arg(long, hide = true)]
    bench_fresh_runtimes: bool,
}

impl WorkerArgs {
    /// Whether the worker locks itself down (always, without `bench-hooks`).
    fn lock_down(&self) -> bool {
        #[cfg(feature = "bench-hooks")]
        return !self.bench_without_lock_down;
        #[cfg(not(feature = "bench-hooks"))]
        true
    }

    /// Whether the worker forks a process per execution (always, without
    /// `bench-hooks`).
    fn forking(&self) -> bool {
        #[cfg(feature = "bench-hooks")]
        return !self.bench_fresh_runtimes;
        #[cfg(not(feature = "bench-hooks"))]
        true
    }
}

fn main() -> std::process::ExitCode {
    // Before anything else, while this is the only thread: the JavaScript
    // engine must never write scripts to (or load bytecode from) its on-disk
    // cache, in this process or any it starts.
    let (key, value) = quiver_executor::engine::BYTECODE_CACHE_OFF;
    // SAFETY: no other thread exists yet, so nothing reads the environment
    // concurrently.
    unsafe { std::env::set_var(key, value) };
    let cli = Cli::parse();
    // Several crates enable rustls; pick its ring provider once for the process.
    quiver_upstream::install_crypto_provider();
    if let Command::Worker(args) = &cli.command {
        return run_worker(args);
    }
    if let Command::Bench { args } = &cli.command {
        return cli::bench::run(args);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Dev(args) => cli::dev::run(args).await,
            Command::Edge(args) => cli::edge::run(args).await,
            Command::Executor(args) => cli::executor::run(args).await,
            Command::ControlPlane(args) => cli::control_plane::run(args).await,
            Command::Ctl(args) => cli::ctl::run(args).await,
            Command::MockUpstream(args) => cli::mock_upstream::run(args).await,
            Command::Probe(args) => cli::probe::run(args).await,
            Command::Tokens(args) => cli::tokens::run(args).await,
            Command::Completions(args) => cli::completions::run::<Cli>(args),
            Command::Worker(_) | Command::Bench { .. } => Ok(()),
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Reads the host's startup snapshot: a big-endian `u32` length, then the bytes.
fn read_snapshot_from_host() -> std::io::Result<()> {
    use std::io::Read;
    let mut stdin = std::io::stdin().lock();
    let mut len = [0u8; 4];
    stdin.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > quiver_executor::engine::MAX_SNAPSHOT_BYTES {
        return Err(std::io::Error::other("the startup snapshot is too large"));
    }
    let mut bytes = vec![0u8; len];
    stdin.read_exact(&mut bytes)?;
    quiver_executor::engine::use_startup_snapshot(bytes).map_err(std::io::Error::other)
}

/// The worker enters its namespaces while it has one thread, then runs its
/// JS runtime on one thread (the runtime is not `Send`).
fn run_worker(args: &WorkerArgs) -> std::process::ExitCode {
    let probe = match args.test_forbidden_syscall.as_deref() {
        None => None,
        Some(name) => match quiver_executor::worker::isolation::ForbiddenProbe::parse(name) {
            Some(probe) => Some(probe),
            None => return std::process::ExitCode::FAILURE,
        },
    };
    if args.snapshot_from_stdin && read_snapshot_from_host().is_err() {
        return std::process::ExitCode::FAILURE;
    }
    // Its outcome is checked from outside by the host, which logs it.
    if args.lock_down() {
        let _ = quiver_executor::worker::isolation::enter_before_threads();
    }
    // A process per execution, forked from a runtime no script has run in;
    // where forking is not safe, the threaded worker below.
    if args.forking() {
        use quiver_executor::worker::forking::{ForkingError, serve_forking};
        match serve_forking(probe, args.lock_down()) {
            Ok(()) => return std::process::ExitCode::SUCCESS,
            Err(ForkingError::Unavailable(why)) => {
                tracing::info!(%why, "the worker runs a fresh runtime per execution instead");
            }
            Err(e) => {
                tracing::error!(error = %e, "the worker stopped");
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(_) => return std::process::ExitCode::FAILURE,
    };
    let local = tokio::task::LocalSet::new();
    let lock_down = args.lock_down();
    match local.block_on(
        &runtime,
        quiver_executor::worker::run_worker_with(probe, lock_down),
    ) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(_) => std::process::ExitCode::FAILURE,
    }
}
