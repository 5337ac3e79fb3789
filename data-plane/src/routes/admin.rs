//! `GET /messages/peek` and `POST /purge` (manage scope).

use super::views::{attributes, base64, limit_param};
use crate::QueueContext;
use crate::body;
use crate::engine::Class;
use crate::engine::Selection;
use crate::state::DataPlane;
use aqs_core::error::{ApiError, ApiResult};
use aqs_core::time::{now_ms, rfc3339};
use aqs_core::token::Scope;
use axum::Json;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};

pub async fn peek(
    State(state): State<DataPlane>,
    ctx: QueueContext,
    RawQuery(query): RawQuery,
) -> ApiResult<Json<Value>> {
    let charge = ctx.authorize(&state, &[Scope::Manage], Class::Reads)?;
    let limit = limit_param(query.as_deref())?;
    let messages = state
        .engine
        .charged(charge)
        .peek(ctx.queue, limit, now_ms())
        .await?
        .ok_or_else(|| ApiError::not_found("no such queue"))?;
    let views: Vec<Value> = messages
        .iter()
        .map(|m| {
            json!({
                "id": m.id,
                "body_base64": base64(&m.body),
                "content_type": m.content_type,
                "attributes": attributes(&m.attributes),
                "attempts": m.attempts,
                "group_id": m.group_id,
                "published_at": rfc3339(m.published_at_ms),
                "state": "ready",
            })
        })
        .collect();
    Ok(Json(json!({ "messages": views })))
}

#[derive(Deserialize)]
struct PurgeRequest {
    state: Option<String>,
}

/// Deletes waiting ready messages: never-delivered ones and those whose lease ran out or was
/// released by a nack and is due. Messages under a live lease and delayed messages stay.
/// `{"state": "dead"}` purges the dead-letter queue instead.
pub async fn purge(
    State(state): State<DataPlane>,
    ctx: QueueContext,
    headers: HeaderMap,
    raw: Body,
) -> ApiResult<Json<Value>> {
    let charge = ctx.authorize(&state, &[Scope::Manage], Class::Actions)?;
    let bytes = body::read(&headers, raw, 4096, true).await?;
    let request: PurgeRequest = body::parse(&bytes)?;
    let purged = match request.state.as_deref() {
        None | Some("ready") => state.engine.charged(charge).purge_ready(ctx.queue, now_ms()).await?,
        Some("dead") => state.engine.charged(charge).purge_dead_letters(ctx.queue, &Selection::All, now_ms()).await?,
        Some(_) => return Err(ApiError::invalid("state must be \"ready\" or \"dead\"")),
    };
    Ok(Json(json!({ "purged": purged })))
}
