//! `GET /messages/peek` and `POST /purge` (manage scope).

use super::dead_letters::PurgedAnswer;
use super::views::{LimitQuery, QueuePath, attributes, base64};
use crate::QueueContext;
use crate::body;
use crate::state::DataPlane;
use aqs_core::error::{ApiError, ApiResult};
use aqs_core::errors;
use aqs_core::query::ApiQuery;
use aqs_core::time::{now_ms, rfc3339};
use aqs_engine::Selection;
use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

#[derive(Serialize, ToSchema)]
pub struct PeekAnswer {
    pub messages: Vec<PeekedMessage>,
}

/// A ready message as it waits, without a lease or receipt.
#[derive(Serialize, ToSchema)]
pub struct PeekedMessage {
    pub id: String,
    pub body_base64: String,
    pub content_type: String,
    #[schema(value_type = Object)]
    pub attributes: Value,
    /// Deliveries so far.
    pub attempts: u32,
    pub group_id: Option<String>,
    #[schema(format = DateTime)]
    pub published_at: String,
    /// Always `ready`.
    #[schema(value_type = String)]
    pub state: &'static str,
}

errors!(PeekErrors: "invalid_request", "unauthorized", "team_suspended", "forbidden", "not_found", "rate_limited",
    "service_unavailable");

/// The next ready messages, without leasing them (manage scope).
#[utoipa::path(get, path = "/queue/v1/{slug}/messages/peek", operation_id = "peek", tag = "manage", params(QueuePath, LimitQuery),
    responses((status = 200, body = PeekAnswer, description = "Up to `limit` ready messages."), PeekErrors),
    security(("queue_token" = [])))]
pub async fn peek(
    State(state): State<DataPlane>,
    ctx: QueueContext,
    ApiQuery(query): ApiQuery<LimitQuery>,
) -> ApiResult<Json<PeekAnswer>> {
    let limit = query.limit()?;
    let messages = state
        .engine
        .charged(ctx.charge)
        .peek(ctx.queue, limit, now_ms())
        .await?
        .ok_or_else(|| ApiError::not_found("no such queue"))?;
    let messages = messages
        .into_iter()
        .map(|m| PeekedMessage {
            body_base64: base64(&m.body),
            attributes: attributes(&m.attributes),
            published_at: rfc3339(m.published_at_ms),
            id: m.id,
            content_type: m.content_type,
            attempts: m.attempts,
            group_id: m.group_id,
            state: "ready",
        })
        .collect();
    Ok(Json(PeekAnswer { messages }))
}

/// May be empty: purges the ready messages.
#[derive(Deserialize, ToSchema)]
pub struct PurgeRequest {
    /// `ready` (default) or `dead` (the dead-letter queue).
    #[schema(value_type = Option<String>, pattern = "^(ready|dead)$")]
    state: Option<String>,
}

errors!(PurgeErrors: "invalid_request", "unauthorized", "team_suspended", "forbidden", "not_found", "payload_too_large",
    "unsupported_media_type", "rate_limited", "service_unavailable", "replication_timeout");

/// Deletes waiting ready messages: never-delivered ones and those whose lease ran out or was
/// released by a nack and is due. Messages under a live lease and delayed messages stay.
/// `{"state": "dead"}` purges the dead-letter queue instead.
#[utoipa::path(post, path = "/queue/v1/{slug}/purge", operation_id = "purge", tag = "manage", params(QueuePath),
    request_body(content = PurgeRequest, description = "May be empty: purges the ready messages."),
    responses((status = 200, body = PurgedAnswer, description = "How many were deleted."), PurgeErrors),
    security(("queue_token" = [])))]
pub async fn purge(
    State(state): State<DataPlane>,
    ctx: QueueContext,
    headers: HeaderMap,
    raw: Body,
) -> ApiResult<Json<PurgedAnswer>> {
    let bytes = body::read(&headers, raw, 4096, true).await?;
    let request: PurgeRequest = body::parse(&bytes)?;
    let purged = match request.state.as_deref() {
        None | Some("ready") => state.engine.charged(ctx.charge).purge_ready(ctx.queue, now_ms()).await?,
        Some("dead") => {
            state.engine.charged(ctx.charge).purge_dead_letters(ctx.queue, &Selection::All, now_ms()).await?
        }
        Some(_) => return Err(ApiError::invalid("state must be \"ready\" or \"dead\"")),
    };
    Ok(Json(PurgedAnswer { purged }))
}
