//! Pooling of worker processes: at least `min` warm, at most `max` running
//! executions, a bounded queue of waiting callers (then a clear "busy" error),
//! recycling after `max_uses`, reaping of idle workers, and replacement of any
//! worker that failed or may be in a bad state.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use opentelemetry::KeyValue;
use quiver_telemetry::{
    instruments::{instruments, names},
    metrics::meter,
};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use quiver_contract::{Limits, ScriptError, ScriptErrorKind, ScriptOutcome};

use crate::{
    pool::{
        fair_admission::{FairAdmission, Owner, Refusal, Shares},
        worker_process::{WorkerCommand, WorkerFault, WorkerProcess},
    },
    script::ScriptContext,
};

/// Idle time after which a worker is pinged by the health check.
const HEALTH_CHECK_AFTER: Duration = Duration::from_secs(1);

/// Pool settings.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// How workers are started.
    pub command: WorkerCommand,
    /// Warm workers kept ready (default 2).
    pub min_workers: usize,
    /// Executions at once (default 8).
    pub max_workers: usize,
    /// Idle time after which workers above `min_workers` stop (default 60 s).
    pub idle_timeout: Duration,
    /// Executions after which a worker that builds a runtime per execution
    /// is replaced (default 50): the engine keeps some of each thread's
    /// tables after the thread ends, so such a worker's resident memory
    /// grows with every execution (measured with `quiver bench
    /// execute-vs-call`: idle workers at 24 MiB when replaced every 50
    /// executions, about 100 MiB when replaced every 500).
    pub max_uses: u32,
    /// Executions after which a forking worker is replaced (default 5,000).
    /// Its own memory does not grow (each execution runs in a process that
    /// exits), so this only bounds how long one process lives.
    pub max_uses_forking: u32,
    /// Callers that may wait for a worker (default 64); more get "busy" at once.
    pub max_queue: usize,
    /// Callers of one tenant that may wait (default a quarter of
    /// `max_queue`, at least one); a tenant below an even split of a full
    /// queue may still queue.
    pub tenant_queue: usize,
    /// Longest wait for a worker (default 10 s), then "busy".
    pub queue_timeout: Duration,
    /// Executions one tenant may run at once (default three quarters of
    /// `max_workers`, at least one), so another tenant always finds room.
    pub tenant_share: usize,
    /// Executions one session may run at once (default half of
    /// `max_workers`, at least one); as many more may wait.
    pub session_share: usize,
}

impl PoolConfig {
    /// Defaults around `command`.
    pub fn new(command: WorkerCommand) -> PoolConfig {
        PoolConfig {
            command,
            min_workers: 2,
            max_workers: 8,
            idle_timeout: Duration::from_secs(60),
            max_uses: 50,
            max_uses_forking: 5_000,
            max_queue: 64,
            tenant_queue: 16,
            queue_timeout: Duration::from_secs(10),
            tenant_share: 6,
            session_share: 4,
        }
    }

    /// The same settings with `max_workers` and the shares that follow from it.
    pub fn with_max_workers(mut self, max_workers: usize) -> PoolConfig {
        self.max_workers = max_workers.max(1);
        self.tenant_share = (self.max_workers * 3 / 4).max(1);
        self.session_share = (self.max_workers / 2).max(1);
        self
    }
}

/// Why the pool could not run an execution.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PoolError {
    /// No worker within the caller's share came free (said in the caller's
    /// own terms: nothing about other callers).
    #[error("the executor is busy: {0}")]
    Busy(#[from] Refusal),
    /// A worker failed (it has been replaced).
    #[error("{0}")]
    Worker(#[from] WorkerFault),
}

/// Counters for status pages and tests.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct PoolStats {
    /// Idle warm workers.
    pub idle: usize,
    /// Executions running.
    pub running: usize,
    /// Callers waiting.
    pub waiting: usize,
    /// Workers started since the pool began.
    pub spawned: usize,
    /// Workers discarded (recycled, failed, in doubt or reaped).
    pub retired: usize,
}

/// Why a worker was retired, as `quiver.worker.pool.recycled` counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retirement {
    /// It ran `max_uses` executions.
    MaxUses,
    /// What it last ran may have left it in a bad state: out of time or
    /// memory, a sandbox failure, or a reply cut mid-frame.
    InDoubt,
    /// It died, broke the protocol, could not start, or was stopped when its
    /// caller cancelled.
    Failed,
    /// It sat idle above `min_workers` for `idle_timeout`.
    Idle,
    /// It did not answer the idle health check.
    Unhealthy,
    /// A warm-up and a caller both started a worker for the same free slot;
    /// keeping both would hold more processes than `max_workers`.
    Surplus,
}

impl Retirement {
    /// The `reason` attribute.
    pub fn as_str(self) -> &'static str {
        match self {
            Retirement::MaxUses => "max_uses",
            Retirement::InDoubt => "in_doubt",
            Retirement::Failed => "failed",
            Retirement::Idle => "idle",
            Retirement::Unhealthy => "unhealthy",
            Retirement::Surplus => "surplus",
        }
    }
}

/// The pool.
pub struct WorkerPool {
    config: PoolConfig,
    idle: Mutex<Vec<WorkerProcess>>,
    admission: Arc<FairAdmission>,
    spawned: AtomicUsize,
    retired: AtomicUsize,
    /// Serialises warm-up and maintenance so they never both top up the pool.
    topping_up: tokio::sync::Mutex<()>,
    /// Wakes maintenance early: a worker was retired and should be replaced
    /// before the next caller has to start one.
    replace_soon: Arc<tokio::sync::Notify>,
    shutdown: CancellationToken,
}

impl WorkerPool {
    /// Starts the pool and its maintenance task (warm-up and idle reaping).
    pub fn start(config: PoolConfig) -> Arc<WorkerPool> {
        let pool = Arc::new(WorkerPool {
            admission: FairAdmission::new(Shares {
                total: config.max_workers.max(1),
                per_tenant: config.tenant_share.max(1),
                per_session: config.session_share.max(1),
                max_waiting: config.max_queue,
                max_waiting_per_session: config.session_share.max(1),
                max_waiting_per_tenant: config.tenant_queue.max(1),
                wait: config.queue_timeout,
            }),
            config,
            idle: Mutex::new(Vec::new()),
            spawned: AtomicUsize::new(0),
            retired: AtomicUsize::new(0),
            topping_up: tokio::sync::Mutex::new(()),
            replace_soon: Arc::new(tokio::sync::Notify::new()),
            shutdown: CancellationToken::new(),
        });
        pool.register_gauges();
        let weak = Arc::downgrade(&pool);
        let stop = pool.shutdown.clone();
        let replace_soon = pool.replace_soon.clone();
        tokio::spawn(async move {
            loop {
                let Some(pool) = weak.upgrade() else { return };
                pool.maintain().await;
                let period = (pool.config.idle_timeout / 4)
                    .clamp(Duration::from_millis(100), Duration::from_secs(5));
                drop(pool);
                tokio::select! {
                    () = tokio::time::sleep(period) => {}
                    () = replace_soon.notified() => {}
                    () = stop.cancelled() => return,
                }
            }
        });
        pool
    }

    /// Reports busy and idle workers and waiting callers while the pool
    /// lives (a dropped pool reports nothing).
    fn register_gauges(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        meter()
            .u64_observable_gauge(names::WORKERS)
            .with_description("Sandbox workers by state (busy, idle)")
            .with_callback(move |observer| {
                if let Some(pool) = weak.upgrade() {
                    let stats = pool.stats();
                    observer.observe(to_u64(stats.running), &[KeyValue::new("state", "busy")]);
                    observer.observe(to_u64(stats.idle), &[KeyValue::new("state", "idle")]);
                }
            })
            .build();
        let weak = Arc::downgrade(self);
        meter()
            .u64_observable_gauge(names::WORKERS_QUEUED)
            .with_description("Executions waiting for a worker")
            .with_callback(move |observer| {
                if let Some(pool) = weak.upgrade() {
                    observer.observe(to_u64(pool.admission.waiting()), &[]);
                }
            })
            .build();
    }

    /// Most scripts it runs at once.
    pub fn capacity(&self) -> usize {
        self.config.max_workers.max(1)
    }

    /// Counters.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            idle: self.lock_idle().len(),
            running: self.admission.running(),
            waiting: self.admission.waiting(),
            spawned: self.spawned.load(Ordering::Relaxed),
            retired: self.retired.load(Ordering::Relaxed),
        }
    }

    /// Process ids of the idle workers (for status pages and isolation checks).
    pub fn idle_pids(&self) -> Vec<u32> {
        self.lock_idle()
            .iter()
            .filter_map(WorkerProcess::pid)
            .collect()
    }

    /// Waits until `min_workers` are warm (for start-up and tests).
    pub async fn warm_up(&self) -> Result<(), WorkerFault> {
        let _serialised = self.topping_up.lock().await;
        self.top_up().await
    }

    /// Starts workers until `min_workers` are idle or busy.
    async fn top_up(&self) -> Result<(), WorkerFault> {
        while self.lock_idle().len() + self.admission.running() < self.config.min_workers
            && !self.shutdown.is_cancelled()
        {
            let worker = self.spawn().await?;
            self.keep_idle(worker, false);
        }
        Ok(())
    }

    /// Puts a worker among the idle ones, unless the pool would then hold
    /// more than `max_workers` processes (a caller and the warm-up may both
    /// have started one for the same free slot), in which case it is stopped.
    /// `in_a_slot` says whether the worker is the one a caller still holding
    /// its slot ran on, so `running` already counts it.
    fn keep_idle(&self, worker: WorkerProcess, in_a_slot: bool) {
        let mut idle = self.lock_idle();
        let others = self
            .admission
            .running()
            .saturating_sub(usize::from(in_a_slot));
        if idle.len() + others >= self.config.max_workers.max(1) {
            drop(idle);
            self.retire(worker, Retirement::Surplus);
        } else {
            idle.push(worker);
        }
    }

    /// Stops the maintenance task and all idle workers.
    pub fn shutdown(&self) {
        self.shutdown.cancel();
        self.lock_idle().clear();
    }

    fn lock_idle(&self) -> std::sync::MutexGuard<'_, Vec<WorkerProcess>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn spawn(&self) -> Result<WorkerProcess, WorkerFault> {
        let worker = WorkerProcess::spawn(&self.config.command).await?;
        self.spawned.fetch_add(1, Ordering::Relaxed);
        Ok(worker)
    }

    fn retire(&self, worker: WorkerProcess, why: Retirement) {
        self.retired.fetch_add(1, Ordering::Relaxed);
        instruments()
            .workers_recycled
            .add(1, &[KeyValue::new("reason", why.as_str())]);
        drop(worker);
        self.replace_soon.notify_one();
    }

    /// Keeps `min_workers` warm and stops workers idle for too long above that.
    async fn maintain(&self) {
        let _serialised = self.topping_up.lock().await;
        let expired: Vec<WorkerProcess> = {
            let mut idle = self.lock_idle();
            let keep = self.config.min_workers;
            let mut expired = Vec::new();
            let mut i = 0;
            while idle.len() > keep && i < idle.len() {
                if idle[i].idle_since().elapsed() > self.config.idle_timeout {
                    expired.push(idle.swap_remove(i));
                } else {
                    i += 1;
                }
            }
            expired
        };
        for worker in expired {
            self.retire(worker, Retirement::Idle);
        }
        // Health check: a worker idle for a while that does not answer a ping is
        // replaced. Recently used workers are skipped (they just proved healthy and
        // are the ones callers are about to take).
        let candidates: Vec<WorkerProcess> = {
            let mut idle = self.lock_idle();
            let (stale, fresh): (Vec<_>, Vec<_>) = idle
                .drain(..)
                .partition(|w| w.idle_since().elapsed() >= HEALTH_CHECK_AFTER);
            *idle = fresh;
            stale
        };
        let mut healthy = Vec::with_capacity(candidates.len());
        for mut worker in candidates {
            if worker.healthy().await {
                healthy.push(worker);
            } else {
                tracing::warn!(pid = ?worker.pid(), "an idle worker failed its health check; replacing it");
                self.retire(worker, Retirement::Unhealthy);
            }
        }
        self.lock_idle().extend(healthy);
        if let Err(e) = self.top_up().await {
            tracing::warn!("cannot keep a warm worker: {e}");
        }
    }

    /// Runs one script on a worker for an owner of its own (so only the
    /// pool's size and queue bound it), never cancelled: benchmarks and tests.
    pub async fn run(
        &self,
        code: &str,
        limits: Limits,
        context: Arc<dyn ScriptContext>,
    ) -> Result<ScriptOutcome, PoolError> {
        static ANONYMOUS: AtomicUsize = AtomicUsize::new(0);
        let n = ANONYMOUS.fetch_add(1, Ordering::Relaxed);
        let owner = Owner::new(format!("anonymous-{n}"), "");
        self.run_for(&owner, code, limits, context, CancellationToken::new())
            .await
    }

    /// Runs one script for `owner` once a slot within its shares is free.
    /// Cancelling `cancel` (or dropping the future) stops the script and
    /// frees its slot at once.
    pub async fn run_for(
        &self,
        owner: &Owner,
        code: &str,
        limits: Limits,
        context: Arc<dyn ScriptContext>,
        cancel: CancellationToken,
    ) -> Result<ScriptOutcome, PoolError> {
        let asked = Instant::now();
        let waited = |outcome: &'static str| {
            instruments().queue_wait.record(
                asked.elapsed().as_secs_f64(),
                &[
                    KeyValue::new("quiver.tenant", owner.tenant.clone()),
                    KeyValue::new("outcome", outcome),
                ],
            );
        };
        let slot = tokio::select! {
            slot = self.admission.acquire(owner) => match slot {
                Ok(slot) => {
                    waited("granted");
                    slot
                }
                Err(refusal) => {
                    waited("refused");
                    return Err(refusal.into());
                }
            },
            () = cancel.cancelled() => {
                waited("cancelled");
                return Err(WorkerFault::Cancelled.into());
            }
        };
        let result = self.run_on_worker(code, limits, context, cancel).await;
        drop(slot);
        // A worker retired while this slot still counted as running is
        // replaced now that it does not.
        if self.lock_idle().len() + self.admission.running() < self.config.min_workers {
            self.replace_soon.notify_one();
        }
        result
    }

    async fn run_on_worker(
        &self,
        code: &str,
        limits: Limits,
        context: Arc<dyn ScriptContext>,
        cancel: CancellationToken,
    ) -> Result<ScriptOutcome, PoolError> {
        // Oldest idle first: a worker that just finished may still be building its
        // next runtime, while one idle for longer has it ready.
        let reused = {
            let mut idle = self.lock_idle();
            (!idle.is_empty()).then(|| idle.remove(0))
        };
        let mut worker = match reused {
            Some(worker) => worker,
            None => self.spawn().await?,
        };
        let mut result = worker
            .run(code, limits, context.clone(), cancel.clone())
            .await;
        if matches!(result, Err(WorkerFault::NotStarted)) {
            // The worker died while idle; nothing was sent, so a fresh one may run it.
            self.retire(worker, Retirement::Failed);
            worker = self.spawn().await?;
            result = worker.run(code, limits, context, cancel).await;
        }
        match result {
            Ok(outcome) => {
                if worker.in_doubt_after(&outcome) || worker.poisoned() {
                    self.retire(worker, Retirement::InDoubt);
                } else if worker.uses()
                    >= if worker.forks() {
                        self.config.max_uses_forking
                    } else {
                        self.config.max_uses
                    }
                {
                    self.retire(worker, Retirement::MaxUses);
                } else {
                    self.keep_idle(worker, true);
                }
                Ok(outcome)
            }
            Err(WorkerFault::Overran) => {
                self.retire(worker, Retirement::InDoubt);
                Ok(ScriptOutcome {
                    app_views: Vec::new(),
                    result: None,
                    error: Some(ScriptError {
                        kind: ScriptErrorKind::Timeout,
                        message: format!(
                            "the script ran longer than {} ms and was stopped",
                            limits.wall_ms
                        ),
                        line: None,
                    }),
                    logs: Vec::new(),
                    truncated: false,
                })
            }
            Err(fault) => {
                self.retire(worker, Retirement::Failed);
                Err(fault.into())
            }
        }
    }
}

fn to_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}
