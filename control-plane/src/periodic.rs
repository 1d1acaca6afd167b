//! Work a node repeats while its operator lives: grant renewal, backups.

use std::{sync::Arc, time::Duration};

use tokio_util::sync::CancellationToken;

use crate::operator::Operator;

/// Runs `work` every `period` (the first time at once when `at_once`,
/// else after one period) while `operator` lives, until `shutdown`; a run
/// that overruns delays the next.
pub(crate) fn periodically<F, Fut>(
    operator: &Arc<Operator>,
    period: Duration,
    at_once: bool,
    shutdown: &CancellationToken,
    mut work: F,
) where
    F: FnMut(Arc<Operator>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let operator = Arc::downgrade(operator);
    let shutdown = shutdown.clone();
    tokio::spawn(async move {
        let first = tokio::time::Instant::now() + if at_once { Duration::ZERO } else { period };
        let mut tick = tokio::time::interval_at(first, period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = shutdown.cancelled() => return,
            }
            let Some(operator) = operator.upgrade() else {
                return;
            };
            work(operator).await;
        }
    });
}
