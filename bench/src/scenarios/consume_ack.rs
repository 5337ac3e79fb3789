//! Scenario 3: steady consume(100) + ack(100) while producers keep the depth flat, against a
//! BullMQ worker of concurrency 100 on the same Redis. Producers publish batches only while the
//! depth (published − acknowledged, as this process counts it) is under its set point, so the
//! consumers always find a full batch and the queue neither drains nor grows. Each consume carries
//! the previous batch's receipts (`"ack"`), as the SDKs' consumer loops do: one request a batch.

use super::{Ctx, progress, redis_cost};
use crate::api::{Acked, BenchQueue, Consumed, ack_body, consume_body, sample_body};
use crate::client::{Call, Target};
use crate::load::{Tally, Window};
use crate::scenario_result::{ScenarioResult, Target as Goal};
use hyper::StatusCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

const SCENARIO: &str = "consume_ack_100";
const BATCH: usize = 100;

pub async fn run(ctx: &mut Ctx) -> Vec<ScenarioResult> {
    match measure(ctx).await {
        Ok(rows) => rows,
        Err(err) => vec![ScenarioResult::failed(SCENARIO, "msgs/s", &err)],
    }
}

/// Shared between producers and consumers.
struct Depth {
    published: AtomicU64,
    acked: AtomicU64,
    set_point: u64,
    drained: Notify,
}

impl Depth {
    fn current(&self) -> u64 {
        self.published.load(Ordering::Relaxed).saturating_sub(self.acked.load(Ordering::Relaxed))
    }
}

async fn measure(ctx: &mut Ctx) -> anyhow::Result<Vec<ScenarioResult>> {
    let s = ctx.scale.clone();
    let queue = ctx.queue("consume", s.consumers + s.producers).await?;
    let body = sample_body();
    progress(&format!("aqs: prefill {} messages", s.depth));
    prefill(&ctx.target, &queue, &body, s.depth).await?;

    progress(&format!(
        "aqs: consume {BATCH} + ack, {} consumers, {} producers, depth {}, {:?}",
        s.consumers, s.producers, s.depth, s.consume
    ));
    let depth = Arc::new(Depth {
        published: AtomicU64::new(s.depth as u64),
        acked: AtomicU64::new(0),
        set_point: s.depth as u64,
        drained: Notify::new(),
    });
    let meter = redis_cost::CostMeter::start(&ctx.redis_url).await?;
    let window = Window::after(s.warmup, s.consume);
    let producers: Vec<_> = (0..s.producers)
        .map(|i| {
            let call = queue.publish_batch(s.consumers + i, &body, BATCH)?;
            Ok(tokio::spawn(produce(ctx.target.clone(), call, depth.clone(), window)))
        })
        .collect::<anyhow::Result<_>>()?;
    let consumers: Vec<_> = (0..s.consumers)
        .map(|i| {
            Ok(tokio::spawn(consume(
                ctx.target.clone(),
                queue.consume(i, BATCH as u32, 1)?,
                queue.ack(i)?,
                depth.clone(),
                window,
            )))
        })
        .collect::<anyhow::Result<_>>()?;
    let mut tally = Tally::default();
    for c in consumers {
        tally.merge(c.await?);
    }
    let mut produced = Tally::default();
    for p in producers {
        produced.merge(p.await?);
    }
    let consumed_total = depth.acked.load(Ordering::Relaxed);
    let redis = meter.finish_scripts(consumed_total, "msg consumed").await?;
    tally.ensure_progress("consume + ack")?;
    let (p50, p99) = tally.latencies.p50_p99_ms();
    let rate = tally.msgs as f64 / window.seconds();
    ctx.aqs.consume_ack = Some(rate);
    Ok(vec![
        ScenarioResult::new(SCENARIO, rate, "msgs/s")
            .compared("bullmq worker concurrency 100", ctx.bullmq("worker_100"))
            .latency(p50, p99)
            .target(Goal::RatioAtLeast(3.0))
            .note(format!(
                "{} consumers (each consume of {BATCH} acknowledging the batch before), {} producers publishing {}/s, depth {} → {}; latency per consume; {redis}{}{}",
                s.consumers,
                s.producers,
                (produced.msgs as f64 / window.seconds()).round(),
                s.depth,
                depth.current(),
                tally.error_note(),
                produced.error_note()
            )),
    ])
}

/// Batches a prefill keeps in flight, each with a token of its own when the queue has that many
/// (a token's publishes are limited to 1,000 requests a second).
pub(super) const PREFILL_CLIENTS: usize = 4;

/// Publishes at least `count` messages of `body` to `queue` (whole batches of 100 from each
/// client); returns how many.
pub(super) async fn prefill(target: &Target, queue: &BenchQueue, body: &str, count: usize) -> anyhow::Result<usize> {
    // Setup, not measured: through the typed client.
    let batches = count.div_ceil(BATCH * PREFILL_CLIENTS);
    let tasks: Vec<_> = (0..PREFILL_CLIENTS)
        .map(|i| {
            let client = queue.client(target, i);
            let messages = vec![aqs_client::NewMessage::raw_json(body); BATCH];
            tokio::spawn(async move {
                for _ in 0..batches {
                    client.publish_batch(messages.clone()).await?;
                }
                anyhow::Ok(())
            })
        })
        .collect();
    for t in tasks {
        t.await??;
    }
    Ok(batches * BATCH * PREFILL_CLIENTS)
}

async fn produce(target: Target, call: Call, depth: Arc<Depth>, window: Window) -> Tally {
    let mut tally = Tally::default();
    let Some(mut conn) = crate::load::connect(&target, &mut tally).await else { return tally };
    while Instant::now() < window.end {
        if depth.current() >= depth.set_point {
            // Woken by an ack; the timeout only bounds a missed wake-up.
            tokio::time::timeout(Duration::from_millis(5), depth.drained.notified()).await.ok();
            continue;
        }
        let started = Instant::now();
        match conn.expect(&call, StatusCode::CREATED).await {
            Ok(_) => {
                depth.published.fetch_add(BATCH as u64, Ordering::Relaxed);
                if window.contains(started, Instant::now()) {
                    tally.ops += 1;
                    tally.msgs += BATCH as u64;
                }
            }
            Err(err) => {
                tally.error(format!("publish: {err:#}"));
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    tally
}

async fn consume(target: Target, consume: Call, ack: Call, depth: Arc<Depth>, window: Window) -> Tally {
    let mut tally = Tally::default();
    let Some(mut conn) = crate::load::connect(&target, &mut tally).await else { return tally };
    // The batch in hand, acknowledged by the next consume.
    let mut held: Vec<String> = Vec::new();
    while Instant::now() < window.end {
        let started = Instant::now();
        let call =
            if held.is_empty() { consume.clone() } else { consume.with_body(consume_body(BATCH as u32, 1, &held)) };
        let cycle = async {
            let answer = serde_json::from_slice::<Consumed>(&conn.expect(&call, StatusCode::OK).await?)?;
            let receipts: Vec<String> = answer.messages.into_iter().map(|m| m.receipt).collect();
            anyhow::Ok((answer.ack.map_or(0, |a| a.acked), receipts))
        };
        match cycle.await {
            Ok((acked, receipts)) => {
                held = receipts;
                depth.acked.fetch_add(acked, Ordering::Relaxed);
                depth.drained.notify_waiters();
                let finished = Instant::now();
                if acked > 0 && window.contains(started, finished) {
                    tally.ops += 1;
                    tally.msgs += acked;
                    tally.latencies.record(finished - started);
                }
            }
            Err(err) => {
                tally.error(format!("{err:#}"));
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    if !held.is_empty()
        && let Ok(answer) = conn.expect(&ack.with_body(ack_body(&held)), StatusCode::OK).await
        && let Ok(answer) = serde_json::from_slice::<Acked>(&answer)
    {
        depth.acked.fetch_add(answer.acked, Ordering::Relaxed);
    }
    tally
}
