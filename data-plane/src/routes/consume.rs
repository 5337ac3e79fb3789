//! `POST /consume`, `POST /ack`, `POST /nack`.

use super::SMALL_BODY_LIMIT;
use super::receipts::{Decoded, ReceiptFailure};
use super::views::{QueuePath, attributes, base64};
use crate::QueueContext;
use crate::body;
use crate::consumers::Traffic;
use crate::longpoll;
use crate::state::DataPlane;
use aqs_core::client_addr::ClientAddr;
use aqs_core::error::{ApiError, ApiResult};
use aqs_core::errors;
use aqs_core::ids::QueueId;
use aqs_core::limits;
use aqs_core::receipt::expiry_ms;
use aqs_core::time::{now_ms, rfc3339};
use aqs_engine::{Charge, NackResult};
use axum::Json;
use axum::body::Body;
use axum::extract::{FromRequestParts, Request, State};
use axum::handler::Handler;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::pin::Pin;
use std::time::Duration;
use utoipa::ToSchema;
use uuid::Uuid;

const MAX_MESSAGES_DEFAULT: u32 = 10;
const NACK_DELAY_MAX_SECS: u64 = 43_200;
const ERROR_MAX_BYTES: usize = 1024;

/// Every field is optional; an empty body takes the defaults.
#[derive(Deserialize, ToSchema)]
pub struct ConsumeRequest {
    /// How many messages at most, 1 to 100 (default 10).
    #[schema(minimum = 1, maximum = 100)]
    max_messages: Option<u32>,
    /// How long to wait for a first message, 0 to 20 s (default 0: answer at once).
    #[schema(minimum = 0, maximum = 20)]
    max_wait_seconds: Option<u32>,
    /// The lease, 1 s to 12 h (default the queue's visibility timeout).
    #[schema(minimum = 1, maximum = 43200)]
    visibility_seconds: Option<u32>,
    /// 1 to 100 receipts to acknowledge first, as `POST /ack` would (a consumer's previous batch):
    /// one request instead of two. They are acknowledged before anything is leased or waited
    /// for; the answer's `ack` says what each did.
    #[schema(min_items = 1, max_items = 100)]
    ack: Option<Vec<String>>,
}

#[derive(Serialize, ToSchema)]
pub struct ConsumeAnswer {
    /// Possibly none, when nothing arrived within the wait.
    pub messages: Vec<Delivery>,
    /// What the request's `ack` receipts did; only when it had some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack: Option<AckAnswer>,
}

/// One message under a lease, with the receipt that acknowledges, returns or extends it.
#[derive(Serialize, ToSchema)]
pub struct Delivery {
    /// 32 lowercase hex characters, stable across redeliveries.
    pub id: String,
    /// Proof of this delivery: ack, nack and extend take it.
    pub receipt: String,
    /// The body, base64-encoded.
    pub body_base64: String,
    pub content_type: String,
    /// The attributes the message was published with (`{}` for none).
    #[schema(value_type = Object)]
    pub attributes: Value,
    /// Deliveries so far, this one included (1 on the first).
    pub attempts: u32,
    pub group_id: Option<String>,
    #[schema(format = DateTime)]
    pub published_at: String,
}

errors!(ConsumeErrors: "invalid_request", "unauthorized", "team_suspended", "forbidden", "not_found", "push_enabled",
    "payload_too_large", "unsupported_media_type", "rate_limited", "service_unavailable", "replication_timeout");

/// Receive a batch of messages, each hidden from other consumers for the lease (consume scope).
#[utoipa::path(post, path = "/queue/v1/{slug}/consume", operation_id = "consume", tag = "consume", params(QueuePath),
    request_body(content = ConsumeRequest, description = "May be empty: every field has a default."),
    responses((status = 200, body = ConsumeAnswer, description = "The messages leased, possibly none."), ConsumeErrors),
    security(("queue_token" = [])))]
pub fn consume(state: DataPlane, request: Request) -> impl Future<Output = Response> + Send {
    // Everything before the wait (the extractors, the body, the `ack` receipts) runs in its own
    // boxed future, freed once it is done: a held poll keeps only the future below for its whole
    // wait, not the largest of the steps before it (`docs/performance.md`, What a held long poll costs).
    let prepared = Box::pin(prepare(state.clone(), request));
    async move {
        let plan = match prepared.await {
            Ok(plan) => plan,
            Err(err) => return err.into_response(),
        };
        match longpoll::consume(&state, plan.charge, plan.queue, plan.max, plan.lease_ms, plan.wait).await {
            Ok(consumed) => Json(answer(&state, plan, consumed)).into_response(),
            Err(err) => err.into_response(),
        }
    }
}

/// [`consume`] as the router's handler. Written out rather than taking extractors: axum's
/// handler for a function of extractors keeps the request's parts (about 250 bytes) in its future
/// until the function returns, so through every held poll's wait.
#[derive(Clone, Copy)]
pub struct Consume;

impl Handler<(), DataPlane> for Consume {
    type Future = Pin<Box<dyn Future<Output = Response> + Send>>;

    fn call(self, request: Request, state: DataPlane) -> Self::Future {
        Box::pin(consume(state, request))
    }
}

/// What a consume request asks for, checked, once its `ack` receipts are acknowledged.
struct Plan {
    queue: QueueId,
    token: Uuid,
    client: ClientAddr,
    max: u32,
    lease_ms: u64,
    wait: Duration,
    /// The request's charge, unless the acknowledgements took it.
    charge: Option<Charge>,
    ack: Option<AckAnswer>,
    /// The caller's `User-Agent`, for its consumer tally.
    agent: String,
}

/// A consume request up to its wait: push off, body read and checked, `ack` receipts acknowledged.
async fn prepare(state: DataPlane, request: Request) -> ApiResult<Plan> {
    // The extractors in the order a handler taking them would run them (401, 404, 403 first).
    let (mut parts, raw) = request.into_parts();
    let ctx = QueueContext::from_request_parts(&mut parts, &state).await?;
    let Ok(client) = ClientAddr::from_request_parts(&mut parts, &state).await;
    let headers = parts.headers;
    if state.auth.push_enabled(&mut state.engine.conn(), ctx.queue).await? {
        return Err(ApiError::PushEnabled(
            "this queue delivers its messages to an HTTP handler (push); consume is refused while push is on. \
             Stop push (DELETE /api/v1/queues/{slug}/push) to consume"
                .into(),
        ));
    }
    let request: ConsumeRequest = body::parse(&body::read(&headers, raw, SMALL_BODY_LIMIT, true).await?)?;
    let agent = user_agent(&headers);
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
    if request.ack.as_ref().is_some_and(|a| a.is_empty() || a.len() > limits::ACK_MAX_RECEIPTS) {
        return Err(ApiError::field("ack", format!("ack must hold 1 to {} receipts", limits::ACK_MAX_RECEIPTS)));
    }
    // The acknowledgements go first and take the request's charge (a refused request changes
    // nothing); the lease that follows is the same request.
    let (ack, charge) = match request.ack {
        Some(receipts) => (Some(acknowledge(&state, &ctx, receipts).await?), None),
        None => (None, Some(ctx.charge)),
    };
    Ok(Plan {
        queue: ctx.queue,
        token: ctx.token.token_id,
        client,
        max,
        lease_ms,
        wait: Duration::from_secs(u64::from(wait)),
        charge,
        ack,
        agent,
    })
}

/// The consume answer: each delivery with its receipt, after the request is tallied.
fn answer(state: &DataPlane, plan: Plan, consumed: longpoll::Consumed) -> ConsumeAnswer {
    let Plan { queue, token, client, agent, ack, .. } = plan;
    let now = now_ms();
    let acked = ack.as_ref().map_or(0, |a| u64::from(a.acked));
    let traffic = Traffic { requests: 1, messages: consumed.deliveries.len() as u64, acked };
    tally(state, (queue, token), &client, &agent, traffic, now);
    let expires_at_ms = expiry_ms(now, consumed.lease_ms);
    let messages = consumed
        .deliveries
        .into_iter()
        .map(|d| {
            let receipt = d.receipt(queue, expires_at_ms);
            Delivery {
                id: d.message.to_string(),
                receipt: state.receipts.encode_with(&receipt, Some(d.hint)),
                body_base64: base64(&d.body),
                content_type: d.content_type,
                attributes: attributes(&d.attributes),
                attempts: d.attempts,
                group_id: d.group_id,
                published_at: rfc3339(d.published_at_ms),
            }
        })
        .collect();
    ConsumeAnswer { messages, ack }
}

#[derive(Deserialize, ToSchema)]
pub struct AckRequest {
    /// 1 to 100 receipts from consume (or extend).
    #[schema(min_items = 1, max_items = 100)]
    receipts: Vec<String>,
}

#[derive(Deserialize, ToSchema)]
pub struct NackRequest {
    /// 1 to 100 receipts from consume (or extend).
    #[schema(min_items = 1, max_items = 100)]
    receipts: Vec<String>,
    /// When the messages become available again: 0 (default, at once) to 43200 s.
    #[schema(minimum = 0, maximum = 43200)]
    delay_seconds: Option<u64>,
    /// Why the work failed; kept (its first KiB) as the dead-letter reason if it was the last attempt.
    error: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct AckAnswer {
    /// How many messages were acknowledged (and deleted).
    pub acked: u32,
    /// One per receipt that acknowledged nothing.
    pub failed: Vec<ReceiptFailure>,
}

#[derive(Serialize, ToSchema)]
pub struct NackAnswer {
    /// How many messages were returned (or dead-lettered, on their last attempt).
    pub nacked: u32,
    /// One per receipt that returned nothing.
    pub failed: Vec<ReceiptFailure>,
}

errors!(ReceiptErrors: "invalid_request", "unauthorized", "team_suspended", "forbidden", "not_found",
    "payload_too_large", "unsupported_media_type", "rate_limited", "service_unavailable", "replication_timeout");

/// Acknowledge messages: done, delete them (consume scope). A stale receipt fails alone, per entry.
#[utoipa::path(post, path = "/queue/v1/{slug}/ack", operation_id = "ack", tag = "consume", params(QueuePath), request_body = AckRequest,
    responses((status = 200, body = AckAnswer, description = "What each receipt did."), ReceiptErrors),
    security(("queue_token" = [])))]
pub async fn ack(
    State(state): State<DataPlane>,
    ctx: QueueContext,
    client: ClientAddr,
    headers: HeaderMap,
    raw: Body,
) -> ApiResult<Json<AckAnswer>> {
    let request: AckRequest = body::parse(&body::read(&headers, raw, SMALL_BODY_LIMIT, false).await?)?;
    let answer = acknowledge(&state, &ctx, request.receipts).await?;
    let traffic = Traffic { acked: u64::from(answer.acked), ..Traffic::default() };
    tally(&state, (ctx.queue, ctx.token.token_id), &client, &user_agent(&headers), traffic, now_ms());
    Ok(Json(answer))
}

/// Acknowledges `receipts` (an ack request's, or a consume's `ack`), taking the request's charge.
async fn acknowledge(state: &DataPlane, ctx: &QueueContext, receipts: Vec<String>) -> ApiResult<AckAnswer> {
    let decoded = Decoded::new(state, ctx, receipts)?;
    let results =
        state.engine.charged(ctx.charge).ack_hinted(ctx.queue, &decoded.valid, &decoded.hints, now_ms()).await?;
    let mut failed = decoded.failed;
    let mut acked = 0;
    for (ok, text) in results.into_iter().zip(decoded.valid_texts) {
        if ok {
            acked += 1;
        } else {
            failed.push(ReceiptFailure::lease_lost(text));
        }
    }
    Ok(AckAnswer { acked, failed })
}

/// The request's `User-Agent`, or "" (a consumer tally's part).
fn user_agent(headers: &HeaderMap) -> String {
    headers.get(axum::http::header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned()
}

/// Adds the request to its consumer's tally (`consumers.rs`): in memory, off Redis.
/// `(queue, token)`: the request's queue and token id.
fn tally(
    state: &DataPlane,
    (queue, token): (QueueId, Uuid),
    client: &ClientAddr,
    agent: &str,
    traffic: Traffic,
    now: u64,
) {
    let address = client.shown().unwrap_or_default();
    state.consumers.record(queue, token, &address, agent, traffic, now);
}

/// Return messages for another attempt, at once or after a delay (consume scope).
#[utoipa::path(post, path = "/queue/v1/{slug}/nack", operation_id = "nack", tag = "consume", params(QueuePath), request_body = NackRequest,
    responses((status = 200, body = NackAnswer, description = "What each receipt did."), ReceiptErrors),
    security(("queue_token" = [])))]
pub async fn nack(
    State(state): State<DataPlane>,
    ctx: QueueContext,
    headers: HeaderMap,
    raw: Body,
) -> ApiResult<Json<NackAnswer>> {
    let request: NackRequest = body::parse(&body::read(&headers, raw, SMALL_BODY_LIMIT, false).await?)?;
    let delay = request.delay_seconds.unwrap_or(0);
    if delay > NACK_DELAY_MAX_SECS {
        return Err(ApiError::invalid(format!("delay_seconds must be 0 to {NACK_DELAY_MAX_SECS}")));
    }
    let error = truncate(request.error.unwrap_or_default(), ERROR_MAX_BYTES);
    let decoded = Decoded::new(&state, &ctx, request.receipts)?;
    let results =
        state.engine.charged(ctx.charge).nack(ctx.queue, &decoded.valid, delay * 1000, &error, now_ms()).await?;
    let mut failed = decoded.failed;
    let mut nacked = 0;
    for (result, text) in results.into_iter().zip(decoded.valid_texts) {
        match result {
            NackResult::Returned | NackResult::DeadLettered => nacked += 1,
            NackResult::LeaseLost => failed.push(ReceiptFailure::lease_lost(text)),
        }
    }
    Ok(Json(NackAnswer { nacked, failed }))
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
