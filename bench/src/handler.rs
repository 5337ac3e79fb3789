//! The lean push handler the push scenarios deliver to: an axum route answering at once, so the
//! handler is never what limits a run. Every path is a *lane* with its own counters, so one
//! scenario's stragglers never count in the next: `/<lane>` answers 200, and a lane whose name
//! starts with `flaky` answers 500 to every tenth request, which the queue retries.
//!
//! It understands the three bodies it is sent: message mode (`{"id", "payload", "attempts"}`, 0 on
//! a first delivery), batch mode (`{"messages": [{"body", "attempts"}]}`, 1 on a first delivery)
//! and BullMQ's worker, which posts the message-mode body. A payload carrying `"t"` (a timed body,
//! `api::timed_body_at`) records its publish → handler latency. `aqs-bench handler` serves it as
//! its own process (for BullMQ's run); `spawn` runs it on a thread of the bench process (for the
//! AQS scenarios, whose timed bodies count from this process's epoch).

use crate::api::sent_at;
use crate::latency::Latencies;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::post;
use serde::Deserialize;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::net::TcpListener;

/// Every tenth request of a `flaky` lane answers 500.
pub const FLAKY_EVERY: u64 = 10;

/// What one lane saw.
#[derive(Debug, Default, Clone)]
pub struct LaneCounts {
    pub requests: u64,
    /// Messages in the requests: first deliveries and redeliveries.
    pub first: u64,
    pub retries: u64,
    /// Requests answered 500 (flaky lanes only).
    pub failed: u64,
}

impl LaneCounts {
    pub fn messages(&self) -> u64 {
        self.first + self.retries
    }
}

#[derive(Default)]
struct Lane {
    counts: LaneCounts,
    latencies: Latencies,
}

/// The handler's counters, shared with the scenarios.
#[derive(Default, Clone)]
pub struct Counters {
    lanes: Arc<Mutex<HashMap<String, Lane>>>,
}

impl Counters {
    /// What `lane` saw so far.
    pub fn counts(&self, lane: &str) -> LaneCounts {
        self.lanes.lock().expect("lanes lock").get(lane).map(|l| l.counts.clone()).unwrap_or_default()
    }

    /// The latencies `lane` recorded, taken out (the next call starts empty).
    pub fn take_latencies(&self, lane: &str) -> Latencies {
        let mut lanes = self.lanes.lock().expect("lanes lock");
        lanes.get_mut(lane).map(|l| std::mem::take(&mut l.latencies)).unwrap_or_default()
    }

    /// Counts one request; returns whether to answer it 500.
    fn record(&self, lane: &str, first: u64, retries: u64, sent: &[Instant]) -> bool {
        let now = Instant::now();
        let mut lanes = self.lanes.lock().expect("lanes lock");
        let entry = match lanes.get_mut(lane) {
            Some(entry) => entry,
            None => lanes.entry(lane.to_owned()).or_default(),
        };
        entry.counts.requests += 1;
        let fail = lane.starts_with("flaky") && entry.counts.requests.is_multiple_of(FLAKY_EVERY);
        if fail {
            entry.counts.failed += 1;
        } else {
            entry.counts.first += first;
            entry.counts.retries += retries;
        }
        for at in sent {
            entry.latencies.record(now.saturating_duration_since(*at));
        }
        fail
    }
}

/// The fields of the bodies the handler reads.
#[derive(Deserialize)]
struct Body {
    payload: Option<String>,
    attempts: Option<u32>,
    messages: Option<Vec<BatchEntry>>,
}

#[derive(Deserialize)]
struct BatchEntry {
    body: Option<String>,
    attempts: u32,
}

async fn deliver(State(counters): State<Counters>, Path(lane): Path<String>, body: Bytes) -> StatusCode {
    let Ok(body) = serde_json::from_slice::<Body>(&body) else {
        return StatusCode::BAD_REQUEST;
    };
    let (mut first, mut retries, mut sent) = (0, 0, Vec::new());
    match body.messages {
        Some(entries) => {
            for entry in entries {
                if entry.attempts <= 1 {
                    first += 1;
                } else {
                    retries += 1;
                }
                sent.extend(entry.body.as_deref().and_then(|b| sent_at(b.as_bytes())));
            }
        }
        None => {
            if body.attempts.unwrap_or(0) == 0 {
                first = 1;
            } else {
                retries = 1;
            }
            sent.extend(body.payload.as_deref().and_then(|p| sent_at(p.as_bytes())));
        }
    }
    if counters.record(&lane, first, retries, &sent) { StatusCode::INTERNAL_SERVER_ERROR } else { StatusCode::OK }
}

/// Serves the handler on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    counters: Counters,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let app = Router::new().route("/{lane}", post(deliver)).with_state(counters);
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await?;
    Ok(())
}

/// A handler running on its own thread and runtime (two workers, like a small server), so the
/// load generator's tasks never queue in front of it. Stops when dropped.
pub struct LocalHandler {
    /// `http://localhost:PORT`: a domain name, as push targets require.
    pub base_url: String,
    pub counters: Counters,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl LocalHandler {
    pub fn spawn() -> anyhow::Result<Self> {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        std_listener.set_nonblocking(true)?;
        let port = std_listener.local_addr()?.port();
        let counters = Counters::default();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
        let served = counters.clone();
        // Not joined: graceful shutdown waits for open connections, and the queue's pooled ones
        // may stay idle; the thread ends with them.
        std::thread::Builder::new().name("push-handler".into()).spawn(move || {
            runtime.block_on(async move {
                let listener = match TcpListener::from_std(std_listener) {
                    Ok(listener) => listener,
                    Err(err) => return eprintln!("push handler: {err}"),
                };
                if let Err(err) = serve(listener, served, async { stopped.await.unwrap_or(()) }).await {
                    eprintln!("push handler: {err:#}");
                }
            });
        })?;
        Ok(Self { base_url: format!("http://localhost:{port}"), counters, stop: Some(stop) })
    }
}

impl Drop for LocalHandler {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            stop.send(()).ok();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::timed_body_at;
    use serde_json::json;

    #[test]
    fn flaky_lanes_fail_every_tenth_request_and_lanes_are_apart() {
        let c = Counters::default();
        let failed = (0..20).filter(|_| c.record("flaky-a", 1, 0, &[])).count();
        assert_eq!(failed, 2);
        assert!(!c.record("ok", 0, 1, &[]));
        let flaky = c.counts("flaky-a");
        assert_eq!((flaky.requests, flaky.first, flaky.failed), (20, 18, 2));
        assert_eq!(c.counts("ok").retries, 1);
    }

    #[tokio::test]
    async fn counts_message_and_batch_bodies_and_times_timed_payloads() {
        let c = Counters::default();
        let payload = timed_body_at(Instant::now());
        let one = json!({ "id": "m", "queue": "q", "payload": payload, "attempts": 0 }).to_string();
        assert_eq!(deliver(State(c.clone()), Path("l".into()), one.into()).await, StatusCode::OK);
        let batch =
            json!({ "queue": "q", "messages": [{ "body": "x", "attempts": 1 }, { "body": "y", "attempts": 3 }] });
        assert_eq!(deliver(State(c.clone()), Path("l".into()), batch.to_string().into()).await, StatusCode::OK);
        let counts = c.counts("l");
        assert_eq!((counts.requests, counts.first, counts.retries), (2, 2, 1));
        assert_eq!(c.take_latencies("l").len(), 1);
        assert!(c.take_latencies("l").is_empty());
    }
}
