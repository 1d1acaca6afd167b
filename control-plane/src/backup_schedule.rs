//! Periodic backups: while this node leads, a backup file every
//! [`BackupSchedule::every`] in [`BackupSchedule::dir`], the newest
//! [`BackupSchedule::keep`] kept. Followers write nothing (each node runs
//! the schedule; whichever leads writes), so every node of a cluster can
//! be given the same flags.

use std::{
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use opentelemetry::KeyValue;
use quiver_telemetry::{instruments::instruments, instruments::names, metrics::meter};
use tokio_util::sync::CancellationToken;

use crate::{
    backup::{self, BackupSchedule},
    error_chain::with_causes,
    operator::Operator,
    raft::Raft,
};

/// The last success, for the gauges.
#[derive(Default)]
struct LastBackup {
    at_s: AtomicU64,
    bytes: AtomicU64,
}

/// Runs `schedule` until `shutdown` (or until `operator` is gone).
pub(crate) fn run(
    schedule: BackupSchedule,
    operator: &Arc<Operator>,
    raft: Raft,
    shutdown: &CancellationToken,
) {
    let last = Arc::new(LastBackup::default());
    report(&last);
    let every = schedule.every.max(Duration::from_secs(1));
    let schedule = Arc::new(schedule);
    crate::periodic::periodically(operator, every, false, shutdown, move |operator| {
        let (schedule, raft, last) = (schedule.clone(), raft.clone(), last.clone());
        async move {
            let metrics = raft.metrics().borrow().clone();
            if metrics.current_leader != Some(metrics.id) {
                return;
            }
            let outcome = match write_one(&schedule, &operator).await {
                Ok((path, bytes)) => {
                    let now = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs());
                    last.at_s.store(now, Ordering::Relaxed);
                    last.bytes.store(bytes, Ordering::Relaxed);
                    tracing::info!(file = %path.display(), bytes, "backup written");
                    "ok"
                }
                Err(e) => {
                    let e = with_causes(&e);
                    tracing::error!(dir = %schedule.dir.display(), "backup failed: {e}");
                    "failed"
                }
            };
            instruments()
                .backups
                .add(1, &[KeyValue::new("outcome", outcome)]);
        }
    });
}

/// Why a scheduled backup was not written.
#[derive(Debug, thiserror::Error)]
enum ScheduleError {
    /// The leader could not take it.
    #[error("taking the backup")]
    Take(#[from] crate::admin::AdminError),
    /// It could not be checked or written.
    #[error(transparent)]
    Write(#[from] backup::BackupError),
    /// The directory could not be made or listed.
    #[error("{}", path.display())]
    Dir {
        /// The directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The writing task did not finish.
    #[error("the backup task failed")]
    Task(#[from] tokio::task::JoinError),
}

/// Takes one backup, writes it and removes the oldest past `keep`.
async fn write_one(
    schedule: &BackupSchedule,
    operator: &Operator,
) -> Result<(PathBuf, u64), ScheduleError> {
    let bytes = operator.backup().await?;
    let header = backup::inspect(&bytes)?;
    let dir = schedule.dir.clone();
    let keep = schedule.keep.max(1);
    tokio::task::spawn_blocking(move || {
        let dir_error = |source| ScheduleError::Dir {
            path: dir.clone(),
            source,
        };
        std::fs::create_dir_all(&dir).map_err(dir_error)?;
        let path = dir.join(backup::file_name(header.raft_index, header.taken_at_ms));
        backup::write_file(&path, &bytes)?;
        let found = backup::list_backups(&dir).map_err(dir_error)?;
        for old in found.iter().take(found.len().saturating_sub(keep)) {
            if let Err(e) = std::fs::remove_file(old) {
                tracing::warn!(file = %old.display(), "cannot remove an old backup: {e}");
            }
        }
        Ok((path, bytes.len() as u64))
    })
    .await?
}

/// Registers the gauges of the last success (absent until one).
fn report(last: &Arc<LastBackup>) {
    let at = Arc::downgrade(last);
    meter()
        .u64_observable_gauge(names::BACKUP_LAST_SUCCESS)
        .with_unit("s")
        .with_description("When this control-plane node last wrote a backup (s since the epoch)")
        .with_callback(move |observer| {
            if let Some(last) = at.upgrade() {
                let at = last.at_s.load(Ordering::Relaxed);
                if at > 0 {
                    observer.observe(at, &[]);
                }
            }
        })
        .build();
    let size = Arc::downgrade(last);
    meter()
        .u64_observable_gauge(names::BACKUP_BYTES)
        .with_unit("By")
        .with_description("Bytes of the last backup this control-plane node wrote")
        .with_callback(move |observer| {
            if let Some(last) = size.upgrade() {
                let bytes = last.bytes.load(Ordering::Relaxed);
                if bytes > 0 {
                    observer.observe(bytes, &[]);
                }
            }
        })
        .build();
}
