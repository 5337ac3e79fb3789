//! The consumer loop, with the Worker trigger's batch semantics (the same as `aqs-worker`'s):
//! - `Message::ack` / `Message::retry` decide one message, `Batch::ack_all` / `Batch::retry_all`
//!   every message; the last call for a message wins;
//! - a handler that returns `Ok` acknowledges every message it did not mention;
//! - a handler that returns `Err` returns every message it did not decide, after an exponential
//!   backoff from 2 s (capped at 5 min), with the error as the reason the server keeps should the
//!   message be dead-lettered; explicit decisions survive the error.
//!
//! A loop acknowledges a batch with its next consume (`consume_acking`: one request instead of
//! two); returned messages go back at once. Cancelling the stop token lets each loop finish the
//! batch in hand and acknowledge it; a batch that arrives after the stop is returned at once (nack
//! without delay).

use crate::body::Body;
use crate::client::{BATCH_MAX, Queue};
use crate::types::{ConsumeRequest, Delivered};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt::Display;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Ack,
    Retry { delay_seconds: u64 },
}

/// The backoff of a failed batch: 2 s, 4 s, 8 s, … by the message's attempt, at most 5 minutes.
pub fn error_backoff_seconds(attempts: u32) -> u64 {
    let exponent = attempts.max(1).saturating_sub(1).min(16);
    (2u64 << exponent).min(300)
}

#[derive(Debug)]
pub struct Message {
    pub id: String,
    /// `published_at`, RFC 3339.
    pub timestamp: String,
    pub body: Body,
    /// This delivery's number: 1 on the first.
    pub attempts: u32,
    pub content_type: String,
    pub attributes: Map<String, Value>,
    pub group_id: Option<String>,
    pub receipt: String,
    decision: Mutex<Option<Decision>>,
}

impl Message {
    pub fn new(delivered: Delivered) -> Self {
        Self {
            body: Body::from_base64(&delivered.body_base64, &delivered.content_type),
            id: delivered.id,
            timestamp: delivered.published_at,
            attempts: delivered.attempts,
            content_type: delivered.content_type,
            attributes: delivered.attributes,
            group_id: delivered.group_id,
            receipt: delivered.receipt,
            decision: Mutex::new(None),
        }
    }

    pub fn ack(&self) {
        self.decide(Decision::Ack);
    }

    pub fn retry(&self, delay_seconds: u64) {
        self.decide(Decision::Retry { delay_seconds });
    }

    /// The handler's explicit decision, if it made one.
    pub fn decision(&self) -> Option<Decision> {
        *self.decision.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn decide(&self, decision: Decision) {
        *self.decision.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(decision);
    }
}

/// One batch; cloning shares it, so the handler's decisions are seen by the loop that settles it.
#[derive(Debug, Clone)]
pub struct Batch {
    inner: Arc<(String, Vec<Message>)>,
}

impl Batch {
    pub fn new(queue: impl Into<String>, delivered: Vec<Delivered>) -> Self {
        Self { inner: Arc::new((queue.into(), delivered.into_iter().map(Message::new).collect())) }
    }

    /// The queue's slug.
    pub fn queue(&self) -> &str {
        &self.inner.0
    }

    pub fn messages(&self) -> &[Message] {
        &self.inner.1
    }

    pub fn ack_all(&self) {
        self.messages().iter().for_each(Message::ack);
    }

    pub fn retry_all(&self, delay_seconds: u64) {
        self.messages().iter().for_each(|m| m.retry(delay_seconds));
    }

    /// Each message's fate once the handler finished (`failed`: it returned an error).
    pub fn outcome(&self, failed: bool) -> Vec<(&Message, Decision)> {
        self.messages()
            .iter()
            .map(|m| {
                let fallback = if failed {
                    Decision::Retry { delay_seconds: error_backoff_seconds(m.attempts) }
                } else {
                    Decision::Ack
                };
                (m, m.decision().unwrap_or(fallback))
            })
            .collect()
    }
}

#[derive(Debug, Clone)]
pub struct ConsumerOptions {
    /// 1 to 100 (default 10).
    pub messages_per_run: u32,
    /// Long-poll wait, 0 to 20 s (default 20).
    pub wait_seconds: u32,
    /// The lease; the queue's visibility timeout when `None`.
    pub visibility_seconds: Option<u32>,
    /// Batches handled at once (default 1).
    pub concurrency: usize,
}

impl Default for ConsumerOptions {
    fn default() -> Self {
        Self { messages_per_run: 10, wait_seconds: 20, visibility_seconds: None, concurrency: 1 }
    }
}

/// What a consumer did: handler runs, messages acknowledged and returned.
#[derive(Debug, Default)]
pub struct Counts {
    pub runs: AtomicU64,
    pub acked: AtomicU64,
    pub retried: AtomicU64,
}

impl Counts {
    /// (runs, acked, retried) now.
    pub fn snapshot(&self) -> (u64, u64, u64) {
        (self.runs.load(Ordering::Relaxed), self.acked.load(Ordering::Relaxed), self.retried.load(Ordering::Relaxed))
    }
}

/// Runs `concurrency` loops until `stop` is cancelled; returns once each settled its last batch.
pub async fn run<F, Fut, E>(
    queue: &Queue,
    options: &ConsumerOptions,
    stop: &CancellationToken,
    counts: &Counts,
    handler: F,
) where
    F: Fn(Batch) -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: Display,
{
    let loops = (0..options.concurrency.max(1)).map(|_| one_loop(queue, options, stop, counts, &handler));
    futures_util::future::join_all(loops).await;
}

async fn one_loop<F, Fut, E>(
    queue: &Queue,
    options: &ConsumerOptions,
    stop: &CancellationToken,
    counts: &Counts,
    handler: &F,
) where
    F: Fn(Batch) -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: Display,
{
    let request = ConsumeRequest {
        max_messages: options.messages_per_run,
        max_wait_seconds: options.wait_seconds,
        visibility_seconds: options.visibility_seconds,
    };
    let mut failures = 0u32;
    // The last batch's acknowledgements, sent with the next consume (one request instead of two).
    let mut acks: Vec<String> = Vec::new();
    while !stop.is_cancelled() {
        let consumed = if acks.is_empty() {
            queue.consume(&request).await
        } else {
            queue.consume_acking(&request, &acks).await.map(|(delivered, acked)| {
                counts.acked.fetch_add(u64::from(acked.acked), Ordering::Relaxed);
                acks.clear();
                delivered
            })
        };
        let delivered = match consumed {
            Ok(delivered) => {
                failures = 0;
                delivered
            }
            Err(err) => {
                failures += 1;
                tracing::warn!(error = %err, queue = queue.slug(), "consume failed; trying again");
                tokio::time::sleep(Duration::from_millis(250 << failures.min(5))).await;
                continue;
            }
        };
        if delivered.is_empty() {
            continue;
        }
        if stop.is_cancelled() {
            // Fetched but not started: back to the queue now, not when the lease runs out.
            let receipts: Vec<String> = delivered.into_iter().map(|d| d.receipt).collect();
            settle(queue, &[], &receipts, 0, None, counts).await;
            break;
        }
        let batch = Batch::new(queue.slug(), delivered);
        let result = handler(batch.clone()).await;
        acks = finish(queue, &batch, result, counts).await;
    }
    // Stopping: what was handled is acknowledged now.
    settle(queue, &acks, &[], 0, None, counts).await;
}

/// Settles every message of `batch` by the handler's `result` and its explicit decisions: returns
/// those it acknowledges, for the loop's next consume to carry, and returns the others to the
/// queue now.
pub async fn finish<E: Display>(queue: &Queue, batch: &Batch, result: Result<(), E>, counts: &Counts) -> Vec<String> {
    counts.runs.fetch_add(1, Ordering::Relaxed);
    let error = result.err().map(|e| {
        let text = e.to_string();
        text.chars().take(1000).collect::<String>()
    });
    let mut acks = Vec::new();
    let mut retries: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for (message, decision) in batch.outcome(error.is_some()) {
        match decision {
            Decision::Ack => acks.push(message.receipt.clone()),
            Decision::Retry { delay_seconds } => {
                retries.entry(delay_seconds).or_default().push(message.receipt.clone())
            }
        }
    }
    let reason = error.as_deref().unwrap_or("retried by the handler");
    for (delay, receipts) in retries {
        settle(queue, &[], &receipts, delay, Some(reason), counts).await;
    }
    acks
}

async fn settle(queue: &Queue, acks: &[String], nacks: &[String], delay: u64, reason: Option<&str>, counts: &Counts) {
    for chunk in acks.chunks(BATCH_MAX) {
        match queue.ack(chunk).await {
            Ok(answer) => {
                counts.acked.fetch_add(u64::from(answer.acked), Ordering::Relaxed);
            }
            // The lease runs out and the message is delivered again: nothing is lost.
            Err(err) => tracing::warn!(error = %err, queue = queue.slug(), "ack failed; the leases will run out"),
        }
    }
    for chunk in nacks.chunks(BATCH_MAX) {
        match queue.nack(chunk, delay, reason).await {
            Ok(answer) => {
                counts.retried.fetch_add(u64::from(answer.nacked), Ordering::Relaxed);
            }
            Err(err) => tracing::warn!(error = %err, queue = queue.slug(), "nack failed; the leases will run out"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivered(id: &str, attempts: u32) -> Delivered {
        Delivered {
            id: id.into(),
            receipt: format!("r-{id}"),
            body_base64: "e30=".into(),
            content_type: "application/json".into(),
            attributes: Map::new(),
            attempts,
            group_id: None,
            published_at: "2026-11-03T12:00:00Z".into(),
        }
    }

    #[test]
    fn the_last_call_wins_and_unmentioned_messages_follow_the_answer() {
        let batch = Batch::new("q", vec![delivered("a", 1), delivered("b", 3), delivered("c", 1)]);
        batch.messages()[0].retry(60);
        batch.ack_all();
        batch.messages()[2].retry(5);
        let decisions = |failed| batch.outcome(failed).into_iter().map(|(_, d)| d).collect::<Vec<_>>();
        assert_eq!(decisions(false), [Decision::Ack, Decision::Ack, Decision::Retry { delay_seconds: 5 }]);

        let fresh = Batch::new("q", vec![delivered("a", 1), delivered("b", 3)]);
        fresh.messages()[0].ack();
        let decisions = fresh.outcome(true).into_iter().map(|(_, d)| d).collect::<Vec<_>>();
        assert_eq!(decisions, [Decision::Ack, Decision::Retry { delay_seconds: 8 }]);
        assert_eq!(fresh.messages()[1].body, Body::Json(serde_json::json!({})));
    }

    #[test]
    fn error_backoff_doubles_from_two_seconds_up_to_five_minutes() {
        let delays: Vec<u64> = [1, 2, 3, 8, 9, 40].into_iter().map(error_backoff_seconds).collect();
        assert_eq!(delays, [2, 4, 8, 256, 300, 300]);
    }
}
