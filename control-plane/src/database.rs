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
use aqs_core::error::ErrorBody;
use axum::extract::{Request, State};
use axum::http::StatusCode;
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
    /// What `/readyz` says: PostgreSQL answered the last probe; the projection was re-synced.
    reachable: AtomicBool,
    synced: AtomicBool,
}

impl Default for DatabaseState {
    fn default() -> Self {
        Self { up: AtomicBool::new(true), reachable: AtomicBool::new(true), synced: AtomicBool::new(true) }
    }
}

/// What a control or console process still waits for before it is ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waiting {
    Postgres,
    Projection,
}

impl ControlPlane {
    /// True while PostgreSQL answers (and, after start-up, once the projection was re-synced).
    pub fn database_is_up(&self) -> bool {
        self.database_state().up.load(Ordering::Acquire)
    }

    /// What keeps this process from serving its PostgreSQL routes, as the watcher last saw it.
    pub fn waiting_for(&self) -> Option<Waiting> {
        let state = self.database_state();
        if !state.reachable.load(Ordering::Acquire) {
            Some(Waiting::Postgres)
        } else if !state.synced.load(Ordering::Acquire) {
            Some(Waiting::Projection)
        } else {
            None
        }
    }

    /// Marks the database down, looks once (so that a process whose database answers serves
    /// everything from its first request, the projection re-synced), then keeps probing in the
    /// background until `shutdown`. `resync`: on first contact, rewrite the Redis projection
    /// before serving (the control role's start-up duty; a console-only process only reads).
    /// The first look waits at most a probe's timeout when PostgreSQL is unreachable.
    pub async fn watch_database(&self, resync: bool, shutdown: CancellationToken) -> JoinHandle<()> {
        let state = self.database_state();
        state.up.store(false, Ordering::Release);
        state.reachable.store(false, Ordering::Release);
        state.synced.store(!resync, Ordering::Release);
        let mut watch = Watch { cp: self.clone(), synced: !resync, said_down: false, said_resync_failed: false };
        watch.look().await;
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(PROBE_EVERY) => {}
                }
                watch.look().await;
            }
        })
    }

    /// `Err` with PostgreSQL's own reason (a wrong database name, authentication…), or `None`
    /// when the pool only timed out: it retries a refused connection or a failed TLS handshake
    /// until then and keeps the reason to itself ([`Self::connect_reason`] finds it).
    ///
    /// An idle connection is used when there is one, so that a server that went away fails the
    /// probe at once (the broken connection errors) instead of after the pool's acquire timeout.
    async fn probe(&self) -> Result<(), Option<String>> {
        let ping = async {
            match self.db().try_acquire() {
                Some(mut idle) => sqlx::query("SELECT 1").execute(&mut *idle).await.map(drop),
                None => sqlx::query("SELECT 1").execute(self.db()).await.map(drop),
            }
        };
        match tokio::time::timeout(PROBE_TIMEOUT, ping).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(sqlx::Error::PoolTimedOut)) | Err(_) => Err(None),
            Ok(Err(err)) => Err(Some(err.to_string())),
        }
    }

    /// A request found the database unreachable: every request after it answers 503 at once,
    /// instead of each waiting for the pool's acquire timeout until the next probe says so.
    fn found_down(&self) {
        let state = self.database_state();
        state.reachable.store(false, Ordering::Release);
        state.up.store(false, Ordering::Release);
    }

    /// Why a connection cannot be made, from one attempt outside the pool.
    async fn connect_reason(&self) -> String {
        use sqlx::ConnectOptions;
        let options = self.db().connect_options();
        match tokio::time::timeout(PROBE_TIMEOUT, options.connect()).await {
            Ok(Err(err)) => err.to_string(),
            Ok(Ok(_)) => "the pool found no free connection in time".into(),
            Err(_) => format!("no answer within {PROBE_TIMEOUT:?}"),
        }
    }
}

/// The watcher's state between two looks.
struct Watch {
    cp: ControlPlane,
    /// The projection was re-synced (or this process need not do it).
    synced: bool,
    /// Logged once per outage, and once per run of failed re-syncs.
    said_down: bool,
    said_resync_failed: bool,
}

impl Watch {
    /// One probe, and what follows from it: up (after the re-sync, the first time) or down.
    async fn look(&mut self) {
        let cp = &self.cp;
        let probed = cp.probe().await;
        let reachable = probed.is_ok();
        cp.database_state().reachable.store(reachable, Ordering::Release);
        let up = cp.database_is_up();
        if reachable && !up {
            if !self.synced {
                match cp.resync_projection().await {
                    Ok(()) => {
                        self.synced = true;
                        cp.database_state().synced.store(true, Ordering::Release);
                    }
                    // Redis away, most likely: the next look tries again.
                    Err(err) if !self.said_resync_failed => {
                        tracing::warn!(error = ?err, "cannot re-sync the Redis projection yet; retrying");
                        self.said_resync_failed = true;
                    }
                    Err(_) => {}
                }
            }
            if self.synced {
                cp.database_state().up.store(true, Ordering::Release);
                if self.said_down {
                    tracing::info!("PostgreSQL is reachable again; management and console are served");
                }
                self.said_down = false;
            }
        } else if !reachable && (up || !self.said_down) {
            cp.database_state().up.store(false, Ordering::Release);
            let reason = match probed {
                Err(Some(reason)) => reason,
                _ => cp.connect_reason().await,
            };
            tracing::warn!(
                %reason,
                "PostgreSQL is unreachable; management and console routes answer 503 until it is back \
                 (the data plane is not affected)"
            );
            self.said_down = true;
        }
    }
}

/// The 503 of a route that needs PostgreSQL while it is down.
pub fn database_unavailable() -> ApiError {
    ApiError::unavailable("the database")
}

/// Layer on the routes that need PostgreSQL: while it is down they answer 503 at once, and the
/// first request that finds it down marks it so for the others (the watcher's next probe decides
/// when it is back).
pub(crate) async fn require_database(State(cp): State<ControlPlane>, request: Request, next: Next) -> Response {
    if !cp.database_is_up() {
        return database_unavailable().into_response();
    }
    let response = next.run(request).await;
    if response.status() == StatusCode::SERVICE_UNAVAILABLE && is_database_outage(&response) {
        cp.found_down();
    }
    response
}

/// Whether `response` is the 503 of an unreachable database (`From<sqlx::Error> for ApiError`
/// and [`database_unavailable`] say it in the same words).
fn is_database_outage(response: &Response) -> bool {
    let Some(ErrorBody(body)) = response.extensions().get::<ErrorBody>() else { return false };
    body["message"].as_str() == Some(database_unavailable().client_message().as_str())
}
