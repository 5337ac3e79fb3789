//! Message mode: one POST per message, `{"id", "queue", "payload", "attempts"}` as
//! `docs/push-delivery.md` describes it, then the verdict applied to the message's lease (by the
//! dispatcher's settler, `settle`, many leases per script call).
//!
//! `payload` is the body as a string (a producer's `JSON.stringify`'d payload arrives as that JSON
//! text), or `payload_base64` for a body that is not UTF-8. `attempts` counts the previous
//! deliveries (0 on the first), where the engine counts this one: hence the `- 1`.

use super::backoff;
use super::deliver::Attempt;
use super::outcome::{self, Verdict};
use super::settings::PushSettings;
use super::settle::{Settlement, Settler};
use crate::state::DataPlane;
use aqs_core::push::{DeliveryOutcome, DeliveryRecord, REASON_BODY_BYTES};
use aqs_core::receipt::Receipt;
use aqs_engine::{Delivery, NackResult};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use std::time::Duration;
use tokio::sync::OwnedSemaphorePermit;

/// The request body of one delivery, serialised straight from the delivery (no JSON tree).
#[derive(Serialize)]
struct Body<'a> {
    id: &'a str,
    queue: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload_base64: Option<String>,
    attempts: u32,
}

/// The request body for one delivery of the message whose id is `id`.
pub fn body(settings: &PushSettings, id: &str, delivery: &Delivery) -> Vec<u8> {
    let text = std::str::from_utf8(&delivery.body).ok();
    let body = Body {
        id,
        queue: &settings.record.queue,
        payload: text,
        payload_base64: text.is_none().then(|| STANDARD.encode(&delivery.body)),
        attempts: delivery.attempts.saturating_sub(1),
    };
    serde_json::to_vec(&body).expect("the body serialises")
}

/// Delivers one leased message holding `place` (one of the concurrency cap's) until the handler
/// has answered, and hands the answer to the settler, which applies it to the lease and logs it
/// (with other answers, in one round trip) and then releases `outstanding`.
pub async fn deliver(
    state: &DataPlane,
    settings: &PushSettings,
    delivery: Delivery,
    settler: &Settler,
    place: OwnedSemaphorePermit,
    outstanding: OwnedSemaphorePermit,
) {
    let id = delivery.message.to_string();
    let attempt = state.push.send(settings, &id, body(settings, &id, &delivery), REASON_BODY_BYTES).await;
    drop(place);
    let verdict = outcome::message(&attempt.answer);
    aqs_core::metrics::push_delivered("message", verdict.metric_label());
    settler.settle(Settlement { delivery, attempt, verdict, outstanding });
}

/// When a failed delivery goes out again: the handler's `Retry-After`, else the default backoff.
pub fn retry_delay(delivery: &Delivery, after: Option<Duration>) -> Duration {
    after.unwrap_or_else(|| backoff::delay(delivery.attempts))
}

pub fn nack_outcome(result: NackResult) -> DeliveryOutcome {
    match result {
        NackResult::Returned => DeliveryOutcome::Retried,
        NackResult::DeadLettered => DeliveryOutcome::DeadLettered,
        NackResult::LeaseLost => DeliveryOutcome::LeaseLost,
    }
}

/// The engine's proof of this lease (never sent anywhere, so never encoded).
pub fn receipt(settings: &PushSettings, delivery: &Delivery) -> Receipt {
    delivery.receipt(settings.queue, u64::MAX)
}

pub fn record(
    attempt: &Attempt,
    handler_url: &str,
    id: &str,
    messages: u32,
    outcome: DeliveryOutcome,
    verdict: &Verdict,
) -> DeliveryRecord {
    let status = match &attempt.answer {
        super::deliver::Answer::Status { status, .. } => Some(*status),
        _ => None,
    };
    let detail = match verdict {
        Verdict::Ack => String::new(),
        Verdict::Retry { reason, .. } | Verdict::Dead { reason } => reason.chars().take(200).collect(),
    };
    DeliveryRecord {
        v: 1,
        at_ms: attempt.sent_at_ms,
        message_id: id.to_owned(),
        messages,
        status,
        latency_ms: attempt.latency.as_millis() as u64,
        outcome,
        detail,
        handler_url: handler_url.to_owned(),
    }
}
