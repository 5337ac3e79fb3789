//! Closed loops over any side's `Publisher` and `Consumer`, shaped like the AQS scenarios they
//! are compared with: each publisher sends its next message (or batch) as soon as the last one
//! is confirmed, and the steady consume + ack keeps the depth flat by letting producers publish
//! only while the depth is under its set point (as `scenarios::consume_ack` does). Only work that
//! started and finished inside the measured window counts.

use super::{Consumer, Publisher};
use crate::load::{Tally, Window, join};
use bytes::Bytes;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Every publisher repeats `publish(batch)` until the window ends.
pub async fn publish<P: Publisher>(publishers: Vec<P>, batch: Vec<Bytes>, window: Window) -> Tally {
    let batch = Arc::new(batch);
    let workers: Vec<_> = publishers
        .into_iter()
        .map(|mut publisher| {
            let batch = batch.clone();
            tokio::spawn(async move {
                let mut tally = Tally::default();
                loop {
                    let started = Instant::now();
                    if started >= window.end {
                        return tally;
                    }
                    match publisher.publish(&batch).await {
                        Ok(()) => {
                            let finished = Instant::now();
                            tally.msgs_total += batch.len() as u64;
                            if window.contains(started, finished) {
                                tally.ops += 1;
                                tally.msgs += batch.len() as u64;
                                tally.latencies.record(finished - started);
                            }
                        }
                        Err(err) => {
                            tally.error(format!("{err:#}"));
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    }
                }
            })
        })
        .collect();
    join(workers).await
}

/// Publishes `count` messages (rounded up to whole batches) over the publishers, as setup.
pub async fn fill<P: Publisher>(publishers: Vec<P>, batch: Vec<Bytes>, count: usize) -> anyhow::Result<()> {
    let rounds = count.div_ceil(batch.len() * publishers.len().max(1));
    let batch = Arc::new(batch);
    let tasks: Vec<_> = publishers
        .into_iter()
        .map(|mut publisher| {
            let batch = batch.clone();
            tokio::spawn(async move {
                for _ in 0..rounds {
                    publisher.publish(&batch).await?;
                }
                anyhow::Ok(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    Ok(())
}

/// Shared between producers and consumers of `consume_ack`.
pub struct Depth {
    pub published: AtomicU64,
    pub acked: AtomicU64,
    set_point: u64,
    drained: Notify,
}

impl Depth {
    /// A queue already holding `set_point` messages.
    pub fn new(set_point: u64) -> Arc<Self> {
        Arc::new(Self {
            published: AtomicU64::new(set_point),
            acked: AtomicU64::new(0),
            set_point,
            drained: Notify::new(),
        })
    }

    pub fn current(&self) -> u64 {
        self.published.load(Ordering::Relaxed).saturating_sub(self.acked.load(Ordering::Relaxed))
    }
}

/// Consumers receive and ack while producers refill; returns what the consumers acknowledged
/// and what the producers published inside the window.
pub async fn consume_ack<P: Publisher, C: Consumer>(
    producers: Vec<P>,
    consumers: Vec<C>,
    batch: Vec<Bytes>,
    depth: Arc<Depth>,
    window: Window,
) -> (Tally, Tally) {
    let batch = Arc::new(batch);
    let producers: Vec<_> =
        producers.into_iter().map(|p| tokio::spawn(produce(p, batch.clone(), depth.clone(), window))).collect();
    let consumers: Vec<_> = consumers.into_iter().map(|c| tokio::spawn(consume(c, depth.clone(), window))).collect();
    (join(consumers).await, join(producers).await)
}

async fn produce<P: Publisher>(mut publisher: P, batch: Arc<Vec<Bytes>>, depth: Arc<Depth>, window: Window) -> Tally {
    let mut tally = Tally::default();
    while Instant::now() < window.end {
        if depth.current() >= depth.set_point {
            // Woken by an ack; the timeout only bounds a missed wake-up.
            tokio::time::timeout(Duration::from_millis(5), depth.drained.notified()).await.ok();
            continue;
        }
        let started = Instant::now();
        match publisher.publish(&batch).await {
            Ok(()) => {
                depth.published.fetch_add(batch.len() as u64, Ordering::Relaxed);
                if window.contains(started, Instant::now()) {
                    tally.ops += 1;
                    tally.msgs += batch.len() as u64;
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

async fn consume<C: Consumer>(mut consumer: C, depth: Arc<Depth>, window: Window) -> Tally {
    let mut tally = Tally::default();
    while Instant::now() < window.end {
        let cycle = async {
            consumer.receive().await?;
            consumer.ack().await
        };
        match cycle.await {
            Ok(acked) => {
                depth.acked.fetch_add(acked, Ordering::Relaxed);
                depth.drained.notify_waiters();
                // A side may hold acks back (RabbitMQ's `multiple`): count them when they are sent.
                let now = Instant::now();
                if acked > 0 && window.contains(now, now) {
                    tally.ops += 1;
                    tally.msgs += acked;
                }
            }
            Err(err) => {
                tally.error(format!("{err:#}"));
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    tally
}
