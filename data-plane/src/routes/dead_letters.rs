//! `GET /dead-letters`, `POST /dead-letters/replay`, `POST /dead-letters/purge` (manage scope).

use super::views::{base64, limit_param};
use crate::QueueContext;
use crate::body;
use crate::engine::Class;
use crate::engine::{DeadLetter, REASON_FILTER_MAX, Selection};
use crate::state::DataPlane;
use aqs_core::error::{ApiError, ApiResult};
use aqs_core::ids::MessageId;
use aqs_core::limits;
use aqs_core::time::{now_ms, rfc3339};
use aqs_core::token::Scope;
use axum::Json;
use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};

pub async fn list(
    State(state): State<DataPlane>,
    ctx: QueueContext,
    RawQuery(query): RawQuery,
) -> ApiResult<Json<Value>> {
    let charge = ctx.authorize(&state, &[Scope::Manage], Class::Reads)?;
    let limit = limit_param(query.as_deref())?;
    let letters = state
        .engine
        .charged(charge)
        .dead_letters(ctx.queue, limit)
        .await?
        .ok_or_else(|| ApiError::not_found("no such queue"))?;
    let views: Vec<Value> = letters.iter().map(view).collect();
    Ok(Json(json!({ "dead_letters": views })))
}

fn view(letter: &DeadLetter) -> Value {
    let (preview, encoding) = preview(&letter.body_preview);
    json!({
        "id": letter.id,
        "reason": letter.reason,
        "attempts": letter.attempts,
        "dead_at": rfc3339(letter.dead_at_ms),
        "body_preview": preview,
        "body_preview_encoding": encoding,
        "body_bytes": letter.body_bytes,
        "content_type": letter.content_type,
        "published_at": rfc3339(letter.published_at_ms),
        "group_id": letter.group_id,
    })
}

/// The preview as text when it is UTF-8 (a character cut by the 256-byte limit is dropped),
/// else as base64.
fn preview(bytes: &[u8]) -> (String, &'static str) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (text.to_owned(), "utf8"),
        Err(err) if err.error_len().is_none() => {
            (String::from_utf8_lossy(&bytes[..err.valid_up_to()]).into_owned(), "utf8")
        }
        Err(_) => (base64(bytes), "base64"),
    }
}

#[derive(Deserialize)]
struct SelectionRequest {
    ids: Option<Vec<String>>,
    all: Option<bool>,
    /// Every dead letter whose reason contains this text.
    reason: Option<String>,
}

pub async fn replay(
    State(state): State<DataPlane>,
    ctx: QueueContext,
    headers: HeaderMap,
    raw: Body,
) -> ApiResult<Json<Value>> {
    let charge = ctx.authorize(&state, &[Scope::Manage], Class::Actions)?;
    let selection = selection(&headers, raw).await?;
    let replayed = state.engine.charged(charge).replay_dead_letters(ctx.queue, &selection).await?;
    Ok(Json(json!({ "replayed": replayed })))
}

pub async fn purge(
    State(state): State<DataPlane>,
    ctx: QueueContext,
    headers: HeaderMap,
    raw: Body,
) -> ApiResult<Json<Value>> {
    let charge = ctx.authorize(&state, &[Scope::Manage], Class::Actions)?;
    let selection = selection(&headers, raw).await?;
    let purged = state.engine.charged(charge).purge_dead_letters(ctx.queue, &selection, now_ms()).await?;
    Ok(Json(json!({ "purged": purged })))
}

/// `{"ids": [...]}` (1 to 100 message ids), `{"reason": "text"}` for every dead letter whose
/// reason contains the text, or `{"all": true}` for every dead letter. Acting on every dead letter
/// is destructive, so it is never the default: an empty body or `{}` is a 400 that says what to
/// send (an empty body is read, not refused as a 415, to get that message).
async fn selection(headers: &HeaderMap, raw: Body) -> ApiResult<Selection> {
    let bytes = body::read(headers, raw, 16 * 1024, true).await?;
    let request: SelectionRequest = body::parse(&bytes)?;
    if let Some(reason) = request.reason {
        if request.ids.is_some() || request.all.is_some() {
            return Err(ApiError::invalid("send one of ids, reason or all"));
        }
        if reason.is_empty() || reason.len() > REASON_FILTER_MAX {
            return Err(ApiError::invalid(format!("reason must hold 1 to {REASON_FILTER_MAX} bytes")));
        }
        return Ok(Selection::ReasonContains(reason));
    }
    match (request.ids, request.all) {
        (Some(_), Some(true)) => Err(ApiError::invalid("send either ids or all, not both")),
        (Some(ids), _) => {
            if ids.is_empty() || ids.len() > limits::ACK_MAX_RECEIPTS {
                return Err(ApiError::invalid(format!("ids must hold 1 to {} message ids", limits::ACK_MAX_RECEIPTS)));
            }
            if let Some(bad) = ids.iter().find(|id| MessageId::parse(id).is_none()) {
                return Err(ApiError::invalid(format!("{bad:?} is not a message id (32 lowercase hex characters)")));
            }
            Ok(Selection::Ids(ids))
        }
        (None, Some(true)) => Ok(Selection::All),
        (None, _) => Err(ApiError::invalid(
            "send {\"ids\": [...]} for some dead letters, {\"reason\": \"text\"} for those whose reason contains \
                 the text, or {\"all\": true} for every one",
        )),
    }
}
