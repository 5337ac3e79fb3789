//! Batch mode, the Worker-trigger shape (`docs/push-delivery.md`, Batch mode): one POST per batch,
//! `{"queue", "messages": [{id, body | body_base64, content_type, attributes, attempts, timestamp}]}`
//! signed with a fresh batch id as `webhook-id`. A 2xx acknowledges every message its body does
//! not name in `retry` (or all of them are retried with `retry_all`); anything else retries the
//! whole batch with backoff. `attempts` here counts this delivery (1 on the first), like a
//! consumer's `message.attempts`.

use super::deliver::{Answer, Attempt};
use super::log;
use super::message::{nack_outcome, receipt, retry_delay};
use super::outcome::{self, BatchVerdict};
use super::settings::PushSettings;
use crate::routes::views::{attributes, base64};
use crate::state::DataPlane;
use aqs_core::error::ApiResult;
use aqs_core::ids::MessageId;
use aqs_core::push::{DeliveryOutcome, DeliveryRecord};
use aqs_core::receipt::{AckHint, Receipt};
use aqs_core::time::{now_ms, rfc3339};
use aqs_engine::Delivery;
use serde_json::{Value, json};
use std::time::Duration;

/// A 2xx batch answer is read up to this many bytes for its `retry` list.
const REPLY_MAX_BYTES: usize = 1 << 20;

pub fn body(settings: &PushSettings, deliveries: &[Delivery]) -> Vec<u8> {
    let messages: Vec<Value> = deliveries
        .iter()
        .map(|d| {
            let mut entry = json!({
                "id": d.message.to_string(),
                "content_type": d.content_type,
                "attributes": attributes(&d.attributes),
                "attempts": d.attempts,
                "timestamp": rfc3339(d.published_at_ms),
            });
            match std::str::from_utf8(&d.body) {
                Ok(text) => entry["body"] = json!(text),
                Err(_) => entry["body_base64"] = json!(base64(&d.body)),
            }
            entry
        })
        .collect();
    serde_json::to_vec(&json!({ "queue": settings.record.queue, "messages": messages }))
        .expect("a JSON value serialises")
}

/// Delivers one leased batch and settles every lease in it.
pub async fn deliver(state: &DataPlane, settings: &PushSettings, deliveries: Vec<Delivery>) {
    let batch_id = MessageId::new().to_string();
    let attempt = state.push.send(settings, &batch_id, body(settings, &deliveries), REPLY_MAX_BYTES).await;
    let verdict = outcome::batch(&attempt.answer);
    aqs_core::metrics::push_delivered("batch", verdict.metric_label());
    match apply(state, settings, &deliveries, &verdict).await {
        Ok(outcome) => {
            log::record(
                state,
                settings.queue,
                &record(&attempt, &settings.record.handler_url, &batch_id, deliveries.len(), outcome, &verdict),
            )
            .await
        }
        Err(err) => tracing::warn!(error = %err, queue = %settings.queue, "cannot settle a push batch"),
    }
}

/// Applies a batch verdict: what summarises the batch for the log.
pub async fn apply(
    state: &DataPlane,
    settings: &PushSettings,
    deliveries: &[Delivery],
    verdict: &BatchVerdict,
) -> ApiResult<DeliveryOutcome> {
    let now = now_ms();
    let engine = &state.engine;
    match verdict {
        BatchVerdict::AckAll => {
            let receipts: Vec<Receipt> = deliveries.iter().map(|d| receipt(settings, d)).collect();
            let hints: Vec<Option<AckHint>> = deliveries.iter().map(|d| Some(d.hint)).collect();
            let acked = engine.ack_hinted(settings.queue, &receipts, &hints, now).await?;
            Ok(if acked.iter().all(|ok| *ok) { DeliveryOutcome::Acked } else { DeliveryOutcome::LeaseLost })
        }
        BatchVerdict::RetryAll { after, reason } => {
            let retries: Vec<(Receipt, u64)> = deliveries.iter().map(|d| retry(settings, d, *after)).collect();
            let results = engine.nack_each(settings.queue, &retries, reason, now).await?;
            // Retried, unless one of them was dead-lettered or had lost its lease.
            Ok(results
                .into_iter()
                .map(nack_outcome)
                .rfind(|o| *o != DeliveryOutcome::Retried)
                .unwrap_or(DeliveryOutcome::Retried))
        }
        BatchVerdict::Partial { retry: named } => {
            let (again, done): (Vec<&Delivery>, Vec<&Delivery>) =
                deliveries.iter().partition(|d| named.contains_key(&d.message.to_string()));
            let receipts: Vec<Receipt> = done.iter().map(|d| receipt(settings, d)).collect();
            let hints: Vec<Option<AckHint>> = done.iter().map(|d| Some(d.hint)).collect();
            if !receipts.is_empty() {
                engine.ack_hinted(settings.queue, &receipts, &hints, now).await?;
            }
            let retries: Vec<(Receipt, u64)> =
                again.iter().map(|d| retry(settings, d, named[&d.message.to_string()])).collect();
            if !retries.is_empty() {
                engine.nack_each(settings.queue, &retries, "handler asked for a retry", now).await?;
            }
            Ok(DeliveryOutcome::PartiallyRetried)
        }
    }
}

/// A delivery's receipt and its delay before it goes out again (`after`, else the backoff).
fn retry(settings: &PushSettings, delivery: &Delivery, after: Option<Duration>) -> (Receipt, u64) {
    (receipt(settings, delivery), retry_delay(delivery, after).as_millis() as u64)
}

fn record(
    attempt: &Attempt,
    handler_url: &str,
    id: &str,
    messages: usize,
    outcome: DeliveryOutcome,
    verdict: &BatchVerdict,
) -> DeliveryRecord {
    let status = match &attempt.answer {
        Answer::Status { status, .. } => Some(*status),
        _ => None,
    };
    let detail = match verdict {
        BatchVerdict::AckAll => String::new(),
        BatchVerdict::Partial { retry } => format!("{} of {messages} returned for a retry", retry.len()),
        BatchVerdict::RetryAll { reason, .. } => reason.chars().take(200).collect(),
    };
    DeliveryRecord {
        v: 1,
        at_ms: attempt.sent_at_ms,
        message_id: id.to_owned(),
        messages: messages as u32,
        status,
        latency_ms: attempt.latency.as_millis() as u64,
        outcome,
        detail,
        handler_url: handler_url.to_owned(),
    }
}
