//! `GET /queue/v1/health`: 200 while Redis answers a PING within a second, else 503.

use crate::state::DataPlane;
use aqs_core::error::ErrorBody;
use aqs_core::errors;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::time::Duration;
use utoipa::ToSchema;

const PING_TIMEOUT: Duration = Duration::from_secs(1);

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
    responses((status = 200, body = HealthAnswer, description = "Redis answers."), HealthErrors))]
pub async fn health(State(state): State<DataPlane>) -> Response {
    let mut conn = state.engine.conn();
    let ping = tokio::time::timeout(PING_TIMEOUT, redis::cmd("PING").query_async::<String>(&mut conn)).await;
    match ping {
        Ok(Ok(_)) => Json(HealthAnswer { ok: true, service: "aqs", error: None, message: None }).into_response(),
        failed => {
            if let Ok(Err(err)) = failed {
                tracing::warn!(error = %err, "health: Redis PING failed");
            }
            let answer = HealthAnswer {
                ok: false,
                service: "aqs",
                error: Some("service_unavailable"),
                message: Some("storage is temporarily unavailable; retry shortly"),
            };
            let body = serde_json::to_value(&answer).unwrap_or_default();
            let mut response = (StatusCode::SERVICE_UNAVAILABLE, Json(&body)).into_response();
            // An error answer: the server adds the request id to it.
            response.extensions_mut().insert(ErrorBody(body));
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            response
        }
    }
}
