//! Concurrent clients: each adds fresh tenant ids and lists the tenants, in a
//! seeded mix with short seeded pauses, following the leader wherever it is,
//! and records every operation in the [`History`].

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use quiver_control_plane::client::AdminClient;
use tokio::task::JoinHandle;

use super::{
    history::{History, Route},
    seeded_rng::SeededRng,
};

/// Clients running until [`Workload::stop`].
pub struct Workload {
    stop: Arc<AtomicBool>,
    clients: Vec<JoinHandle<()>>,
}

impl Workload {
    /// Starts `clients` clients on `endpoints` (each starts from a different
    /// one, so some begin at a follower and follow its redirect).
    pub fn start(
        clients: usize,
        endpoints: &[String],
        history: &Arc<History>,
        rng: &SeededRng,
    ) -> Workload {
        let stop = Arc::new(AtomicBool::new(false));
        let clients = (0..clients)
            .map(|n| {
                let mut endpoints = endpoints.to_vec();
                let first = n % endpoints.len();
                endpoints.rotate_left(first);
                tokio::spawn(run_client(
                    n,
                    endpoints,
                    history.clone(),
                    stop.clone(),
                    rng.fork(n as u64 + 1),
                ))
            })
            .collect();
        Workload { stop, clients }
    }

    /// Lets each client finish the operation it is in, and stops them.
    pub async fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        for client in self.clients {
            client.await.expect("a client task panicked");
        }
    }
}

async fn run_client(
    n: usize,
    endpoints: Vec<String>,
    history: Arc<History>,
    stop: Arc<AtomicBool>,
    mut rng: SeededRng,
) {
    let who = format!("client {n}");
    let mut client = AdminClient::new(endpoints, None)
        .with_timeout(Duration::from_secs(2))
        .with_election_wait(Duration::from_secs(3));
    let mut written = 0;
    while !stop.load(Ordering::SeqCst) {
        if rng.chance(0.4) {
            let id = format!("c{n}-{written}");
            written += 1;
            history.add(&mut client, &who, &id, Route::ToLeader).await;
        } else {
            history.read(&mut client, &who, Route::ToLeader).await;
        }
        tokio::time::sleep(rng.millis(1, 15)).await;
    }
}
