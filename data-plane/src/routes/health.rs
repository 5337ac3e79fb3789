//! `GET /queue/v1/health`: 200 while Redis answers a PING within a second, else 503.

use crate::state::DataPlane;
use aqs_core::error::ErrorBody;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::time::Duration;

const PING_TIMEOUT: Duration = Duration::from_secs(1);

pub async fn health(State(state): State<DataPlane>) -> Response {
    let mut conn = state.engine.conn();
    let ping = tokio::time::timeout(PING_TIMEOUT, redis::cmd("PING").query_async::<String>(&mut conn)).await;
    match ping {
        Ok(Ok(_)) => Json(json!({ "ok": true, "service": "aqs" })).into_response(),
        failed => {
            if let Ok(Err(err)) = failed {
                tracing::warn!(error = %err, "health: Redis PING failed");
            }
            let body = json!({
                "ok": false,
                "service": "aqs",
                "error": "service_unavailable",
                "message": "storage is temporarily unavailable; retry shortly",
            });
            let mut response = (StatusCode::SERVICE_UNAVAILABLE, Json(&body)).into_response();
            // An error answer: the server adds the request id to it.
            response.extensions_mut().insert(ErrorBody(body));
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            response
        }
    }
}
