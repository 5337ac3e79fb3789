//! `POST /messages` and `POST /messages/batch`.
//!
//! Body limits, from the queue's payload limit P (read from the cached settings):
//! - one message: 2·P + 64 KiB of JSON. Base64 inflates a body by 4/3 and JSON string escaping
//!   can double text, so any body of at most P fits; the exact size check is on the decoded body.
//! - a batch: the spec's envelope, `batch_envelope_limit(P)` (8·P + 64 KiB, at most 80 MiB),
//!   applied to the decoded content (bodies plus attributes), while the JSON itself may be 4/3 of
//!   that plus 64 KiB, so eight full-size base64 entries fit as the spec promises.

use super::alternatives::Branch;
use super::views::QueuePath;
use crate::QueueContext;
use crate::body;
use crate::state::DataPlane;
use aqs_core::error::{ApiError, ApiResult};
use aqs_core::errors;
use aqs_core::limits::{self, KIB};
use aqs_core::projection::QueueMeta;
use aqs_core::time::{now_ms, rfc3339};
use aqs_engine::{NewMessage, PublishOutcome, Published};
use axum::extract::{Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;
use utoipa::ToSchema;

/// One message: exactly one of `body` and `body_base64`.
// The document states that as `oneOf` its two forms (`body_alternatives`).
#[derive(Deserialize, ToSchema)]
pub struct PublishRequest<'a> {
    /// The body as text.
    #[serde(borrow, default)]
    #[schema(value_type = Option<String>)]
    body: Option<Cow<'a, str>>,
    /// The body as standard base64 (padded), for bytes.
    #[serde(borrow, default)]
    #[schema(value_type = Option<String>, content_encoding = "base64",
        pattern = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$")]
    body_base64: Option<Cow<'a, str>>,
    /// 1 to 256 bytes; default `application/json`.
    #[schema(min_length = 1, max_length = 256)]
    content_type: Option<String>,
    /// A JSON object of at most 8 KiB serialised, handed to every consumer.
    #[schema(value_type = Option<Object>)]
    attributes: Option<Value>,
    /// Hold the message this long before it can be consumed, 0 to 604800 s (7 days).
    #[schema(minimum = 0, maximum = 604800)]
    delay_seconds: Option<u64>,
    /// Up to 256 bytes; messages of one group are delivered one at a time, in order.
    #[schema(max_length = 256)]
    group_id: Option<String>,
    /// 1 to 256 bytes: a publish with the key of a stored message answers that message.
    #[schema(min_length = 1, max_length = 256)]
    idempotency_key: Option<String>,
}

/// The two ways to give a message's body, for the document.
pub(super) fn body_alternatives() -> Vec<Branch> {
    vec![
        Branch { title: "text body", requires: "body", absent: &["body_base64"], narrowed: vec![] },
        Branch { title: "base64 body", requires: "body_base64", absent: &["body"], narrowed: vec![] },
    ]
}

#[derive(Deserialize, ToSchema)]
pub struct BatchRequest<'a> {
    /// 1 to 100 messages.
    #[serde(borrow)]
    #[schema(min_items = 1, max_items = 100)]
    messages: Vec<PublishRequest<'a>>,
}

/// A stored message (or, with `duplicate`, the earlier one its idempotency key named).
#[derive(Debug, PartialEq, Serialize, ToSchema)]
pub struct PublishedMessage {
    pub id: String,
    #[schema(format = DateTime)]
    pub published_at: String,
    /// When it can be consumed (after its delay).
    #[schema(format = DateTime)]
    pub available_at: String,
    /// An earlier publish with the same idempotency key and payload: nothing new was stored.
    pub duplicate: bool,
}

#[derive(Debug, PartialEq, Serialize, ToSchema)]
pub struct PublishedBatch {
    /// One per message, in the order of the request.
    pub messages: Vec<PublishedMessage>,
}

errors!(PublishErrors: "invalid_request", "unauthorized", "team_suspended", "forbidden", "not_found",
    "idempotency_conflict", "queue_paused", "payload_too_large", "unsupported_media_type", "rate_limited",
    "service_unavailable", "replication_timeout", "storage_limit_reached");

/// Publish one message (send scope).
#[utoipa::path(post, path = "/queue/v1/{slug}/messages", operation_id = "publish", tag = "send", params(QueuePath),
    request_body = PublishRequest,
    responses(
        (status = 201, body = PublishedMessage, description = "Stored."),
        (status = 200, body = PublishedMessage, description = "A duplicate of a stored message: nothing new stored."),
        PublishErrors),
    security(("queue_token" = [])))]
// Both publish handlers take the whole request rather than a `HeaderMap`, which axum would copy.
pub async fn publish_one(State(state): State<DataPlane>, ctx: QueueContext, request: Request) -> ApiResult<Response> {
    let meta = queue_meta(&state, &ctx).await?;
    let (parts, raw) = request.into_parts();
    let bytes = body::read(&parts.headers, raw, 2 * meta.payload_limit + 64 * KIB, false).await?;
    let message = validate(body::parse(&bytes)?, &meta)?;
    let stored = store(&state, &ctx, &[message]).await.map_err(unbatch)?;
    let status = status_of(&stored);
    let [published] = <[Published; 1]>::try_from(stored)
        .map_err(|stored| anyhow::anyhow!("a single publish stored {} messages", stored.len()))?;
    Ok(json_response(status, PublishedMessage::from(published).to_json()))
}

/// Publish up to 100 messages at once, all or none (send scope). An error about one entry names
/// it in `index`.
#[utoipa::path(post, path = "/queue/v1/{slug}/messages/batch", operation_id = "publish_batch", tag = "send", params(QueuePath),
    request_body = BatchRequest,
    responses(
        (status = 201, body = PublishedBatch, description = "Stored."),
        (status = 200, body = PublishedBatch, description = "Every entry a duplicate: nothing new stored."),
        PublishErrors),
    security(("queue_token" = [])))]
pub async fn publish_batch(State(state): State<DataPlane>, ctx: QueueContext, request: Request) -> ApiResult<Response> {
    let meta = queue_meta(&state, &ctx).await?;
    let envelope = limits::batch_envelope_limit(meta.payload_limit);
    let (parts, raw) = request.into_parts();
    let bytes = body::read(&parts.headers, raw, envelope * 4 / 3 + 64 * KIB, false).await?;
    let request: BatchRequest = body::parse(&bytes)?;
    if request.messages.is_empty() || request.messages.len() > limits::BATCH_PUBLISH_MAX {
        return Err(ApiError::invalid(format!("messages must hold 1 to {} entries", limits::BATCH_PUBLISH_MAX)));
    }
    let messages = request
        .messages
        .into_iter()
        .enumerate()
        .map(|(index, entry)| validate(entry, &meta).map_err(|e| ApiError::InBatch { index, source: Box::new(e) }))
        .collect::<ApiResult<Vec<_>>>()?;
    let content: u64 = messages.iter().map(NewMessage::stored_bytes).sum();
    if content > envelope {
        return Err(ApiError::PayloadTooLarge(format!(
            "the batch holds {content} bytes of bodies and attributes; this queue accepts {envelope} per request"
        )));
    }
    let stored = store(&state, &ctx, &messages).await?;
    let status = status_of(&stored);
    let answer = PublishedBatch { messages: stored.into_iter().map(PublishedMessage::from).collect() };
    Ok(json_response(status, answer.to_json()))
}

async fn queue_meta(state: &DataPlane, ctx: &QueueContext) -> ApiResult<Arc<QueueMeta>> {
    let mut conn = state.engine.conn();
    state.auth.meta(&mut conn, ctx.queue).await?.ok_or_else(|| ApiError::not_found("no such queue"))
}

/// Checks one publish request against the API's rules and the queue's payload limit.
fn validate(request: PublishRequest<'_>, meta: &QueueMeta) -> ApiResult<NewMessage> {
    let body = match (request.body, request.body_base64) {
        (Some(text), None) => text.into_owned().into_bytes(),
        (None, Some(encoded)) => STANDARD
            .decode(encoded.as_bytes())
            .map_err(|_| ApiError::invalid("body_base64 is not valid standard base64"))?,
        (Some(_), Some(_)) => return Err(ApiError::invalid("send either body or body_base64, not both")),
        (None, None) => return Err(ApiError::invalid("send the message as body (text) or body_base64 (bytes)")),
    };
    if body.len() as u64 > meta.payload_limit {
        return Err(ApiError::PayloadTooLarge(format!(
            "the message body is {} bytes; this queue accepts up to {}",
            body.len(),
            meta.payload_limit
        )));
    }
    let content_type = request.content_type.unwrap_or_else(|| "application/json".to_owned());
    if content_type.is_empty() || content_type.len() > limits::CONTENT_TYPE_MAX_LEN {
        return Err(ApiError::invalid(format!(
            "content_type must be 1 to {} bytes of UTF-8",
            limits::CONTENT_TYPE_MAX_LEN
        )));
    }
    let attributes = match request.attributes {
        None | Some(Value::Null) => String::new(),
        Some(Value::Object(map)) if map.is_empty() => String::new(),
        Some(value @ Value::Object(_)) => value.to_string(),
        Some(_) => return Err(ApiError::invalid("attributes must be a JSON object")),
    };
    if attributes.len() > limits::ATTRIBUTES_MAX_BYTES {
        return Err(ApiError::invalid(format!(
            "attributes are {} bytes serialised; at most {} are allowed",
            attributes.len(),
            limits::ATTRIBUTES_MAX_BYTES
        )));
    }
    let delay_seconds = request.delay_seconds.unwrap_or(0);
    if delay_seconds > limits::DELAY_MAX_SECS {
        return Err(ApiError::invalid(format!("delay_seconds must be 0 to {}", limits::DELAY_MAX_SECS)));
    }
    let group_id = request.group_id.filter(|g| !g.is_empty());
    if group_id.as_ref().is_some_and(|g| g.len() > limits::GROUP_ID_MAX_LEN) {
        return Err(ApiError::invalid(format!("group_id is limited to {} bytes of UTF-8", limits::GROUP_ID_MAX_LEN)));
    }
    if let Some(key) = &request.idempotency_key
        && (key.is_empty() || key.len() > limits::IDEMPOTENCY_KEY_MAX_LEN)
    {
        return Err(ApiError::invalid(format!(
            "idempotency_key must be 1 to {} bytes of UTF-8",
            limits::IDEMPOTENCY_KEY_MAX_LEN
        )));
    }
    Ok(NewMessage {
        body,
        content_type,
        attributes,
        group_id,
        idempotency_key: request.idempotency_key,
        delay_ms: delay_seconds * 1000,
    })
}

/// Runs the publish script and maps a refusal to its error (entry-specific ones carry the index).
async fn store(state: &DataPlane, ctx: &QueueContext, messages: &[NewMessage]) -> ApiResult<Vec<Published>> {
    let in_batch = |index: usize, source: ApiError| ApiError::InBatch { index, source: Box::new(source) };
    // The engine wakes this process's long polls after the write (`aqs_engine::Waiters`).
    let outcome = state.engine.charged(ctx.charge).publish(ctx.queue, messages, now_ms()).await;
    match outcome? {
        PublishOutcome::Stored(published) => Ok(published),
        PublishOutcome::QueueMissing => Err(ApiError::not_found("no such queue")),
        PublishOutcome::Paused => Err(ApiError::QueuePaused("the queue is paused; it accepts no messages".into())),
        PublishOutcome::StorageFull => Err(ApiError::StorageLimitReached(
            "the queue's storage limit is reached; consume and acknowledge messages, or raise the limit".into(),
        )),
        PublishOutcome::TooLarge { index } => {
            Err(in_batch(index, ApiError::PayloadTooLarge("the message body is larger than this queue accepts".into())))
        }
        PublishOutcome::Conflict { index } => Err(in_batch(
            index,
            ApiError::IdempotencyConflict(
                "this idempotency_key was used for a different body, content type or attributes".into(),
            ),
        )),
    }
}

/// A single publish names no entry: drop the batch wrapper.
fn unbatch(err: ApiError) -> ApiError {
    match err {
        ApiError::InBatch { source, .. } => *source,
        other => other,
    }
}

/// 201 when anything was created; 200 when every entry was a duplicate of an earlier publish.
fn status_of(published: &[Published]) -> StatusCode {
    if published.iter().all(|p| p.duplicate) { StatusCode::OK } else { StatusCode::CREATED }
}

impl From<Published> for PublishedMessage {
    fn from(p: Published) -> Self {
        Self {
            published_at: rfc3339(p.published_at_ms),
            available_at: rfc3339(p.available_at_ms),
            id: p.id,
            duplicate: p.duplicate,
        }
    }
}

// A publish's answer is written by hand rather than through serde (which showed in the
// single-publish profile): every value is JSON as it stands, a hex id, RFC 3339 times, a boolean.
// The tests hold it to what serde writes.
impl PublishedMessage {
    fn write_json(&self, out: &mut String) {
        for part in [
            r#"{"id":""#,
            &self.id,
            r#"","published_at":""#,
            &self.published_at,
            r#"","available_at":""#,
            &self.available_at,
            r#"","duplicate":"#,
            if self.duplicate { "true}" } else { "false}" },
        ] {
            out.push_str(part);
        }
    }

    fn to_json(&self) -> String {
        let mut out = String::with_capacity(128);
        self.write_json(&mut out);
        out
    }
}

impl PublishedBatch {
    fn to_json(&self) -> String {
        let mut out = String::with_capacity(24 + self.messages.len() * 128);
        out.push_str(r#"{"messages":["#);
        for (i, message) in self.messages.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            message.write_json(&mut out);
        }
        out.push_str("]}");
        out
    }
}

fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hand_written_answers_are_what_serde_writes() {
        let message = |duplicate| PublishedMessage {
            id: "0123456789abcdef0123456789abcdef".into(),
            published_at: rfc3339(1_700_000_000_123),
            available_at: rfc3339(1_700_000_030_123),
            duplicate,
        };
        let one = message(false);
        assert_eq!(one.to_json(), serde_json::to_string(&one).unwrap());
        let batch = PublishedBatch { messages: vec![message(true), message(false)] };
        assert_eq!(batch.to_json(), serde_json::to_string(&batch).unwrap());
        assert_eq!(PublishedBatch { messages: vec![] }.to_json(), r#"{"messages":[]}"#);
    }
}
