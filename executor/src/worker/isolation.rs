//! OS-level isolation of a worker process: defence in depth under the
//! JavaScript hardening, for the day the engine has a memory-safety bug.
//!
//! Layer by layer (what each one stops is in `docs/architecture.md`):
//! 1. [`enter_before_threads`]: new user, mount, network, IPC and UTS
//!    namespaces where the kernel allows them (no network interfaces but a
//!    down loopback, no view of the host's IPC); one clear line where it does
//!    not, and the worker runs on without them.
//! 2. [`lock_down`], once the first runtime is built: `no_new_privs`;
//!    resource limits (no core files, no file writes, a data-size cap, a CPU
//!    budget, few descriptors); and a seccomp-bpf filter applied to every
//!    thread. The filter allows only what a worker needs from then on (its
//!    pipes, memory, clocks, futexes, threads of its own, exit); any other
//!    call (`socket`, `connect`, `execve`, `fork`, `ptrace`, …) kills the
//!    process. Opening or inspecting files fails with `EACCES` instead of
//!    killing, so the C library's lazy look-ups degrade rather than crash.
//!
//! Linux only; elsewhere both steps report that they did nothing.

use std::fmt;

/// Why a layer of isolation could not be put in place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IsolationError {
    /// `unshare` refused the namespaces, with and without a user namespace.
    #[error("unshare with a user namespace: {with_user}; without: {without_user}")]
    Namespaces {
        /// The error asking for a user namespace too.
        with_user: String,
        /// The error asking for the rest alone.
        without_user: String,
    },
    /// `no_new_privs` could not be set.
    #[error("no_new_privs: {0}")]
    NoNewPrivs(String),
    /// A resource limit could not be set.
    #[error("{resource}: {reason}")]
    ResourceLimit {
        /// Which limit.
        resource: String,
        /// Why not.
        reason: String,
    },
    /// A seccomp filter could not be built or installed.
    #[error("seccomp: {0}")]
    Seccomp(String),
    /// This operating system has no such layer.
    #[error("{0} are Linux features")]
    Unsupported(&'static str),
}

/// What a worker achieved, layer by layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsolationReport {
    /// New namespaces entered, or why not.
    pub namespaces: Result<(), IsolationError>,
}

impl fmt::Display for IsolationReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespaces {
            Ok(()) => write!(f, "worker namespaces: user, mount, network, ipc, uts"),
            Err(why) => write!(
                f,
                "worker namespaces unavailable ({why}); workers run without them (seccomp and resource limits still apply)"
            ),
        }
    }
}

/// A forbidden call a worker attempts after locking down, for the test that
/// proves the filter: only the `--test-forbidden-syscall` flag of the hidden
/// worker command sets it, never a script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForbiddenProbe {
    /// `socket(AF_INET, SOCK_STREAM)`: must kill the worker.
    Socket,
    /// `execve("/bin/true")`: must kill the worker.
    Execve,
    /// `fork()`: must kill the worker.
    Fork,
    /// `open("/etc/hostname")`: must fail with `EACCES`.
    Open,
}

impl ForbiddenProbe {
    /// Parses a probe name (`socket`, `execve`, `fork`, `open`).
    pub fn parse(name: &str) -> Option<ForbiddenProbe> {
        match name {
            "socket" => Some(ForbiddenProbe::Socket),
            "execve" => Some(ForbiddenProbe::Execve),
            "fork" => Some(ForbiddenProbe::Fork),
            "open" => Some(ForbiddenProbe::Open),
            _ => None,
        }
    }

    /// Makes the call. Returns (only if it was not killed) whether the call
    /// succeeded.
    pub fn attempt(self) -> bool {
        imp::attempt(self)
    }
}

/// Exit code of a worker whose forbidden probe was refused without a kill.
pub const PROBE_REFUSED_EXIT: i32 = 3;
/// Exit code of a worker whose forbidden probe succeeded (the filter failed).
pub const PROBE_SUCCEEDED_EXIT: i32 = 4;

/// Layer 1: new namespaces. Call while the process has one thread.
pub fn enter_before_threads() -> IsolationReport {
    IsolationReport {
        namespaces: imp::unshare_namespaces(),
    }
}

/// Layer 2: `no_new_privs`, resource limits and the seccomp filter, on every
/// thread of the process. Irreversible.
pub fn lock_down() -> Result<(), IsolationError> {
    imp::lock_down(Filter::Script)
}

/// Layer 2 for a forking worker, which runs no script itself: the same as
/// [`lock_down`] except that the filter also lets it start and reap the
/// processes that run the scripts (`fork`, `wait4`, `kill`, `pipe2`) and
/// lets those tighten their own filter. Each such process calls
/// [`lock_down_script_process`] before anything else.
pub fn lock_down_forking() -> Result<(), IsolationError> {
    imp::lock_down(Filter::Forking)
}

/// In a process forked from a worker locked down by [`lock_down_forking`],
/// on its only thread: dies with its parent, and stacks the script filter of
/// [`lock_down`] over the inherited one, so the script runs under exactly
/// the allowlist of a non-forking worker (no `fork`, no `kill`, ...).
pub fn lock_down_script_process() -> Result<(), IsolationError> {
    imp::lock_down_script_process()
}

/// Which allowlist a process gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Filter {
    /// A process that runs scripts.
    Script,
    /// A forking worker: also starts, reaps and stops its script processes.
    Forking,
}

#[cfg(target_os = "linux")]
mod imp {
    use std::collections::BTreeMap;

    use nix::{
        libc,
        sched::{CloneFlags, unshare},
        sys::resource::{Resource, setrlimit},
    };
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    use super::{Filter, ForbiddenProbe, IsolationError, PROBE_REFUSED_EXIT};

    /// Data segment cap: the JavaScript heap (64 MiB by default) several
    /// times over, for the runtime being built ahead, thread stacks and the
    /// engine's own tables.
    const DATA_BYTES: u64 = 768 * 1024 * 1024;
    /// CPU seconds over the worker's whole life (it is recycled long before).
    const CPU_SECONDS: u64 = 900;
    /// Descriptors: the pipes, and an event loop per engine thread.
    const OPEN_FILES: u64 = 64;

    pub(super) fn unshare_namespaces() -> Result<(), IsolationError> {
        let wanted = CloneFlags::CLONE_NEWUSER
            | CloneFlags::CLONE_NEWNS
            | CloneFlags::CLONE_NEWNET
            | CloneFlags::CLONE_NEWIPC
            | CloneFlags::CLONE_NEWUTS;
        match unshare(wanted) {
            Ok(()) => Ok(()),
            // Without user namespaces, a privileged service can still have the rest.
            Err(first) => unshare(wanted - CloneFlags::CLONE_NEWUSER).map_err(|second| {
                IsolationError::Namespaces {
                    with_user: first.to_string(),
                    without_user: second.to_string(),
                }
            }),
        }
    }

    pub(super) fn lock_down_script_process() -> Result<(), IsolationError> {
        // SAFETY: PR_SET_PDEATHSIG takes a signal number; getppid cannot fail.
        unsafe {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(IsolationError::Seccomp(format!(
                    "PR_SET_PDEATHSIG: {}",
                    std::io::Error::last_os_error()
                )));
            }
            // The parent may have died before the request took effect.
            if libc::getppid() == 1 {
                libc::_exit(1);
            }
        }
        seccompiler::apply_filter(&allowlist(Filter::Script)?)
            .map_err(|e| IsolationError::Seccomp(e.to_string()))
    }

    pub(super) fn lock_down(filter: Filter) -> Result<(), IsolationError> {
        // The time zone is read from disk on first use; do it while files can
        // still be read, so scripts keep local time.
        unsafe extern "C" {
            fn tzset();
        }
        // SAFETY: tzset only initialises the C library's time-zone state.
        unsafe { tzset() };
        nix::sys::prctl::set_no_new_privs()
            .map_err(|e| IsolationError::NoNewPrivs(e.to_string()))?;
        for (resource, limit) in [
            (Resource::RLIMIT_CORE, 0),
            (Resource::RLIMIT_FSIZE, 0),
            (Resource::RLIMIT_DATA, DATA_BYTES),
            (Resource::RLIMIT_CPU, CPU_SECONDS),
            (Resource::RLIMIT_NOFILE, OPEN_FILES),
        ] {
            setrlimit(resource, limit, limit).map_err(|e| IsolationError::ResourceLimit {
                resource: format!("{resource:?}"),
                reason: e.to_string(),
            })?;
        }
        // The allowlist goes last: installing a filter takes `prctl` and
        // `seccomp` calls it does not allow.
        for filter in [clone3_missing()?, file_calls_fail()?, allowlist(filter)?] {
            seccompiler::apply_filter_all_threads(&filter)
                .map_err(|e| IsolationError::Seccomp(e.to_string()))?;
        }
        Ok(())
    }

    fn arch() -> Result<TargetArch, IsolationError> {
        TargetArch::try_from(std::env::consts::ARCH)
            .map_err(|e| IsolationError::Seccomp(format!("{e:?}")))
    }

    /// Everything a worker calls once it runs scripts; anything else kills it.
    /// A forking worker may also start, reap and stop script processes.
    fn allowlist(filter: Filter) -> Result<BpfProgram, IsolationError> {
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = [
            // Pipes and event loops.
            libc::SYS_read,
            libc::SYS_write,
            libc::SYS_readv,
            libc::SYS_writev,
            libc::SYS_close,
            libc::SYS_fcntl,
            libc::SYS_lseek,
            libc::SYS_ppoll,
            libc::SYS_epoll_create1,
            libc::SYS_epoll_ctl,
            libc::SYS_epoll_pwait,
            libc::SYS_epoll_pwait2,
            libc::SYS_eventfd2,
            // Memory.
            libc::SYS_mmap,
            libc::SYS_munmap,
            libc::SYS_mprotect,
            libc::SYS_mremap,
            libc::SYS_madvise,
            libc::SYS_brk,
            // Threads, signals, time.
            libc::SYS_futex,
            libc::SYS_set_robust_list,
            libc::SYS_get_robust_list,
            libc::SYS_rseq,
            libc::SYS_sigaltstack,
            libc::SYS_rt_sigprocmask,
            libc::SYS_rt_sigaction,
            libc::SYS_rt_sigreturn,
            libc::SYS_sched_yield,
            libc::SYS_sched_getaffinity,
            libc::SYS_gettid,
            libc::SYS_getpid,
            libc::SYS_clock_gettime,
            libc::SYS_clock_getres,
            libc::SYS_clock_nanosleep,
            libc::SYS_nanosleep,
            libc::SYS_gettimeofday,
            libc::SYS_getrandom,
            libc::SYS_restart_syscall,
            libc::SYS_exit,
            libc::SYS_exit_group,
            // Thread names only.
            libc::SYS_prctl,
            // Answered by the second filter (EACCES / ENOSYS), never run.
            libc::SYS_openat,
            libc::SYS_newfstatat,
            libc::SYS_statx,
            libc::SYS_clone3,
        ]
        .into_iter()
        .map(|call| (call, Vec::new()))
        .collect();
        #[cfg(target_arch = "x86_64")]
        for call in [
            libc::SYS_poll,
            libc::SYS_epoll_wait,
            libc::SYS_open,
            libc::SYS_stat,
            libc::SYS_access,
            libc::SYS_arch_prctl,
        ] {
            rules.insert(call, Vec::new());
        }
        if filter == Filter::Forking {
            for call in [
                libc::SYS_clone,
                libc::SYS_wait4,
                libc::SYS_kill,
                libc::SYS_pipe2,
                libc::SYS_getppid,
                // A script process stacks its own, stricter filter.
                libc::SYS_seccomp,
            ] {
                rules.insert(call, Vec::new());
            }
        }
        // Threads only: a clone without CLONE_THREAD would be a new process.
        let thread = libc::CLONE_THREAD as u64;
        if filter == Filter::Script {
            rules.insert(
                libc::SYS_clone,
                vec![
                    SeccompRule::new(vec![
                        SeccompCondition::new(
                            0,
                            SeccompCmpArgLen::Qword,
                            SeccompCmpOp::MaskedEq(thread),
                            thread,
                        )
                        .map_err(|e| IsolationError::Seccomp(e.to_string()))?,
                    ])
                    .map_err(|e| IsolationError::Seccomp(e.to_string()))?,
                ],
            );
        }
        // prctl: naming threads (and reading the name), nothing else; a
        // forking worker's script processes also ask to die with it and
        // re-assert `no_new_privs` while stacking their filter.
        let mut options = vec![libc::PR_SET_NAME, libc::PR_GET_NAME];
        if filter == Filter::Forking {
            options.extend([libc::PR_SET_PDEATHSIG, libc::PR_SET_NO_NEW_PRIVS]);
        }
        rules.insert(
            libc::SYS_prctl,
            options
                .into_iter()
                .map(|option| {
                    let check = SeccompCondition::new(
                        0,
                        SeccompCmpArgLen::Dword,
                        SeccompCmpOp::Eq,
                        option as u64,
                    )
                    .map_err(|e| IsolationError::Seccomp(e.to_string()))?;
                    SeccompRule::new(vec![check])
                        .map_err(|e| IsolationError::Seccomp(e.to_string()))
                })
                .collect::<Result<_, _>>()?,
        );
        SeccompFilter::new(
            rules,
            SeccompAction::KillProcess,
            SeccompAction::Allow,
            arch()?,
        )
        .and_then(TryInto::try_into)
        .map_err(|e| IsolationError::Seccomp(e.to_string()))
    }

    /// A filter under which `calls` fail with `errno` instead of running.
    fn failing(calls: &[i64], errno: i32) -> Result<BpfProgram, IsolationError> {
        let rules: BTreeMap<i64, Vec<SeccompRule>> =
            calls.iter().map(|call| (*call, Vec::new())).collect();
        SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno as u32),
            arch()?,
        )
        .and_then(TryInto::try_into)
        .map_err(|e| IsolationError::Seccomp(e.to_string()))
    }

    /// Opening or inspecting a file fails with `EACCES`.
    fn file_calls_fail() -> Result<BpfProgram, IsolationError> {
        let mut calls = vec![libc::SYS_openat, libc::SYS_newfstatat, libc::SYS_statx];
        #[cfg(target_arch = "x86_64")]
        calls.extend([libc::SYS_open, libc::SYS_stat, libc::SYS_access]);
        failing(&calls, libc::EACCES)
    }

    /// `clone3` says it does not exist (its flags sit behind a pointer the
    /// filter cannot read), so the C library makes threads with `clone`,
    /// whose flags the allowlist checks.
    fn clone3_missing() -> Result<BpfProgram, IsolationError> {
        failing(&[libc::SYS_clone3], libc::ENOSYS)
    }

    pub(super) fn attempt(probe: ForbiddenProbe) -> bool {
        // SAFETY: each call is made with valid arguments; its result is only
        // inspected, and a successful fork's child exits at once.
        unsafe {
            match probe {
                ForbiddenProbe::Socket => libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) >= 0,
                ForbiddenProbe::Execve => {
                    let program = c"/bin/true".as_ptr();
                    let argv = [program, std::ptr::null()];
                    let envp = [std::ptr::null()];
                    libc::execve(program, argv.as_ptr(), envp.as_ptr()) >= 0
                }
                ForbiddenProbe::Fork => {
                    let pid = libc::fork();
                    if pid == 0 {
                        libc::_exit(0);
                    }
                    pid > 0
                }
                ForbiddenProbe::Open => {
                    let fd = libc::open(c"/etc/hostname".as_ptr(), libc::O_RDONLY);
                    if fd < 0
                        && std::io::Error::last_os_error().raw_os_error() == Some(libc::EACCES)
                    {
                        libc::_exit(PROBE_REFUSED_EXIT);
                    }
                    fd >= 0
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::{Filter, ForbiddenProbe, IsolationError};

    pub(super) fn unshare_namespaces() -> Result<(), IsolationError> {
        Err(IsolationError::Unsupported("namespaces"))
    }

    pub(super) fn lock_down(_filter: Filter) -> Result<(), IsolationError> {
        Err(IsolationError::Unsupported(
            "seccomp and these resource limits",
        ))
    }

    pub(super) fn lock_down_script_process() -> Result<(), IsolationError> {
        Err(IsolationError::Unsupported("seccomp"))
    }

    pub(super) fn attempt(_probe: ForbiddenProbe) -> bool {
        false
    }
}
