//! `GET /queue/v1/health`: 200 while Redis answers within a second as a primary that takes
//! writes, else 503 (unreachable, or a read-only replica: `redis_probe.rs`).

use crate::state::DataPlane;
use aqs_core::error::ErrorBody;
use aqs_core::errors;
use aqs_core::redis_probe::{self, RedisState};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::time::Duration;
use utoipa::ToSchema;

const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// Healthy: `{"ok": true, "service": "aqs"}`. Unhealthy adds the error fields of every error answer.
#[derive(Serialize, ToSchema)]
pub struct HealthAnswer {
    pub ok: bool,
    /// Always `aqs`.
    #[schema(value_type = String)]
    pub service: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub error: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub message: Option<&'static str>,
}

errors!(HealthErrors: "service_unavailable");

/// Whether this replica can reach its storage (no token).
#[utoipa::path(get, path = "/queue/v1/health", operation_id = "health", tag = "health",
    responses((status = 200, body = HealthAnswer, description = "Redis answers and takes writes."), HealthErrors))]
pub async fn health(State(state): State<DataPlane>) -> Response {
    let message = match redis_probe::probe(&state.engine.conn(), PROBE_TIMEOUT).await {
        RedisState::Writable => {
            return Json(HealthAnswer { ok: true, service: "aqs", error: None, message: None }).into_response();
        }
        RedisState::Unreachable(why) => {
            tracing::warn!(error = %why, "health: Redis does not answer");
            "storage is temporarily unavailable; retry shortly"
        }
        RedisState::ReadOnly(why) => {
            tracing::warn!(%why, "health: Redis is read-only");
            "storage is read-only for now (a replica, or a failover under way); retry shortly"
        }
    };
    let answer = HealthAnswer { ok: false, service: "aqs", error: Some("service_unavailable"), message: Some(message) };
    let body = serde_json::to_value(&answer).unwrap_or_default();
    let mut response = (StatusCode::SERVICE_UNAVAILABLE, Json(&body)).into_response();
    // An error answer: the server adds the request id to it.
    response.extensions_mut().insert(ErrorBody(body));
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}
