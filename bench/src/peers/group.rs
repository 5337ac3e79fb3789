//! One peer's scenario group: the same five scenarios, with the same concurrency and durations
//! as the AQS scenarios they are compared with, against a server
//! started for the group and stopped after it. Each scenario works on a fresh queue and deletes
//! it after, so one scenario's backlog does not weigh on the next.

use super::{Consumer, EndToEnd, Publisher, SideFigures, drive, end_to_end};
use crate::api::sample_body;
use crate::load::Window;
use crate::scale::Scale;
use crate::scenarios::progress;
use bytes::Bytes;
use std::future::Future;
use std::time::Duration;

/// Messages per batch, as in `publish_batch_100` and `consume_ack_100`.
pub const BATCH: usize = 100;
/// Publishers that fill a queue as setup (prefill, memory), as the AQS scenarios use.
const FILLERS: usize = 4;

/// A peer as the scenarios see it: fresh queues, publishers and consumers on them, and the
/// server's memory.
pub trait Side {
    type P: Publisher;
    type C: Consumer;
    /// Makes a fresh durable queue for scenario `name`; returns its name.
    fn queue(&mut self, name: &str) -> impl Future<Output = anyhow::Result<String>>;
    fn publishers(&mut self, queue: &str, count: usize) -> impl Future<Output = anyhow::Result<Vec<Self::P>>>;
    fn consumers(&mut self, queue: &str, count: usize) -> impl Future<Output = anyhow::Result<Vec<Self::C>>>;
    /// Closes the connections opened since the last call and deletes `queue`.
    fn finish(&mut self, queue: &str) -> impl Future<Output = ()>;
    /// The server process's resident memory, in bytes.
    fn memory_bytes(&self) -> anyhow::Result<u64>;
}

/// Runs every scenario on `side`; a failed scenario leaves its figure `None` and its error in
/// the returned list, and the others still run.
/// `aqs_rate` is the rate AQS's end-to-end run was offered, if it ran: the peer is run at it too.
pub async fn run<S: Side>(
    side: &mut S,
    name: &str,
    scale: &Scale,
    aqs_rate: Option<f64>,
) -> (SideFigures, Vec<(String, anyhow::Error)>) {
    let mut figures = SideFigures::default();
    let mut errors = Vec::new();
    let mut record = |scenario: &str, err: anyhow::Error| errors.push((scenario.to_owned(), err));

    // Memory first, on the fresh server: a garbage-collected server (JetStream is Go) returns
    // memory freed by earlier scenarios while this one fills, which would hide what it stores.
    match memory(side, name, scale.memory_messages).await {
        Ok(per_message) => figures.memory_per_message = Some(per_message),
        Err(err) => record("memory_per_message", err),
    }
    match publish(side, name, scale, "single", scale.single_connections, 1, scale.publish).await {
        Ok(rate) => figures.publish_single = Some(rate),
        Err(err) => record("publish_single", err),
    }
    match publish(side, name, scale, "batch", scale.batch_connections, BATCH, scale.batch).await {
        Ok(rate) => figures.publish_batch = Some(rate),
        Err(err) => record("publish_batch_100", err),
    }
    match consume_ack(side, name, scale).await {
        Ok(rate) => figures.consume_ack = Some(rate),
        Err(err) => record("consume_ack_100", err),
    }
    match end_to_end_peak(side, name, scale).await {
        Ok(peak) => match latency(side, name, scale, peak / 2.0).await {
            Ok(e2e) => figures.end_to_end = Some(e2e),
            Err(err) => record("end_to_end", err),
        },
        Err(err) => record("end_to_end", err),
    }
    if let Some(rate) = aqs_rate {
        match latency(side, name, scale, rate).await {
            Ok(e2e) => figures.end_to_end_at_aqs_rate = Some(e2e),
            Err(err) => record("end_to_end_at_aqs_rate", err),
        }
    }
    (figures, errors)
}

/// The side's end-to-end peak (`end_to_end::peak`), with the end-to-end run's publishers and
/// consumers, on a fresh queue.
async fn end_to_end_peak<S: Side>(side: &mut S, name: &str, scale: &Scale) -> anyhow::Result<f64> {
    let queue = side.queue("e2e-peak").await?;
    progress(&format!("{name}: end-to-end peak, publishing back to back while consuming, {:?}", scale.open_loop));
    let result = async {
        let publishers = side.publishers(&queue, scale.single_connections).await?;
        let consumers = side.consumers(&queue, scale.consumers).await?;
        end_to_end::peak(publishers, consumers, Window::after(scale.warmup, scale.open_loop)).await
    }
    .await;
    side.finish(&queue).await;
    result
}

fn bodies(count: usize) -> Vec<Bytes> {
    vec![Bytes::from(sample_body()); count]
}

/// Closed-loop publish of `per_call` messages per confirm by `publishers` publishers; msgs/s.
async fn publish<S: Side>(
    side: &mut S,
    name: &str,
    scale: &Scale,
    scenario: &str,
    publishers: usize,
    per_call: usize,
    duration: Duration,
) -> anyhow::Result<f64> {
    let queue = side.queue(scenario).await?;
    progress(&format!("{name}: publish {per_call} per confirm, {publishers} publishers, {duration:?}"));
    let result = async {
        let publishers = side.publishers(&queue, publishers).await?;
        let window = Window::after(scale.warmup, duration);
        let tally = drive::publish(publishers, bodies(per_call), window).await;
        tally.ensure_progress(&format!("{name} publish"))?;
        anyhow::Ok(tally.msgs as f64 / window.seconds())
    }
    .await;
    side.finish(&queue).await;
    result
}

/// Steady consume + ack with the depth flat; msgs/s acknowledged.
async fn consume_ack<S: Side>(side: &mut S, name: &str, scale: &Scale) -> anyhow::Result<f64> {
    let queue = side.queue("consume").await?;
    let result = async {
        progress(&format!("{name}: prefill {} messages", scale.depth));
        drive::fill(side.publishers(&queue, FILLERS).await?, bodies(BATCH), scale.depth).await?;
        progress(&format!(
            "{name}: consume + ack, {} consumers, {} producers, depth {}, {:?}",
            scale.consumers, scale.producers, scale.depth, scale.consume
        ));
        let producers = side.publishers(&queue, scale.producers).await?;
        let consumers = side.consumers(&queue, scale.consumers).await?;
        let depth = drive::Depth::new(scale.depth.div_ceil(BATCH * FILLERS) as u64 * (BATCH * FILLERS) as u64);
        let window = Window::after(scale.warmup, scale.consume);
        let (consumed, produced) = drive::consume_ack(producers, consumers, bodies(BATCH), depth, window).await;
        consumed.ensure_progress(&format!("{name} consume + ack"))?;
        anyhow::ensure!(produced.errors == 0, "{name} producers: {}", produced.error_note());
        anyhow::Ok(consumed.msgs as f64 / window.seconds())
    }
    .await;
    side.finish(&queue).await;
    result
}

/// Open-loop end-to-end latency at `rate`.
async fn latency<S: Side>(side: &mut S, name: &str, scale: &Scale, rate: f64) -> anyhow::Result<EndToEnd> {
    let queue = side.queue("e2e").await?;
    progress(&format!("{name}: end to end at {rate:.0}/s, {:?}", scale.open_loop));
    let result = async {
        let publishers = side.publishers(&queue, scale.single_connections).await?;
        let consumers = side.consumers(&queue, scale.consumers).await?;
        let mut outcome = end_to_end::run(publishers, consumers, rate, scale.open_loop).await?;
        figures_of(&mut outcome, rate)
            .ok_or_else(|| anyhow::anyhow!("{name}: no message went end to end ({})", outcome.note()))
    }
    .await;
    side.finish(&queue).await;
    result
}

/// p50 and p99 of an end-to-end run; `None` when nothing arrived.
pub fn figures_of(outcome: &mut end_to_end::Outcome, rate: f64) -> Option<EndToEnd> {
    let (p50, p99) = outcome.latencies.p50_p99_ms();
    let confirmed_p50_ms = outcome.confirmed.p50_p99_ms().0;
    Some(EndToEnd {
        rate,
        p50_ms: p50?,
        p99_ms: p99?,
        confirmed_p50_ms,
        sent: outcome.sent,
        received: outcome.received,
    })
}

/// Server memory per stored message, payload included: its resident memory before and after
/// storing `count` messages on a fresh queue.
async fn memory<S: Side>(side: &mut S, name: &str, count: usize) -> anyhow::Result<f64> {
    let count = count.div_ceil(BATCH * FILLERS) * BATCH * FILLERS;
    let queue = side.queue("memory").await?;
    progress(&format!("{name}: memory of {count} stored messages"));
    let result = async {
        let publishers = side.publishers(&queue, FILLERS).await?;
        // Let the previous scenario's garbage settle first, as the AQS memory scenario does.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let before = side.memory_bytes()?;
        drive::fill(publishers, bodies(BATCH), count).await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = side.memory_bytes()?;
        anyhow::Ok((after as f64 - before as f64) / count as f64)
    }
    .await;
    side.finish(&queue).await;
    result
}
