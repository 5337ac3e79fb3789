//! `GET /dead-letters`, `POST /dead-letters/replay`, `POST /dead-letters/purge` (manage scope).

use super::alternatives::{Branch, only, strings};
use super::views::{LimitQuery, QueuePath, base64};
use crate::QueueContext;
use crate::body;
use crate::state::DataPlane;
use aqs_core::error::{ApiError, ApiResult};
use aqs_core::errors;
use aqs_core::ids::MessageId;
use aqs_core::limits;
use aqs_core::query::ApiQuery;
use aqs_core::time::{now_ms, rfc3339};
use aqs_engine::{DeadLetter, REASON_FILTER_MAX, Selection};
use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;

#[derive(Serialize, ToSchema)]
pub struct DeadLetterList {
    pub dead_letters: Vec<DeadLetterView>,
}

/// A message that failed its last attempt, with why.
#[derive(Serialize, ToSchema)]
pub struct DeadLetterView {
    pub id: String,
    pub reason: String,
    pub attempts: u32,
    #[schema(format = DateTime)]
    pub dead_at: String,
    /// The body's first 256 bytes: text when they are UTF-8, else base64.
    pub body_preview: String,
    /// `utf8` or `base64`.
    #[schema(value_type = String)]
    pub body_preview_encoding: &'static str,
    pub body_bytes: u64,
    pub content_type: String,
    #[schema(format = DateTime)]
    pub published_at: String,
    pub group_id: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct ReplayedAnswer {
    /// How many dead letters went back to the queue.
    pub replayed: u64,
}

#[derive(Serialize, ToSchema)]
pub struct PurgedAnswer {
    /// How many messages were deleted.
    pub purged: u64,
}

errors!(ListErrors: "invalid_request", "unauthorized", "team_suspended", "forbidden", "not_found", "rate_limited",
    "service_unavailable");

errors!(ActionErrors: "invalid_request", "unauthorized", "team_suspended", "forbidden", "not_found",
    "payload_too_large", "unsupported_media_type", "rate_limited", "service_unavailable", "replication_timeout");

/// The dead letters, oldest first (manage scope).
#[utoipa::path(get, path = "/queue/v1/{slug}/dead-letters", operation_id = "list_dead_letters", tag = "manage", params(QueuePath, LimitQuery),
    responses((status = 200, body = DeadLetterList, description = "Up to `limit` dead letters."), ListErrors),
    security(("queue_token" = [])))]
pub async fn list(
    State(state): State<DataPlane>,
    ctx: QueueContext,
    ApiQuery(query): ApiQuery<LimitQuery>,
) -> ApiResult<Json<DeadLetterList>> {
    let limit = query.limit()?;
    let letters = state
        .engine
        .charged(ctx.charge)
        .dead_letters(ctx.queue, limit)
        .await?
        .ok_or_else(|| ApiError::not_found("no such queue"))?;
    Ok(Json(DeadLetterList { dead_letters: letters.into_iter().map(view).collect() }))
}

fn view(letter: DeadLetter) -> DeadLetterView {
    let (body_preview, body_preview_encoding) = preview(&letter.body_preview);
    DeadLetterView {
        id: letter.id,
        reason: letter.reason,
        attempts: letter.attempts,
        dead_at: rfc3339(letter.dead_at_ms),
        body_preview,
        body_preview_encoding,
        body_bytes: letter.body_bytes,
        content_type: letter.content_type,
        published_at: rfc3339(letter.published_at_ms),
        group_id: letter.group_id,
    }
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

/// Which dead letters: exactly one of `ids`, `reason` or `all: true`.
// The document states that as `oneOf` its three forms (`selection_alternatives`).
#[derive(Deserialize, ToSchema)]
pub struct SelectionRequest {
    /// 1 to 100 message ids (32 lowercase hex characters).
    #[schema(min_items = 1, max_items = 100)]
    ids: Option<Vec<String>>,
    /// Every dead letter (`true` only).
    all: Option<bool>,
    /// Every dead letter whose reason contains this text (1 to 1024 bytes).
    #[schema(min_length = 1, max_length = 1024)]
    reason: Option<String>,
}

/// The three selections [`selection`] accepts, for the document. With `ids`, `all` may be `false`.
pub(super) fn selection_alternatives() -> Vec<Branch> {
    let ids = strings("^[0-9a-f]{32}$", limits::ACK_MAX_RECEIPTS);
    vec![
        Branch {
            title: "by id",
            requires: "ids",
            absent: &["reason"],
            narrowed: vec![
                ("ids", ids),
                ("all", only("Absent, null or `false` with `ids`.", [json!(false), Value::Null])),
            ],
        },
        Branch { title: "by reason", requires: "reason", absent: &["ids", "all"], narrowed: vec![] },
        Branch {
            title: "every one",
            requires: "all",
            absent: &["ids", "reason"],
            narrowed: vec![("all", only("Every dead letter.", [json!(true)]))],
        },
    ]
}

/// Put dead letters back on the queue with their attempts reset (manage scope).
#[utoipa::path(post, path = "/queue/v1/{slug}/dead-letters/replay", operation_id = "replay_dead_letters", tag = "manage", params(QueuePath),
    request_body = SelectionRequest,
    responses((status = 200, body = ReplayedAnswer, description = "How many went back."), ActionErrors),
    security(("queue_token" = [])))]
pub async fn replay(
    State(state): State<DataPlane>,
    ctx: QueueContext,
    headers: HeaderMap,
    raw: Body,
) -> ApiResult<Json<ReplayedAnswer>> {
    let selection = selection(&headers, raw).await?;
    let replayed = state.engine.charged(ctx.charge).replay_dead_letters(ctx.queue, &selection).await?;
    Ok(Json(ReplayedAnswer { replayed }))
}

/// Delete dead letters (manage scope).
#[utoipa::path(post, path = "/queue/v1/{slug}/dead-letters/purge", operation_id = "purge_dead_letters", tag = "manage", params(QueuePath),
    request_body = SelectionRequest,
    responses((status = 200, body = PurgedAnswer, description = "How many were deleted."), ActionErrors),
    security(("queue_token" = [])))]
pub async fn purge(
    State(state): State<DataPlane>,
    ctx: QueueContext,
    headers: HeaderMap,
    raw: Body,
) -> ApiResult<Json<PurgedAnswer>> {
    let selection = selection(&headers, raw).await?;
    let purged = state.engine.charged(ctx.charge).purge_dead_letters(ctx.queue, &selection, now_ms()).await?;
    Ok(Json(PurgedAnswer { purged }))
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
