//! `GET /livez` and `GET /readyz`, on every role's listener and without a token, for load
//! balancers and process supervisors.
//!
//! - `/livez`: 200 while the process runs (it answers, so it runs).
//! - `/readyz`: 200 `{"ok": true, "roles": [...]}` once the stores the roles need answer and their
//!   start-up work is done (the control role: migrations checked and the Redis projection
//!   re-synced); else 503 `{"ok": false, "waiting_for": [...]}` naming `redis` (unreachable, or a
//!   read-only replica: the message says which node), `postgres`,
//!   `projection` or `draining` (after SIGTERM, for `AQS_SHUTDOWN_DRAIN_SECONDS`, so that a load
//!   balancer stops sending before the listeners close).

use aqs_control_plane::{ControlPlane, Waiting};
use aqs_core::config::Role;
use aqs_core::redis_conn::RedisConn;
use aqs_core::redis_probe::{self, RedisState};
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// What readiness looks at.
#[derive(Clone)]
pub struct Health {
    roles: Arc<[&'static str]>,
    redis: RedisConn,
    /// The control or console role's view of PostgreSQL and the projection.
    control: Option<ControlPlane>,
    draining: Arc<AtomicBool>,
}

#[derive(Serialize)]
struct Ready {
    ok: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    roles: Vec<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    waiting_for: Vec<&'static str>,
    /// An error answer's fields, as on every non-2xx answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
}

impl Health {
    pub fn new(roles: &[Role], redis: RedisConn, control: Option<ControlPlane>) -> Self {
        let roles = roles.iter().map(|role| role.as_str()).collect();
        Self { roles, redis, control, draining: Arc::default() }
    }

    /// From now on `/readyz` answers 503 `draining`.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::Release);
    }

    pub fn router(&self) -> Router {
        Router::new()
            .route("/livez", get(|| async { Json(serde_json::json!({"ok": true})) }))
            .route("/readyz", get(ready))
            .with_state(self.clone())
    }

    /// What the process still waits for, each with why when there is more to say; empty when it
    /// is ready.
    async fn waiting_for(&self) -> Vec<(&'static str, Option<String>)> {
        let mut waiting = Vec::new();
        if self.draining.load(Ordering::Acquire) {
            waiting.push(("draining", None));
        }
        match redis_probe::probe(&self.redis, PROBE_TIMEOUT).await {
            RedisState::Writable => {}
            RedisState::Unreachable(_) => waiting.push(("redis", None)),
            RedisState::ReadOnly(why) => waiting.push(("redis", Some(why))),
        }
        match self.control.as_ref().and_then(ControlPlane::waiting_for) {
            Some(Waiting::Postgres) => waiting.push(("postgres", None)),
            Some(Waiting::Projection) => waiting.push(("projection", None)),
            None => {}
        }
        waiting
    }
}

async fn ready(State(health): State<Health>) -> Response {
    let waiting = health.waiting_for().await;
    if waiting.is_empty() {
        let ready =
            Ready { ok: true, roles: health.roles.to_vec(), waiting_for: Vec::new(), error: None, message: None };
        return Json(ready).into_response();
    }
    let named: Vec<String> = waiting
        .iter()
        .map(|(what, why)| match why {
            Some(why) => format!("{what} ({why})"),
            None => (*what).to_owned(),
        })
        .collect();
    let message = format!("not ready: waiting for {}", named.join(", "));
    let waiting_for = waiting.into_iter().map(|(what, _)| what).collect();
    let answer =
        Ready { ok: false, roles: Vec::new(), waiting_for, error: Some("service_unavailable"), message: Some(message) };
    let mut response = (StatusCode::SERVICE_UNAVAILABLE, Json(answer)).into_response();
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}
