//! The loads of the push scenarios (`push`): a queue kept full while the service pushes it to
//! the bench's handler (filled before push starts, and refilled by producers or drained),
//! single publishes back to back (the latency path's peak), and single
//! publishes on an open-loop schedule whose trip to the handler is timed. Each reads its figures
//! from the handler's counters for its own lane.

use super::consume_ack::prefill;
use super::progress;
use super::redis_cost::CostMeter;
use crate::api::{BenchQueue, sample_body, timed_body_at};
use crate::client::Target;
use crate::handler::{Counters, LaneCounts};
use crate::latency::Latencies;
use crate::load::{Tally, Window, closed_loop};
use crate::scenarios::open_loop::Arrivals;
use crate::schedule::Schedule;
use hyper::StatusCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Messages per publish request of the producers that keep a queue full.
const BATCH: usize = 100;
/// How long a pushed queue may take to send its first message (the dispatcher starts within about
/// a second of push being turned on).
const FIRST_DELIVERY_WITHIN: Duration = Duration::from_secs(10);

/// What the handler saw of a lane inside a measured window.
pub struct Measured {
    pub seconds: f64,
    pub seen: LaneCounts,
    /// Messages queued before push started.
    pub queued: usize,
    /// Messages published but not yet delivered once, at the end of the window.
    pub depth_end: u64,
    pub produced: Tally,
    /// Redis's work in the window per message pushed (the producers' publishes included).
    pub redis: String,
}

impl Measured {
    pub fn rate(&self) -> f64 {
        self.seen.messages() as f64 / self.seconds
    }

    pub fn per_second(&self, count: u64) -> f64 {
        count as f64 / self.seconds
    }
}

/// How full to keep a queue, with how many producers (none: the queue is only drained), for how
/// long.
#[derive(Debug, Clone, Copy)]
pub struct KeptFull {
    pub depth: usize,
    pub producers: usize,
    pub warmup: Duration,
    pub duration: Duration,
}

/// Waits until `lane` has seen at least `count` first deliveries.
pub async fn wait_for_first(counters: &Counters, lane: &str, count: u64) -> anyhow::Result<()> {
    let start = Instant::now();
    while counters.counts(lane).first < count {
        if start.elapsed() > FIRST_DELIVERY_WITHIN {
            anyhow::bail!("the handler saw no delivery on {lane} within {FIRST_DELIVERY_WITHIN:?}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// Prefills `queue` with `depth` messages, lets `start_push` turn push on, then keeps the queue at
/// that depth (producers publish batches of 100 while fewer than `depth` messages wait for their
/// first delivery; with none, it drains) through a warm-up and a measured window of `duration`.
pub async fn kept_full(
    target: &Target,
    queue: &BenchQueue,
    (counters, lane): (&Counters, &str),
    load: KeptFull,
    redis_url: &str,
    start_push: impl Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<Measured> {
    let KeptFull { depth, producers, warmup, duration } = load;
    let body = sample_body();
    let filling = Instant::now();
    let queued = prefill(target, queue, &body, depth).await?;
    progress(&format!("aqs: {queued} messages queued in {:.1} s", filling.elapsed().as_secs_f64()));
    let published = Arc::new(AtomicU64::new(queued as u64));
    start_push.await?;
    wait_for_first(counters, lane, 1).await?;
    let window = Window::after(warmup, duration);
    progress(&format!("aqs: push to lane {lane}, depth {depth}, {duration:?}"));
    let tasks: Vec<_> = (0..producers)
        .map(|i| {
            let call = queue.publish_batch(i, &body, BATCH)?;
            let (target, counters, published, lane) =
                (target.clone(), counters.clone(), published.clone(), lane.to_owned());
            Ok(tokio::spawn(async move {
                let mut tally = Tally::default();
                let Some(mut conn) = crate::load::connect(&target, &mut tally).await else { return tally };
                while Instant::now() < window.end {
                    let waiting = published.load(Ordering::Relaxed).saturating_sub(counters.counts(&lane).first);
                    if waiting >= depth as u64 {
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        continue;
                    }
                    match conn.expect(&call, StatusCode::CREATED).await {
                        Ok(_) => {
                            published.fetch_add(BATCH as u64, Ordering::Relaxed);
                            tally.ops += 1;
                            tally.msgs += BATCH as u64;
                        }
                        Err(err) => {
                            tally.error(format!("publish: {err:#}"));
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    }
                }
                tally
            }))
        })
        .collect::<anyhow::Result<_>>()?;
    tokio::time::sleep_until(window.measure_from.into()).await;
    let meter = CostMeter::start(redis_url).await?;
    let before = counters.counts(lane);
    tokio::time::sleep_until(window.end.into()).await;
    let after = counters.counts(lane);
    let redis = meter.finish_scripts(after.messages() - before.messages(), "msg pushed").await?;
    let produced = crate::load::join(tasks).await;
    let seen = LaneCounts {
        requests: after.requests - before.requests,
        first: after.first - before.first,
        retries: after.retries - before.retries,
        failed: after.failed - before.failed,
    };
    let depth_end = published.load(Ordering::Relaxed).saturating_sub(after.first);
    Ok(Measured { seconds: window.seconds(), seen, queued, depth_end, produced, redis })
}

/// Single publishes back to back over `connections` connections to a pushed queue: the rate at
/// which the handler receives them in `window`, the peak of the path the latency row times.
pub async fn single_peak(
    target: &Target,
    queue: &BenchQueue,
    (counters, lane): (&Counters, &str),
    connections: usize,
    window: Window,
) -> anyhow::Result<(f64, Tally)> {
    let body = sample_body();
    let calls = (0..connections).map(|i| queue.publish(i, &body)).collect::<anyhow::Result<Vec<_>>>()?;
    let seen = async {
        tokio::time::sleep_until(window.measure_from.into()).await;
        let before = counters.counts(lane).messages();
        tokio::time::sleep_until(window.end.into()).await;
        counters.counts(lane).messages() - before
    };
    let (tally, seen) = tokio::join!(closed_loop(target, calls, window, StatusCode::CREATED, 1), seen);
    Ok((seen as f64 / window.seconds(), tally))
}

/// Publishes timed single messages to a pushed queue at `rate` for `duration` over `connections`
/// connections, then waits (up to 5 s) for the handler to have seen them all; returns the
/// handler's publish → handler latencies and the publishers' tally, whose latencies run from each
/// scheduled publish to its answer (the publish half of the trip).
pub async fn open_loop(
    target: &Target,
    queue: &BenchQueue,
    counters: &Counters,
    lane: &str,
    connections: usize,
    rate: f64,
    duration: Duration,
) -> anyhow::Result<(Latencies, Tally)> {
    let seen_before = counters.counts(lane).first;
    counters.take_latencies(lane);
    let mut conns = Vec::with_capacity(connections);
    for _ in 0..connections {
        conns.push(target.connect().await?);
    }
    let schedule = Schedule::new(Instant::now() + Duration::from_millis(100), rate, duration);
    let (arrivals, dispatcher) = Arrivals::release(schedule);
    let workers: Vec<_> = conns
        .into_iter()
        .enumerate()
        .map(|(i, mut conn)| {
            let (arrivals, queue) = (arrivals.clone(), queue.clone());
            tokio::spawn(async move {
                let mut tally = Tally::default();
                loop {
                    let Some(due) = arrivals.next().await else { return tally };
                    let call = match queue.publish(i, &timed_body_at(due)) {
                        Ok(call) => call,
                        Err(err) => {
                            tally.error(format!("{err:#}"));
                            continue;
                        }
                    };
                    match conn.expect(&call, StatusCode::CREATED).await {
                        Ok(_) => {
                            tally.latencies.record(due.elapsed());
                            tally.ops += 1;
                            tally.msgs += 1;
                        }
                        Err(err) => tally.error(format!("{err:#}")),
                    }
                }
            })
        })
        .collect();
    let tally = crate::load::join(workers).await;
    dispatcher.finish()?;
    let settle_by = Instant::now() + Duration::from_secs(5);
    while counters.counts(lane).first < seen_before + tally.msgs && Instant::now() < settle_by {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok((counters.take_latencies(lane), tally))
}
