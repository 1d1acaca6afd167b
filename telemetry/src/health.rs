//! `/healthz` (the process is alive), `/readyz` (it should get traffic),
//! `/metrics` (Prometheus text) and, for roles that report one, `/status`
//! (what an operator debugging the node wants: upstream states, peers),
//! the same on every role. A role adds the checks that define "ready" for
//! it; a draining process reports not ready so load balancers stop sending
//! work before it stops. `/metrics` and `/status` name tenants, upstreams and
//! errors: they are served where operators alone can reach them.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use axum::{Json, Router, http::StatusCode, response::IntoResponse, routing::get};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

/// One readiness condition: `Ok(detail)` when met, `Err(reason)` when not.
pub type Check = Arc<dyn Fn() -> Result<String, NotReady> + Send + Sync>;

/// Why a readiness condition is not met, worded for an operator (what is
/// missing, and what it waits for); `/readyz` shows it as the check's detail.
///
/// ```
/// use quiver_telemetry::{Health, NotReady};
/// let health = Health::new("edge").check("manifest", || Err(NotReady::from("no manifest yet")));
/// assert!(!health.readiness().ready);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct NotReady {
    /// What is missing.
    pub reason: String,
}

impl From<String> for NotReady {
    fn from(reason: String) -> NotReady {
        NotReady { reason }
    }
}

impl From<&str> for NotReady {
    fn from(reason: &str) -> NotReady {
        NotReady {
            reason: reason.to_string(),
        }
    }
}

/// What `/status` answers, made at each request.
pub type StatusReport = Arc<dyn Fn() -> serde_json::Value + Send + Sync>;

/// A role's liveness and readiness.
#[derive(Clone)]
pub struct Health {
    role: &'static str,
    checks: Vec<(&'static str, Check)>,
    draining: Arc<AtomicBool>,
    status: Option<StatusReport>,
}

/// What `/readyz` answers.
#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq)]
pub struct Readiness {
    /// The role answering (`edge`, `executor`, `control-plane`, `dev`).
    pub role: String,
    /// Every check met and not draining.
    pub ready: bool,
    /// Each condition and its state.
    pub checks: Vec<CheckState>,
}

/// One condition of [`Readiness`].
#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq)]
pub struct CheckState {
    /// What is checked, e.g. `manifest`.
    pub name: String,
    /// Whether it holds.
    pub ok: bool,
    /// What was found.
    pub detail: String,
}

impl Health {
    /// A role with no conditions yet (ready).
    pub fn new(role: &'static str) -> Health {
        Health {
            role,
            checks: Vec::new(),
            draining: Arc::new(AtomicBool::new(false)),
            status: None,
        }
    }

    /// Serves `/status` beside `/metrics` (see [`Health::routes`]) with what
    /// `report` makes; the report must hold no secret (redact error texts).
    pub fn with_status(
        mut self,
        report: impl Fn() -> serde_json::Value + Send + Sync + 'static,
    ) -> Health {
        self.status = Some(Arc::new(report));
        self
    }

    /// Adds a readiness condition.
    pub fn check(
        mut self,
        name: &'static str,
        check: impl Fn() -> Result<String, NotReady> + Send + Sync + 'static,
    ) -> Health {
        self.checks.push((name, Arc::new(check)));
        self
    }

    /// From now on `/readyz` answers 503 (`draining`).
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Evaluates every condition.
    pub fn readiness(&self) -> Readiness {
        let mut checks: Vec<CheckState> = self
            .checks
            .iter()
            .map(|(name, check)| {
                let (ok, detail) = match check() {
                    Ok(detail) => (true, detail),
                    Err(not_ready) => (false, not_ready.reason),
                };
                CheckState {
                    name: (*name).to_string(),
                    ok,
                    detail,
                }
            })
            .collect();
        if self.draining.load(Ordering::SeqCst) {
            checks.push(CheckState {
                name: "draining".into(),
                ok: false,
                detail: "shutting down: finishing work in flight, taking no new work".into(),
            });
        }
        Readiness {
            role: self.role.to_string(),
            ready: checks.iter().all(|c| c.ok),
            checks,
        }
    }

    /// `/healthz`, `/readyz`, `/metrics` and `/status` (when the role
    /// reports one), to merge into a role's router.
    pub fn routes<S: Clone + Send + Sync + 'static>(&self) -> Router<S> {
        let routes = self.probe_routes().route("/metrics", get(metrics));
        match self.status.clone() {
            Some(report) => routes.route("/status", get(move || async move { Json(report()) })),
            None => routes,
        }
    }

    /// `/healthz` and `/readyz` only: for a listener whose callers must not
    /// read the metrics or the status (which name tenants, upstreams and
    /// errors), such as an edge that authenticates its clients.
    pub fn probe_routes<S: Clone + Send + Sync + 'static>(&self) -> Router<S> {
        let health = self.clone();
        let role = self.role;
        Router::new()
            .route(
                "/healthz",
                get(move || async move { Json(serde_json::json!({"status": "alive", "role": role})) }),
            )
            .route(
                "/readyz",
                get(move || {
                    let readiness = health.readiness();
                    async move {
                        let status = if readiness.ready {
                            StatusCode::OK
                        } else {
                            StatusCode::SERVICE_UNAVAILABLE
                        };
                        (status, Json(readiness))
                    }
                }),
            )
    }
}

async fn metrics() -> impl IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            crate::metrics::CONTENT_TYPE,
        )],
        crate::metrics::render_prometheus(),
    )
}

/// A bound admin listener serving only [`Health::routes`], for roles whose
/// main port speaks gRPC (executors, control-plane nodes).
pub struct AdminListener {
    listener: tokio::net::TcpListener,
    health: Health,
}

impl AdminListener {
    /// Binds `addr` (port 0 picks one).
    pub async fn bind(addr: SocketAddr, health: Health) -> std::io::Result<AdminListener> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        Ok(AdminListener { listener, health })
    }

    /// The bound address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown`, in the background.
    pub fn spawn(self, shutdown: CancellationToken) {
        let router: Router = self.health.routes();
        tokio::spawn(async move {
            let served = axum::serve(self.listener, router)
                .with_graceful_shutdown(shutdown.cancelled_owned())
                .await;
            if let Err(e) = served {
                tracing::warn!("the admin listener (/healthz, /readyz, /metrics) stopped: {e}");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_needs_every_check_and_not_draining() {
        let manifest = Arc::new(AtomicBool::new(false));
        let held = manifest.clone();
        let health = Health::new("executor")
            .check("manifest", move || {
                if held.load(Ordering::SeqCst) {
                    Ok("version 3".into())
                } else {
                    Err("no manifest yet".into())
                }
            })
            .check("workers", || Ok("2 warm".into()));
        let first = health.readiness();
        assert!(!first.ready);
        assert_eq!(first.checks[0].detail, "no manifest yet");
        manifest.store(true, Ordering::SeqCst);
        assert!(health.readiness().ready);
        health.start_draining();
        let draining = health.readiness();
        assert!(!draining.ready);
        assert!(
            draining
                .checks
                .iter()
                .any(|c| c.name == "draining" && !c.ok)
        );
    }
}
