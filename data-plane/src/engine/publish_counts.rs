//! Today's publish counters for single publishes, counted in this process and added to the
//! `stats` hash by `flush_publish_counts` a few times a second (`count_flusher`), rather than by a
//! HINCRBY inside every `publish_one.lua` call: that write, with its AOF record, was 15% of the
//! single publish's Redis time. The counts are the spec's estimates; what they give up is bounded:
//! another replica's publishes show in `/stats` up to one flush later, and a crash (not a graceful
//! shutdown, which flushes) forgets at most one flush interval of counts. Stored messages, bytes
//! and the storage limit are unaffected: those stay inside the script.

use super::Engine;
use aqs_core::error::ApiResult;
use aqs_core::ids::QueueId;
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::{RwLock, RwLockReadGuard};

/// Counts not yet in Redis, by queue and UTC day (`YYYYMMDD`).
#[derive(Default)]
pub struct PublishCounts {
    pending: Mutex<HashMap<(QueueId, u32), u64>>,
    /// Held for writing across a flush and for reading across a stats read (Redis value plus
    /// `pending`), so a count in transit is never missed or counted twice by this process.
    gate: RwLock<()>,
}

impl PublishCounts {
    pub fn add(&self, queue: QueueId, day: u32, n: u64) {
        *self.pending.lock().expect("publish counts lock").entry((queue, day)).or_default() += n;
    }

    /// What this process counted for `queue` on `day` and has not flushed yet.
    pub fn pending(&self, queue: QueueId, day: u32) -> u64 {
        self.pending.lock().expect("publish counts lock").get(&(queue, day)).copied().unwrap_or(0)
    }

    /// Holds off flushes while the caller reads Redis and then `pending`.
    pub async fn read_gate(&self) -> RwLockReadGuard<'_, ()> {
        self.gate.read().await
    }

    fn take(&self) -> HashMap<(QueueId, u32), u64> {
        std::mem::take(&mut *self.pending.lock().expect("publish counts lock"))
    }
}

impl Engine {
    /// Adds the counts this process holds to Redis, one `count.lua` call per queue; what could
    /// not be written is kept for the next flush.
    pub async fn flush_publish_counts(&self) -> ApiResult<()> {
        let _flushing = self.publish_counts.gate.write().await;
        let mut by_queue: HashMap<QueueId, Vec<(u32, u64)>> = HashMap::new();
        for ((queue, day), n) in self.publish_counts.take() {
            by_queue.entry(queue).or_default().push((day, n));
        }
        let mut failed = None;
        for (queue, days) in by_queue {
            if failed.is_some() {
                days.iter().for_each(|&(day, n)| self.publish_counts.add(queue, day, n));
                continue;
            }
            let q = self.keys.queue(queue);
            let mut inv = self.scripts.count.prepare_invoke();
            inv.key(q.meta()).key(q.stats());
            for (day, n) in &days {
                inv.arg(day).arg(n);
            }
            if let Err(err) = self.run(&inv).await {
                days.iter().for_each(|&(day, n)| self.publish_counts.add(queue, day, n));
                failed = Some(err);
            }
        }
        failed.map_or(Ok(()), Err)
    }
}
