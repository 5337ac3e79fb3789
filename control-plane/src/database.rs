//! Whether PostgreSQL can be used, as this process last saw it, and the loop that keeps that
//! knowledge fresh.
//!
//! A process that serves the data plane must not wait for, nor die with, PostgreSQL: publishing and
//! consuming need only Redis. So `aqs serve` starts with the database marked down, and
//! [`ControlPlane::watch_database`] probes it every [`PROBE_EVERY`]; the first time it answers, a
//! control-plane process re-syncs the Redis projection, and only then are the routes that need
//! PostgreSQL served. While the database is down they answer 503 with `Retry-After` at once
//! ([`require_database`]) instead of each waiting for a connection. A request that runs between an
//! outage starting and the next probe fails on the pool's short acquire timeout.

use crate::state::ControlPlane;
use aqs_core::ApiError;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How often the database is probed, down or up.
pub const PROBE_EVERY: Duration = Duration::from_secs(1);

/// How long one probe may take before the database counts as down.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Up unless the watcher says otherwise: a control plane built over a pool its caller already
/// connected (tests, tools) needs no watcher.
pub(crate) struct DatabaseState {
    up: AtomicBool,
}

impl Default for DatabaseState {
    fn default() -> Self {
        Self { up: AtomicBool::new(true) }
    }
}

impl ControlPlane {
    /// True while PostgreSQL answers (and, after start-up, once the projection was re-synced).
    pub fn database_is_up(&self) -> bool {
        self.database_state().up.load(Ordering::Acquire)
    }

    /// Marks the database down and starts the loop that probes it until `shutdown`; `resync`: on
    /// first contact, rewrite the Redis projection before serving (the control role's start-up
    /// duty; a console-only process only reads).
    pub fn watch_database(&self, resync: bool, shutdown: CancellationToken) -> JoinHandle<()> {
        self.database_state().up.store(false, Ordering::Release);
        let cp = self.clone();
        tokio::spawn(async move {
            let mut synced = !resync;
            let (mut said_down, mut said_resync_failed) = (false, false);
            loop {
                let reachable = cp.probe().await;
                let up = cp.database_is_up();
                if reachable && !up {
                    if !synced {
                        match cp.resync_projection().await {
                            Ok(()) => synced = true,
                            // Redis away, most likely: the next probe tries again (said once).
                            Err(err) if !said_resync_failed => {
                                tracing::warn!(error = ?err, "cannot re-sync the Redis projection yet; retrying");
                                said_resync_failed = true;
                            }
                            Err(_) => {}
                        }
                    }
                    if synced {
                        cp.database_state().up.store(true, Ordering::Release);
                        tracing::info!("PostgreSQL is reachable; management and console are served");
                        said_down = false;
                    }
                } else if !reachable && (up || !said_down) {
                    cp.database_state().up.store(false, Ordering::Release);
                    tracing::warn!(
                        "PostgreSQL is unreachable; management and console routes answer 503 until it is back \
                         (the data plane is not affected)"
                    );
                    said_down = true;
                }
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(PROBE_EVERY) => {}
                }
            }
        })
    }

    async fn probe(&self) -> bool {
        let ping = sqlx::query("SELECT 1").execute(self.db());
        matches!(tokio::time::timeout(PROBE_TIMEOUT, ping).await, Ok(Ok(_)))
    }
}

/// The 503 of a route that needs PostgreSQL while it is down.
pub fn database_unavailable() -> ApiError {
    ApiError::unavailable("the database")
}

/// Layer on the routes that need PostgreSQL: while it is down they answer 503 at once.
pub(crate) async fn require_database(State(cp): State<ControlPlane>, request: Request, next: Next) -> Response {
    if !cp.database_is_up() {
        return database_unavailable().into_response();
    }
    next.run(request).await
}
