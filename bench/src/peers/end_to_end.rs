//! End-to-end latency, publish → consumer, open loop, the same for every side: arrivals fall due
//! on a fixed schedule (see `schedule`), publishers take them in turn and publish a body naming
//! the arrival's scheduled time, and consumers time each message from that scheduled time to
//! its receipt (before the ack). A side that falls behind is charged for the wait of every
//! message it kept waiting (no coordinated omission).

use super::{Consumer, Publisher, drive};
use crate::api::{epoch, sent_at, timed_body_at};
use crate::latency::Latencies;
use crate::load::{Tally, Window};
use crate::scenarios::open_loop::Arrivals;
use crate::schedule::Schedule;
use bytes::Bytes;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long consumers may take to receive the last messages after the last publish.
const DRAIN: Duration = Duration::from_secs(3);

#[derive(Debug, Default)]
pub struct Outcome {
    /// Publishes confirmed.
    pub sent: u64,
    /// Messages received (and timed) by the consumers.
    pub received: u64,
    pub latencies: Latencies,
    /// From each message's scheduled time to its publish being confirmed: the publishing share of
    /// `latencies`.
    pub confirmed: Latencies,
    /// Publish and consume errors.
    pub errors: Tally,
}

impl Outcome {
    /// `"N sent, M received, publish confirmed p50 … / p99 … ms"` plus errors, for the note.
    pub fn note(&mut self) -> String {
        let confirmed =
            self.confirmed.p50_p99_text().map(|text| format!(", publish confirmed {text}")).unwrap_or_default();
        format!("{} sent, {} received{confirmed}{}", self.sent, self.received, self.errors.error_note())
    }
}

/// Offers `rate` messages per second for `duration` through `publishers` (each takes the next
/// due arrival when it is free) while `consumers` receive and ack.
pub async fn run<P: Publisher, C: Consumer>(
    publishers: Vec<P>,
    consumers: Vec<C>,
    rate: f64,
    duration: Duration,
) -> anyhow::Result<Outcome> {
    epoch();
    let received = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let consumers: Vec<_> =
        consumers.into_iter().map(|c| tokio::spawn(consume(c, received.clone(), stop.clone()))).collect();

    let schedule = Schedule::new(Instant::now() + Duration::from_millis(200), rate, duration);
    let (arrivals, dispatcher) = Arrivals::release(schedule);
    let publishers: Vec<_> = publishers
        .into_iter()
        .map(|mut publisher| {
            let arrivals = arrivals.clone();
            tokio::spawn(async move {
                let mut tally = Tally::default();
                let mut confirmed = Latencies::new();
                loop {
                    let Some(due) = arrivals.next().await else { return (tally, confirmed) };
                    match publisher.publish(&[Bytes::from(timed_body_at(due))]).await {
                        Ok(()) => {
                            confirmed.record(Instant::now().saturating_duration_since(due));
                            tally.msgs += 1;
                        }
                        Err(err) => tally.error(format!("publish: {err:#}")),
                    }
                }
            })
        })
        .collect();
    let mut outcome = Outcome::default();
    for p in publishers {
        let (tally, confirmed) = p.await?;
        outcome.confirmed.merge(confirmed);
        outcome.sent += tally.msgs;
        outcome.errors.merge(Tally { msgs: 0, ..tally });
    }
    dispatcher.finish()?;

    let deadline = Instant::now() + DRAIN;
    while received.load(Ordering::Relaxed) < outcome.sent && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for c in consumers {
        let (latencies, errors) = c.await?;
        outcome.latencies.merge(latencies);
        outcome.errors.merge(errors);
    }
    outcome.received = received.load(Ordering::Relaxed);
    Ok(outcome)
}

/// The most a side carries end to end: `publishers` publish one message per request back to
/// back while `consumers` receive and ack; the messages received per second inside `window`. A
/// backlog the publishers build up does not count, only what reached a consumer. The open-loop
/// run offers half of it.
pub async fn peak<P: Publisher, C: Consumer>(
    publishers: Vec<P>,
    consumers: Vec<C>,
    window: Window,
) -> anyhow::Result<f64> {
    epoch();
    let received = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let consumers: Vec<_> =
        consumers.into_iter().map(|c| tokio::spawn(consume(c, received.clone(), stop.clone()))).collect();
    let body = vec![Bytes::from(timed_body_at(Instant::now()))];
    let publishing = tokio::spawn(drive::publish(publishers, body, window));
    tokio::time::sleep_until(window.measure_from.into()).await;
    let from = received.load(Ordering::Relaxed);
    tokio::time::sleep_until(window.end.into()).await;
    let to = received.load(Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    publishing.await?.ensure_progress("end-to-end peak: publish")?;
    let mut errors = Tally::default();
    for c in consumers {
        errors.merge(c.await?.1);
    }
    anyhow::ensure!(to > from, "end-to-end peak: nothing was received{}", errors.error_note());
    Ok((to - from) as f64 / window.seconds())
}

async fn consume<C: Consumer>(mut consumer: C, received: Arc<AtomicU64>, stop: Arc<AtomicBool>) -> (Latencies, Tally) {
    let mut latencies = Latencies::new();
    let mut errors = Tally::default();
    while !stop.load(Ordering::Relaxed) {
        match consumer.receive().await {
            Ok(bodies) => {
                let now = Instant::now();
                for body in &bodies {
                    match sent_at(body) {
                        Some(due) => latencies.record(now.saturating_duration_since(due)),
                        None => errors.error("a delivered body carries no send time"),
                    }
                }
                received.fetch_add(bodies.len() as u64, Ordering::Relaxed);
                if let Err(err) = consumer.ack().await {
                    errors.error(format!("ack: {err:#}"));
                }
            }
            Err(err) => {
                errors.error(format!("receive: {err:#}"));
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    (latencies, errors)
}
