//! Scenario 6: many concurrent idle long polls (10,000 in the full run), each on its own
//! connection, spread over a few queues. Checks they are all held at once, then publishes timed
//! messages one by one and measures how fast a parked poll answers, and reads the aqs process's
//! resident memory while they are held.

use super::{Ctx, progress, redis_cost};
use crate::api::{Consumed, ack_body, timed_body};
use crate::client::{Call, Target};
use crate::latency::Latencies;
use crate::proc_status::rss_bytes;
use crate::scenario_result::{ScenarioResult, Target as Goal};
use anyhow::Context;
use hyper::StatusCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// Connections opened at once: more would overflow the server's accept backlog.
const CONNECTING: usize = 128;
/// Polls per token, far under the spec's 1,000 requests per second per token.
const POLLS_PER_TOKEN: usize = 250;
/// Between two wake-up publishes, so each wake-up is measured on an otherwise idle server.
const WAKE_INTERVAL: Duration = Duration::from_millis(10);
const MIB: f64 = 1024.0 * 1024.0;

#[derive(Default)]
struct Shared {
    connected: AtomicUsize,
    in_flight: AtomicUsize,
    received: AtomicUsize,
    errors: AtomicUsize,
    first_error: Mutex<Option<String>>,
    latencies: Mutex<Latencies>,
    stop: AtomicBool,
}

impl Shared {
    fn error(&self, err: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        self.first_error.lock().expect("not poisoned").get_or_insert(err);
    }

    fn error_note(&self) -> String {
        match &*self.first_error.lock().expect("not poisoned") {
            Some(first) => format!(", {} errors (first: {first})", self.errors.load(Ordering::Relaxed)),
            None => String::new(),
        }
    }
}

pub async fn run(ctx: &mut Ctx) -> Vec<ScenarioResult> {
    match measure(ctx).await {
        Ok(rows) => rows,
        Err(err) => vec![ScenarioResult::failed("idle_long_polls_held", "polls", &err)],
    }
}

async fn measure(ctx: &mut Ctx) -> anyhow::Result<Vec<ScenarioResult>> {
    let s = ctx.scale.clone();
    let polls = s.idle_polls;
    check_fd_limit(polls)?;
    let tokens = polls.div_ceil(s.idle_queues * POLLS_PER_TOKEN);
    let mut queues = Vec::with_capacity(s.idle_queues);
    for _ in 0..s.idle_queues {
        queues.push(ctx.queue("idle", tokens).await?);
    }
    progress(&format!("aqs: {polls} idle long polls over {} queues", s.idle_queues));
    let rss_before = ctx.aqs_pid.map(rss_bytes).transpose()?;
    let shared = Arc::new(Shared::default());
    let connecting = Arc::new(Semaphore::new(CONNECTING));
    let mut pollers = Vec::with_capacity(polls);
    for i in 0..polls {
        let queue = &queues[i % queues.len()];
        let slot = i / queues.len();
        pollers.push(tokio::spawn(poll(
            ctx.target.clone(),
            queue.consume(slot, 1, 20)?,
            queue.ack(slot)?,
            shared.clone(),
            connecting.clone(),
        )));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while shared.connected.load(Ordering::Relaxed) + shared.errors.load(Ordering::Relaxed) < polls {
        anyhow::ensure!(
            Instant::now() < deadline,
            "only {} of {polls} polls connected",
            shared.connected.load(Ordering::Relaxed)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Let the last requests reach the server and park.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let held = shared.in_flight.load(Ordering::Relaxed);
    let rss_held = ctx.aqs_pid.map(rss_bytes).transpose()?;

    progress(&format!("aqs: {} wake-ups among {held} held polls", s.idle_wakeups));
    let mut publisher = ctx.target.connect().await?;
    let meter = redis_cost::CostMeter::start(&ctx.redis_url).await?;
    for k in 0..s.idle_wakeups {
        let queue = &queues[k % queues.len()];
        publisher.expect(&queue.publish(0, &timed_body().0)?, StatusCode::CREATED).await?;
        tokio::time::sleep(WAKE_INTERVAL).await;
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while shared.received.load(Ordering::Relaxed) < s.idle_wakeups && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let received = shared.received.load(Ordering::Relaxed);
    let redis = meter.finish_scripts(s.idle_wakeups as u64, "wake-up").await?;
    shared.stop.store(true, Ordering::Relaxed);
    for p in &pollers {
        p.abort();
    }
    let mut latencies = std::mem::take(&mut *shared.latencies.lock().expect("not poisoned"));
    let (p50, p99) = latencies.p50_p99_ms();
    let errors = shared.error_note();
    let mut rows = vec![
        ScenarioResult::new("idle_long_polls_held", held as f64, "polls")
            .target(Goal::AtLeast(polls as f64))
            .note(format!("{polls} polls (max_wait 20 s) over {} queues, one connection each{errors}", s.idle_queues)),
        ScenarioResult::new("idle_long_polls_wakeup", p50.unwrap_or_default(), "ms (p50)")
            .latency(p50, p99)
            .target(Goal::Latency { p50_ms: None, p99_ms: 50.0 })
            .note(format!(
                "{received} of {} published one by one every {WAKE_INTERVAL:?} received; {redis}",
                s.idle_wakeups
            )),
    ];
    rows.push(match (rss_held, rss_before) {
        (Some(held_rss), Some(before)) => ScenarioResult::new("idle_long_polls_rss", held_rss as f64 / MIB, "MiB")
            .target(Goal::AtMost(160.0))
            .note(format!("VmRSS of aqs while held; {:.1} MiB before the polls", before as f64 / MIB)),
        _ => ScenarioResult::failed("idle_long_polls_rss", "MiB", &anyhow::anyhow!("no aqs pid given")),
    });
    Ok(rows)
}

/// One idle consumer: long-polls, acknowledges whatever it gets (timing it), polls again.
async fn poll(target: Target, consume: Call, ack: Call, shared: Arc<Shared>, connecting: Arc<Semaphore>) {
    let permit = connecting.acquire().await;
    let mut conn = match target.connect().await {
        Ok(conn) => conn,
        Err(err) => return shared.error(format!("{err:#}")),
    };
    drop(permit);
    shared.connected.fetch_add(1, Ordering::Relaxed);
    while !shared.stop.load(Ordering::Relaxed) {
        shared.in_flight.fetch_add(1, Ordering::Relaxed);
        let answer = conn.send(&consume).await;
        let received = Instant::now();
        shared.in_flight.fetch_sub(1, Ordering::Relaxed);
        let messages = match answer {
            Ok((StatusCode::OK, body)) => match serde_json::from_slice::<Consumed>(&body) {
                Ok(consumed) => consumed.messages,
                Err(err) => {
                    shared.error(format!("consume answer: {err}"));
                    continue;
                }
            },
            Ok((status, body)) => {
                shared.error(format!("{status}: {}", String::from_utf8_lossy(&body)));
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            Err(err) => {
                shared.error(format!("{err:#}"));
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let mut receipts = Vec::with_capacity(messages.len());
        for m in messages {
            if let Some(sent) = m.sent_at() {
                shared.latencies.lock().expect("not poisoned").record(received - sent);
                shared.received.fetch_add(1, Ordering::Relaxed);
            }
            receipts.push(m.receipt);
        }
        if !receipts.is_empty()
            && let Err(err) = conn.expect(&ack.with_body(ack_body(&receipts)), StatusCode::OK).await
        {
            shared.error(format!("ack: {err:#}"));
        }
    }
}

/// Each poll holds a socket in this process and one in aqs: say so plainly instead of failing
/// with "too many open files" halfway.
fn check_fd_limit(polls: usize) -> anyhow::Result<()> {
    let limits = std::fs::read_to_string("/proc/self/limits").context("cannot read /proc/self/limits")?;
    let soft: Option<usize> = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|v| v.parse().ok());
    if let Some(soft) = soft {
        anyhow::ensure!(soft > polls + 256, "{polls} long polls need more open files than `ulimit -n` {soft} allows");
    }
    Ok(())
}
