//! Who gets the next free worker. Every execution belongs to a tenant and a
//! session; each may hold at most its share of the pool at once, and when a
//! slot frees up it goes to the waiting caller whose tenant runs the fewest
//! scripts (the oldest first among equals). One tenant's flood therefore
//! never takes the whole pool, and a quiet tenant's script is next in line.
//! Refusals speak only of the caller's own share, never of other callers.
//!
//! Waiting is bounded per session, per tenant and in all; when the whole
//! queue is full, a tenant holding less than an even split of it among the
//! tenants waiting may still queue, so a burst from one tenant can fill its
//! own part of the queue, never another's. Together with the slot given to
//! the tenant running the fewest, a quiet tenant's script waits at most for
//! one running script to end when others saturate the pool.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use tokio::sync::oneshot;

/// Whom an execution runs for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Owner {
    /// Tenant id.
    pub tenant: String,
    /// Session id (unique within the tenant).
    pub session: String,
}

impl Owner {
    /// An owner.
    pub fn new(tenant: impl Into<String>, session: impl Into<String>) -> Owner {
        Owner {
            tenant: tenant.into(),
            session: session.into(),
        }
    }
}

/// How the pool is shared.
#[derive(Debug, Clone, Copy)]
pub struct Shares {
    /// Executions at once, in all.
    pub total: usize,
    /// Executions at once for one tenant.
    pub per_tenant: usize,
    /// Executions at once for one session.
    pub per_session: usize,
    /// Callers that may wait, in all.
    pub max_waiting: usize,
    /// Callers of one session that may wait.
    pub max_waiting_per_session: usize,
    /// Callers of one tenant that may wait.
    pub max_waiting_per_tenant: usize,
    /// Longest wait.
    pub wait: Duration,
}

/// Why no slot was given, in the caller's own terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// The caller's session already waits for as many slots as it may.
    #[error(
        "this session already has {waiting} scripts waiting for a worker, the most it may; wait for one to finish"
    )]
    SessionQueueFull {
        /// Its waiting scripts.
        waiting: usize,
    },
    /// The caller's tenant already waits for as many slots as it may.
    #[error(
        "this tenant already has {waiting} scripts waiting for a worker, the most it may; wait for some to finish"
    )]
    TenantQueueFull {
        /// Its waiting scripts.
        waiting: usize,
    },
    /// Too many callers wait in all, and the caller's tenant holds at least
    /// its even part of the queue.
    #[error("the executor is busy and cannot queue another script now; try again shortly")]
    QueueFull,
    /// No slot within the caller's share came free in time.
    #[error("no worker came free within {:.1} s; try again shortly", .0.as_secs_f64())]
    TimedOut(Duration),
}

struct Waiter {
    id: u64,
    owner: Owner,
    grant: oneshot::Sender<Slot>,
}

#[derive(Default)]
struct State {
    running: usize,
    by_tenant: HashMap<String, usize>,
    by_session: HashMap<Owner, usize>,
    waiting: VecDeque<Waiter>,
    next_id: u64,
}

impl State {
    fn tenant_running(&self, tenant: &str) -> usize {
        self.by_tenant.get(tenant).copied().unwrap_or(0)
    }

    fn session_running(&self, owner: &Owner) -> usize {
        self.by_session.get(owner).copied().unwrap_or(0)
    }

    fn fits(&self, shares: &Shares, owner: &Owner) -> bool {
        self.running < shares.total
            && self.tenant_running(&owner.tenant) < shares.per_tenant
            && self.session_running(owner) < shares.per_session
    }

    fn take(&mut self, owner: &Owner) {
        self.running += 1;
        *self.by_tenant.entry(owner.tenant.clone()).or_default() += 1;
        *self.by_session.entry(owner.clone()).or_default() += 1;
    }

    fn give_back(&mut self, owner: &Owner) {
        self.running = self.running.saturating_sub(1);
        if let Some(n) = self.by_tenant.get_mut(&owner.tenant) {
            *n -= 1;
            if *n == 0 {
                self.by_tenant.remove(&owner.tenant);
            }
        }
        if let Some(n) = self.by_session.get_mut(owner) {
            *n -= 1;
            if *n == 0 {
                self.by_session.remove(owner);
            }
        }
    }
}

/// The admission queue in front of the pool's workers.
pub struct FairAdmission {
    shares: Shares,
    state: Mutex<State>,
}

/// A held slot; dropping it lets the next caller in.
pub struct Slot {
    /// `None` once the slot was taken back without being used.
    admission: Option<Arc<FairAdmission>>,
    owner: Owner,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(admission) = self.admission.take() {
            let mut state = admission.lock();
            state.give_back(&self.owner);
            admission.hand_out(state);
        }
    }
}

impl FairAdmission {
    /// An admission queue with these shares.
    pub fn new(shares: Shares) -> Arc<FairAdmission> {
        Arc::new(FairAdmission {
            shares,
            state: Mutex::new(State::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Callers waiting now.
    pub fn waiting(&self) -> usize {
        self.lock().waiting.len()
    }

    /// Executions holding a slot now.
    pub fn running(&self) -> usize {
        self.lock().running
    }

    /// Waits for a slot within `owner`'s shares.
    pub async fn acquire(self: &Arc<Self>, owner: &Owner) -> Result<Slot, Refusal> {
        let (id, granted) = {
            let mut state = self.lock();
            let nobody_ahead = !state
                .waiting
                .iter()
                .any(|w| state.fits(&self.shares, &w.owner));
            if nobody_ahead && state.fits(&self.shares, owner) {
                state.take(owner);
                return Ok(Slot {
                    admission: Some(self.clone()),
                    owner: owner.clone(),
                });
            }
            let of_session = state.waiting.iter().filter(|w| &w.owner == owner).count();
            if of_session >= self.shares.max_waiting_per_session {
                return Err(Refusal::SessionQueueFull {
                    waiting: of_session,
                });
            }
            let of_tenant = state
                .waiting
                .iter()
                .filter(|w| w.owner.tenant == owner.tenant)
                .count();
            if of_tenant >= self.shares.max_waiting_per_tenant {
                return Err(Refusal::TenantQueueFull { waiting: of_tenant });
            }
            if state.waiting.len() >= self.shares.max_waiting {
                // An even split of the queue among the tenants waiting,
                // the caller's included.
                let mut tenants: Vec<&str> = state
                    .waiting
                    .iter()
                    .map(|w| w.owner.tenant.as_str())
                    .collect();
                tenants.push(&owner.tenant);
                tenants.sort_unstable();
                tenants.dedup();
                if of_tenant >= self.shares.max_waiting / tenants.len() {
                    return Err(Refusal::QueueFull);
                }
            }
            let (grant, granted) = oneshot::channel();
            state.next_id += 1;
            let id = state.next_id;
            state.waiting.push_back(Waiter {
                id,
                owner: owner.clone(),
                grant,
            });
            (id, granted)
        };
        match tokio::time::timeout(self.shares.wait, granted).await {
            Ok(Ok(slot)) => Ok(slot),
            _ => {
                // A slot granted at the last moment is dropped with the
                // receiver and so handed on; only the queue entry is left.
                self.lock().waiting.retain(|w| w.id != id);
                Err(Refusal::TimedOut(self.shares.wait))
            }
        }
    }

    /// Gives free slots to waiters: the eligible one whose tenant runs the
    /// fewest scripts, oldest first among equals.
    fn hand_out(self: &Arc<Self>, mut state: MutexGuard<'_, State>) {
        loop {
            let best = state
                .waiting
                .iter()
                .enumerate()
                .filter(|(_, w)| state.fits(&self.shares, &w.owner))
                .min_by_key(|(i, w)| (state.tenant_running(&w.owner.tenant), *i))
                .map(|(i, _)| i);
            let Some(index) = best else { return };
            let Some(waiter) = state.waiting.remove(index) else {
                return;
            };
            state.take(&waiter.owner);
            let slot = Slot {
                admission: Some(self.clone()),
                owner: waiter.owner,
            };
            if let Err(mut slot) = waiter.grant.send(slot) {
                // The waiter is gone: take the slot back here, not through
                // `Slot::drop`, which would lock the state again.
                slot.admission = None;
                state.give_back(&slot.owner);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shares(total: usize, per_tenant: usize, per_session: usize) -> Shares {
        Shares {
            total,
            per_tenant,
            per_session,
            max_waiting: 16,
            max_waiting_per_session: 4,
            max_waiting_per_tenant: 8,
            wait: Duration::from_secs(5),
        }
    }

    #[tokio::test]
    async fn a_session_never_holds_more_than_its_share() {
        let admission = FairAdmission::new(shares(8, 8, 2));
        let flood = Owner::new("a", "flood");
        let _one = admission.acquire(&flood).await.unwrap();
        let _two = admission.acquire(&flood).await.unwrap();
        // A third from the same session waits; another session goes straight in.
        let third = tokio::spawn({
            let admission = admission.clone();
            let flood = flood.clone();
            async move { admission.acquire(&flood).await.map(|_| ()) }
        });
        let other = admission.acquire(&Owner::new("a", "quiet")).await;
        assert!(other.is_ok());
        assert_eq!(admission.running(), 3);
        drop(_one);
        third.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_freed_slot_goes_to_the_tenant_running_the_fewest() {
        let admission = FairAdmission::new(shares(2, 2, 2));
        let a = Owner::new("a", "s1");
        let first = admission.acquire(&a).await.unwrap();
        let _second = admission.acquire(&a).await.unwrap();
        // Tenant a queues first, tenant b after; b has nothing running.
        let (order_tx, mut order) = tokio::sync::mpsc::unbounded_channel();
        for (owner, name) in [(a.clone(), "a"), (Owner::new("b", "s2"), "b")] {
            let queued = admission.clone();
            let order_tx = order_tx.clone();
            tokio::spawn(async move {
                let slot = queued.acquire(&owner).await.unwrap();
                order_tx.send(name).unwrap();
                drop(slot);
            });
            while admission.waiting() == 0 || (name == "b" && admission.waiting() < 2) {
                tokio::task::yield_now().await;
            }
        }
        drop(first);
        assert_eq!(order.recv().await, Some("b"));
    }

    #[tokio::test]
    async fn a_tenant_at_its_share_leaves_room_for_another() {
        let admission = FairAdmission::new(shares(4, 3, 4));
        let a = Owner::new("a", "s");
        let held: Vec<_> = futures::future::join_all((0..3).map(|_| admission.acquire(&a)))
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let b = admission.acquire(&Owner::new("b", "s")).await;
        assert!(
            b.is_ok(),
            "tenant b must get the slot tenant a may not take"
        );
        drop(held);
    }

    #[tokio::test]
    async fn refusals_speak_only_of_the_callers_own_share() {
        let admission = FairAdmission::new(Shares {
            max_waiting_per_session: 1,
            wait: Duration::from_millis(100),
            ..shares(1, 1, 1)
        });
        let a = Owner::new("a", "s");
        let _held = admission.acquire(&a).await.unwrap();
        let waiting = tokio::spawn({
            let admission = admission.clone();
            let a = a.clone();
            async move { admission.acquire(&a).await.map(|_| ()) }
        });
        while admission.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        let refused = admission.acquire(&a).await.map(|_| ()).unwrap_err();
        assert_eq!(refused, Refusal::SessionQueueFull { waiting: 1 });
        assert!(!refused.to_string().contains("running"), "{refused}");
        assert_eq!(
            waiting.await.unwrap().unwrap_err(),
            Refusal::TimedOut(Duration::from_millis(100))
        );
        assert_eq!(admission.waiting(), 0);
    }

    /// Holds every slot for tenant `a` and queues `n` more of its callers.
    async fn saturated_by_a(admission: &Arc<FairAdmission>, held: usize, n: usize) -> Vec<Slot> {
        let slots = futures::future::join_all((0..held).map(|i| {
            let owner = Owner::new("a", format!("held-{i}"));
            let admission = admission.clone();
            async move { admission.acquire(&owner).await }
        }))
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
        for i in 0..n {
            let admission = admission.clone();
            tokio::spawn(async move {
                let _ = admission
                    .acquire(&Owner::new("a", format!("queued-{i}")))
                    .await;
            });
        }
        slots
    }

    #[tokio::test]
    async fn a_tenant_queue_is_bounded_and_another_tenant_still_queues() {
        let admission = FairAdmission::new(Shares {
            max_waiting: 6,
            max_waiting_per_tenant: 4,
            ..shares(2, 2, 1)
        });
        let _held = saturated_by_a(&admission, 2, 4).await;
        while admission.waiting() < 4 {
            tokio::task::yield_now().await;
        }
        let refused = admission
            .acquire(&Owner::new("a", "one-more"))
            .await
            .map(|_| ())
            .unwrap_err();
        assert_eq!(refused, Refusal::TenantQueueFull { waiting: 4 });
        let b = tokio::spawn({
            let admission = admission.clone();
            async move {
                admission
                    .acquire(&Owner::new("b", "probe"))
                    .await
                    .map(|_| ())
            }
        });
        while admission.waiting() < 5 {
            tokio::task::yield_now().await;
        }
        assert!(!b.is_finished(), "b waits rather than being refused");
    }

    #[tokio::test]
    async fn a_full_queue_still_takes_a_tenant_below_its_even_part() {
        // The whole queue is a's (its own bound equals the queue's).
        let admission = FairAdmission::new(Shares {
            max_waiting: 4,
            max_waiting_per_tenant: 4,
            ..shares(2, 2, 1)
        });
        let held = saturated_by_a(&admission, 2, 4).await;
        while admission.waiting() < 4 {
            tokio::task::yield_now().await;
        }
        let b = tokio::spawn({
            let admission = admission.clone();
            async move {
                admission
                    .acquire(&Owner::new("b", "probe"))
                    .await
                    .map(|_| ())
            }
        });
        while admission.waiting() < 5 {
            tokio::task::yield_now().await;
        }
        // Of the two slots that free, one goes to b, ahead of three of a's
        // older waiters.
        drop(held);
        b.await.unwrap().unwrap();
    }
}
