//! Records what the clients did, as the checker's [`Operation`]s: every call
//! and every answer takes a number from one shared counter, so the numbers
//! follow real time across clients. It also counts acknowledged adds, which is
//! what the fault schedule waits on to know the cluster is making progress.

use std::{
    collections::BTreeSet,
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use quiver_control_plane::{
    admin::{AdminAnswer, AdminRequest},
    client::{AdminClient, ClientError},
    tenant::TenantPatch,
};
use tokio::sync::watch;

use super::{
    checker::{Completion, Operation, Verdict, check},
    id_set::{IdNames, IdSet},
};

/// The history of one run.
pub struct History {
    clock: AtomicU64,
    recorded: Mutex<Recorded>,
    acked: watch::Sender<usize>,
}

/// The operations and the names of the ids in them.
#[derive(Default)]
struct Recorded {
    operations: Vec<Operation>,
    names: IdNames,
}

/// How a client reaches the cluster for one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Follow "not the leader" answers (`AdminClient::call`).
    ToLeader,
    /// Ask the first endpoint only and take its answer (`AdminClient::call_here`):
    /// how the test talks to a deposed leader.
    HereOnly,
}

impl History {
    /// An empty history.
    pub fn new() -> History {
        History {
            clock: AtomicU64::new(1),
            recorded: Mutex::new(Recorded::default()),
            acked: watch::channel(0).0,
        }
    }

    fn now(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst)
    }

    fn recorded(&self) -> std::sync::MutexGuard<'_, Recorded> {
        self.recorded.lock().expect("history lock")
    }

    /// `tenant create <id>`, recorded. An answer of "already exists" counts as
    /// done: the id is unique to this operation, so an earlier attempt of the
    /// same call (the client moves on to another node after a timeout) took
    /// effect. Any other failure leaves it open: it may still take effect.
    pub async fn add(&self, client: &mut AdminClient, who: &str, id: &str, route: Route) {
        let request = AdminRequest::TenantCreate {
            id: id.to_string(),
            patch: TenantPatch::default(),
        };
        let call = self.now();
        let result = match route {
            Route::ToLeader => client.call(&request).await,
            Route::HereOnly => client.call_here(&request).await,
        };
        let completion = match result {
            Ok(_)
            | Err(ClientError::Status {
                code: tonic::Code::AlreadyExists,
                ..
            }) => Completion::Returned(self.now()),
            Err(_) => Completion::Unknown,
        };
        let mut recorded = self.recorded();
        let id = recorded.names.intern(id);
        recorded.operations.push(Operation::Add {
            client: who.to_string(),
            id,
            call,
            completion,
        });
        drop(recorded);
        if completion != Completion::Unknown {
            self.acked.send_modify(|n| *n += 1);
        }
    }

    /// `tenant list`, recorded when it answers (a failed read tells nothing).
    pub async fn read(&self, client: &mut AdminClient, who: &str, route: Route) -> Option<IdSet> {
        let call = self.now();
        let result = match route {
            Route::ToLeader => client.call(&AdminRequest::TenantList).await,
            Route::HereOnly => client.call_here(&AdminRequest::TenantList).await,
        };
        let Ok(AdminAnswer::TenantList(tenants)) = result else {
            return None;
        };
        let returned = self.now();
        let mut recorded = self.recorded();
        let seen = recorded.names.set_of(tenants.iter().map(|t| t.id.as_str()));
        recorded.operations.push(Operation::Read {
            client: who.to_string(),
            call,
            returned,
            seen: seen.clone(),
        });
        Some(seen)
    }

    /// Acknowledged adds so far.
    pub fn acked(&self) -> usize {
        *self.acked.borrow()
    }

    /// Waits until `more` adds beyond those acknowledged now are acknowledged;
    /// fails the test after `limit`, naming `what` was going on.
    pub async fn progress(&self, more: usize, what: &str, limit: Duration) {
        let target = self.acked() + more;
        let mut acked = self.acked.subscribe();
        let reached = tokio::time::timeout(limit, acked.wait_for(|n| *n >= target)).await;
        assert!(
            reached.is_ok(),
            "no progress {what}: {} of {target} adds acknowledged after {limit:?}",
            self.acked()
        );
    }

    /// How many operations of each kind were recorded.
    pub fn summary(&self) -> String {
        let recorded = self.recorded();
        let (mut acked, mut open, mut reads) = (0, 0, 0);
        for op in &recorded.operations {
            match op {
                Operation::Add {
                    completion: Completion::Returned(_),
                    ..
                } => acked += 1,
                Operation::Add { .. } => open += 1,
                Operation::Read { .. } => reads += 1,
            }
        }
        format!(
            "{} operations: {acked} acknowledged adds, {open} failed adds (maybe applied), {reads} answered reads",
            recorded.operations.len()
        )
    }

    /// Checks everything recorded so far.
    pub fn check(&self, budget: u64) -> Verdict {
        let recorded = self.recorded();
        check(&recorded.operations, &recorded.names, budget)
    }

    /// The names of the ids in `set`.
    pub fn names(&self, set: &IdSet) -> BTreeSet<String> {
        let recorded = self.recorded();
        set.iter()
            .map(|id| recorded.names.name(id).to_string())
            .collect()
    }
}
