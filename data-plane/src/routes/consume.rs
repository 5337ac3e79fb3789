//! `POST /consume`, `POST /ack`, `POST /nack`.

use super::SMALL_BODY_LIMIT;
use super::receipts::{Decoded, ReceiptFailure};
use super::views::{attributes, base64};
use crate::QueueContext;
use crate::body;
use crate::engine::Class;
use crate::engine::NackResult;
use crate::longpoll;
use crate::state::DataPlane;
use aqs_core::error::{ApiError, ApiResult};
use aqs_core::limits;
use aqs_core::receipt::{Receipt, expiry_ms};
use aqs_core::time::{now_ms, rfc3339};
use aqs_core::token::Scope;
use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;

const MAX_MESSAGES_DEFAULT: u32 = 10;
const NACK_DELAY_MAX_SECS: u64 = 43_200;
const ERROR_MAX_BYTES: usize = 1024;

#[derive(Deserialize)]
pub struct ConsumeRequest {
    max_messages: Option<u32>,
    max_wait_seconds: Option<u32>,
    visibility_seconds: Option<u32>,
}

pub async fn consume(
    State(state): State<DataPlane>,
    ctx: QueueContext,
    headers: HeaderMap,
    raw: Body,
) -> ApiResult<Json<Value>> {
    let charge = ctx.authorize(&state, &[Scope::Consume], Class::Messages)?;
    if state.auth.push_enabled(&mut state.engine.conn(), ctx.queue).await? {
        return Err(ApiError::PushEnabled(
            "this queue delivers its messages to an HTTP handler (push); consume is refused while push is on. \
             Stop push (DELETE /api/v1/queues/{slug}/push) to consume"
                .into(),
        ));
    }
    let request: ConsumeRequest = body::parse(&body::read(&headers, raw, SMALL_BODY_LIMIT, true).await?)?;
    // Not kept for the (possibly long) wait.
    drop(headers);
    let max = request.max_messages.unwrap_or(MAX_MESSAGES_DEFAULT);
    if !(1..=limits::CONSUME_MAX_MESSAGES).contains(&max) {
        return Err(ApiError::invalid(format!("max_messages must be 1 to {}", limits::CONSUME_MAX_MESSAGES)));
    }
    let wait = request.max_wait_seconds.unwrap_or(0);
    if wait > limits::LONG_POLL_MAX_SECS {
        return Err(ApiError::invalid(format!("max_wait_seconds must be 0 to {}", limits::LONG_POLL_MAX_SECS)));
    }
    let lease_ms = match request.visibility_seconds {
        None => 0,
        Some(secs) if (limits::VISIBILITY_MIN_SECS..=limits::VISIBILITY_MAX_SECS).contains(&secs) => {
            u64::from(secs) * 1000
        }
        Some(_) => {
            return Err(ApiError::invalid(format!(
                "visibility_seconds must be {} to {}",
                limits::VISIBILITY_MIN_SECS,
                limits::VISIBILITY_MAX_SECS
            )));
        }
    };
    let consumed =
        longpoll::consume(&state, charge, ctx.queue, max, lease_ms, Duration::from_secs(u64::from(wait))).await?;
    let expires_at_ms = expiry_ms(now_ms(), consumed.lease_ms);
    let messages: Vec<Value> = consumed
        .deliveries
        .iter()
        .map(|d| {
            let receipt = Receipt {
                queue: ctx.queue,
                stream_id: d.stream_id,
                message: d.message,
                delivery: d.attempts,
                expires_at_ms,
            };
            json!({
                "id": d.message.to_string(),
                "receipt": state.receipts.encode_with(&receipt, Some(d.hint)),
                "body_base64": base64(&d.body),
                "content_type": d.content_type,
                "attributes": attributes(&d.attributes),
                "attempts": d.attempts,
                "group_id": d.group_id,
                "published_at": rfc3339(d.published_at_ms),
            })
        })
        .collect();
    Ok(Json(json!({ "messages": messages })))
}

#[derive(Deserialize)]
pub struct AckRequest {
    receipts: Vec<String>,
}

#[derive(Deserialize)]
pub struct NackRequest {
    receipts: Vec<String>,
    delay_seconds: Option<u64>,
    error: Option<String>,
}

pub async fn ack(
    State(state): State<DataPlane>,
    ctx: QueueContext,
    headers: HeaderMap,
    raw: Body,
) -> ApiResult<Json<Value>> {
    let charge = ctx.authorize(&state, &[Scope::Consume], Class::Messages)?;
    let request: AckRequest = body::parse(&body::read(&headers, raw, SMALL_BODY_LIMIT, false).await?)?;
    let decoded = Decoded::new(&state, &ctx, request.receipts)?;
    let results = state.engine.charged(charge).ack_hinted(ctx.queue, &decoded.valid, &decoded.hints, now_ms()).await?;
    let mut failed = decoded.failed;
    let mut acked = 0;
    for (ok, text) in results.into_iter().zip(decoded.valid_texts) {
        if ok {
            acked += 1;
        } else {
            failed.push(ReceiptFailure::lease_lost(text));
        }
    }
    Ok(Json(json!({ "acked": acked, "failed": failed })))
}

pub async fn nack(
    State(state): State<DataPlane>,
    ctx: QueueContext,
    headers: HeaderMap,
    raw: Body,
) -> ApiResult<Json<Value>> {
    let charge = ctx.authorize(&state, &[Scope::Consume], Class::Messages)?;
    let request: NackRequest = body::parse(&body::read(&headers, raw, SMALL_BODY_LIMIT, false).await?)?;
    let delay = request.delay_seconds.unwrap_or(0);
    if delay > NACK_DELAY_MAX_SECS {
        return Err(ApiError::invalid(format!("delay_seconds must be 0 to {NACK_DELAY_MAX_SECS}")));
    }
    let error = truncate(request.error.unwrap_or_default(), ERROR_MAX_BYTES);
    let decoded = Decoded::new(&state, &ctx, request.receipts)?;
    let results = state.engine.charged(charge).nack(ctx.queue, &decoded.valid, delay * 1000, &error, now_ms()).await?;
    let mut failed = decoded.failed;
    let mut nacked = 0;
    for (result, text) in results.into_iter().zip(decoded.valid_texts) {
        match result {
            NackResult::Returned | NackResult::DeadLettered => nacked += 1,
            NackResult::LeaseLost => failed.push(ReceiptFailure::lease_lost(text)),
        }
    }
    Ok(Json(json!({ "nacked": nacked, "failed": failed })))
}

/// Cuts `text` to at most `max` bytes on a character boundary.
fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}
