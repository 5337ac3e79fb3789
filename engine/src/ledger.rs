//! What this process published by single publish and has not yet written to Redis, per queue:
//! today's publish counts, the stored bytes it drew from its storage lease, and the lease itself
//! (`scripts/budget.lua`). A single publish then costs Redis neither a counter write nor a bytes
//! write; `budget.rs` grants leases and flushes the ledger a few times a second.
//!
//! The counts are the spec's estimates: another replica's publishes show in `/stats` up to one
//! flush later, and a crash forgets at most one flush interval of them. The storage limit stays
//! exact: a publish draws only within the lease Redis counts for this replica, and the lease only
//! shrinks here before Redis hears of it.

use aqs_core::ids::QueueId;
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::{RwLock, RwLockReadGuard};

/// Flushes in a row without a publish after which a queue's lease is given back.
const IDLE_FLUSHES_BEFORE_RELEASE: u8 = 5;

/// Lease writers of different queues rarely wait for each other: one lock per stripe of queues.
const LEASING_STRIPES: usize = 64;

#[derive(Default)]
struct QueueLedger {
    /// Publish counts by UTC day (`YYYYMMDD`); negative when a publish counted and flushed was
    /// then refused.
    counts: Vec<(u32, i64)>,
    /// Bytes drawn from the lease since the last flush (negative as `counts`).
    drawn: i64,
    /// The lease: what this process may have drawn since the last flush, all told.
    lease: i64,
    /// The lease as Redis last recorded it.
    recorded: i64,
    idle_flushes: u8,
}

impl QueueLedger {
    fn draw(&mut self, day: u32, bytes: i64) -> bool {
        if bytes > 0 && self.lease - self.drawn < bytes {
            return false;
        }
        self.drawn += bytes;
        self.count(day, 1);
        true
    }

    fn count(&mut self, day: u32, n: i64) {
        match self.counts.iter_mut().find(|(d, _)| *d == day) {
            Some((_, count)) => *count += n,
            None => self.counts.push((day, n)),
        }
    }
}

/// What `flush.lua` recorded for this replica's lease on one queue.
#[derive(Clone, Copy, Debug)]
pub struct Recorded {
    pub lease: i64,
    /// Stored bytes and leases exceed the storage limit: it was lowered.
    pub over_limit: bool,
}

/// What one flush writes for one queue (`flush.lua`).
pub struct FlushItem {
    pub queue: QueueId,
    pub counts: Vec<(u32, i64)>,
    pub drawn: i64,
    /// The lease left after the drawn bytes became stored bytes (0 = give it back).
    pub lease: i64,
    /// Bytes worth leasing before the next flush (0 = no top-up: the queue is idle).
    pub want: i64,
}

pub struct Ledger {
    queues: Mutex<HashMap<QueueId, QueueLedger>>,
    /// Held for writing across a flush and for reading across a stats read (Redis value plus what
    /// is pending here), so nothing in transit is missed or counted twice by this process.
    gate: RwLock<()>,
    /// Serialise a queue's flush and lease grants, the two writers of its lease.
    leasing: [tokio::sync::Mutex<()>; LEASING_STRIPES],
}

impl Default for Ledger {
    fn default() -> Self {
        Self {
            queues: Mutex::default(),
            gate: RwLock::default(),
            leasing: std::array::from_fn(|_| tokio::sync::Mutex::default()),
        }
    }
}

impl Ledger {
    fn with<T>(&self, queue: QueueId, f: impl FnOnce(&mut QueueLedger) -> T) -> T {
        f(self.queues.lock().expect("ledger lock").entry(queue).or_default())
    }

    /// Draws `bytes` from the queue's lease and counts one publish, or returns false when the
    /// lease lacks room (the caller then asks Redis for more: `Engine::draw`).
    pub fn try_draw(&self, queue: QueueId, day: u32, bytes: u64) -> bool {
        self.with(queue, |q| q.draw(day, bytes as i64))
    }

    /// Redis granted `lease` for a publish of `bytes`: records it and draws them at once, before a
    /// concurrent publish can take the room.
    pub fn grant_and_draw(&self, queue: QueueId, lease: i64, day: u32, bytes: u64) -> bool {
        self.with(queue, |q| {
            (q.lease, q.recorded) = (lease, lease);
            q.draw(day, bytes as i64)
        })
    }

    /// Takes back a draw whose publish Redis refused.
    pub fn undo_draw(&self, queue: QueueId, day: u32, bytes: u64) {
        self.with(queue, |q| {
            q.drawn -= bytes as i64;
            q.count(day, -1);
        })
    }

    /// Gives back the undrawn part of the lease, before asking Redis for a new one; returns the
    /// lease kept.
    pub fn give_back_undrawn(&self, queue: QueueId) -> i64 {
        self.with(queue, |q| {
            q.lease = q.drawn.max(0);
            q.lease
        })
    }

    /// The undrawn part of the lease.
    pub fn undrawn(&self, queue: QueueId) -> i64 {
        self.queues.lock().expect("ledger lock").get(&queue).map_or(0, |q| q.lease - q.drawn)
    }

    /// Redis granted `lease`: it can only have grown since this process last shrank it.
    pub fn granted(&self, queue: QueueId, lease: i64) {
        self.with(queue, |q| {
            q.lease = lease;
            q.recorded = lease;
        })
    }

    /// Publish counts not yet in Redis.
    pub fn pending_count(&self, queue: QueueId, day: u32) -> i64 {
        let queues = self.queues.lock().expect("ledger lock");
        queues.get(&queue).and_then(|q| q.counts.iter().find(|(d, _)| *d == day)).map_or(0, |(_, n)| *n)
    }

    /// Stored bytes not yet in Redis.
    pub fn pending_bytes(&self, queue: QueueId) -> i64 {
        self.queues.lock().expect("ledger lock").get(&queue).map_or(0, |q| q.drawn)
    }

    /// Holds off flushes while the caller reads Redis and then what is pending here.
    pub async fn read_gate(&self) -> RwLockReadGuard<'_, ()> {
        self.gate.read().await
    }

    /// Held by whoever writes `queue`'s lease in Redis, across the write.
    pub async fn lock_leasing(&self, queue: QueueId) -> tokio::sync::MutexGuard<'_, ()> {
        self.leasing[queue.0.as_u128() as usize % LEASING_STRIPES].lock().await
    }

    /// Held across a flush (see `gate`).
    pub(super) async fn write_gate(&self) -> tokio::sync::RwLockWriteGuard<'_, ()> {
        self.gate.write().await
    }

    /// The queues with something to write.
    pub(super) fn queues(&self) -> Vec<QueueId> {
        self.queues.lock().expect("ledger lock").keys().copied().collect()
    }

    /// Moves what is pending for `queue` into a flush item: drawn bytes leave the lease, an idle
    /// lease is given back (`release` gives it back in any case: the process is stopping). A queue
    /// with nothing to write is forgotten. Call with `lock_leasing(queue)` and the gate held.
    pub(super) fn take(&self, queue: QueueId, release: bool) -> Option<FlushItem> {
        let mut queues = self.queues.lock().expect("ledger lock");
        let q = queues.get_mut(&queue)?;
        let drawn = std::mem::take(&mut q.drawn);
        let counts = std::mem::take(&mut q.counts);
        q.lease -= drawn;
        let active = drawn != 0 || !counts.is_empty();
        q.idle_flushes = if active { 0 } else { q.idle_flushes.saturating_add(1) };
        if release || q.idle_flushes >= IDLE_FLUSHES_BEFORE_RELEASE {
            q.lease = 0;
        }
        if !active && q.lease == 0 && q.recorded == 0 {
            queues.remove(&queue);
            return None;
        }
        let want = if active && !release { 2 * drawn.max(0) } else { 0 };
        Some(FlushItem { queue, counts, drawn, lease: q.lease, want })
    }

    /// Puts back an item Redis did not take.
    pub(super) fn restore(&self, item: FlushItem) {
        self.with(item.queue, |q| {
            q.drawn += item.drawn;
            q.lease += item.drawn;
            for (day, n) in item.counts {
                q.count(day, n);
            }
        })
    }

    /// Redis wrote an item and recorded what `recorded` says (`None`: the queue is gone).
    pub(super) fn flushed(&self, queue: QueueId, recorded: Option<Recorded>) {
        let mut queues = self.queues.lock().expect("ledger lock");
        match recorded {
            Some(Recorded { lease, over_limit }) => {
                if let Some(q) = queues.get_mut(&queue) {
                    q.recorded = lease;
                    // Over a lowered limit, stop drawing: the next flush gives the rest back and
                    // the next publish asks Redis, which judges it on what is stored.
                    q.lease = if over_limit { q.drawn.max(0) } else { lease };
                }
            }
            None => {
                queues.remove(&queue);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: u32 = 20261130;

    fn recorded(lease: i64) -> Recorded {
        Recorded { lease, over_limit: false }
    }

    /// A queue whose 100-byte lease has 30 bytes drawn by one publish.
    fn lease_100_draw_30() -> (Ledger, QueueId) {
        let ledger = Ledger::default();
        let queue = QueueId::new();
        ledger.granted(queue, 100);
        assert!(ledger.try_draw(queue, DAY, 30));
        (ledger, queue)
    }

    #[test]
    fn draws_only_within_the_lease() {
        let ledger = Ledger::default();
        let queue = QueueId::new();
        assert!(!ledger.try_draw(queue, DAY, 10), "no lease yet");
        ledger.granted(queue, 25);
        assert!(ledger.try_draw(queue, DAY, 10));
        assert!(ledger.try_draw(queue, DAY, 10));
        assert!(!ledger.try_draw(queue, DAY, 10), "5 bytes left");
        assert_eq!((ledger.pending_bytes(queue), ledger.pending_count(queue, DAY)), (20, 2));
        ledger.undo_draw(queue, DAY, 10);
        assert_eq!((ledger.pending_bytes(queue), ledger.pending_count(queue, DAY)), (10, 1));
        assert_eq!(ledger.give_back_undrawn(queue), 10);
        assert_eq!(ledger.undrawn(queue), 0);
        assert!(ledger.grant_and_draw(queue, 40, DAY, 20), "the new lease holds the publish it was asked for");
        assert_eq!((ledger.pending_bytes(queue), ledger.undrawn(queue)), (30, 10));
        assert!(!ledger.grant_and_draw(queue, 40, DAY, 20), "only 10 bytes left");
    }

    #[test]
    fn a_flush_turns_drawn_bytes_into_stored_ones_and_releases_idle_leases() {
        let (ledger, queue) = lease_100_draw_30();
        assert_eq!(ledger.queues(), vec![queue]);
        let item = ledger.take(queue, false).unwrap();
        assert_eq!((item.drawn, item.lease, item.want, item.counts), (30, 70, 60, vec![(DAY, 1)]));
        ledger.flushed(queue, Some(recorded(100)));
        assert_eq!((ledger.pending_bytes(queue), ledger.undrawn(queue)), (0, 100));
        // Idle flushes renew the lease without a top-up, then give it back.
        for _ in 1..IDLE_FLUSHES_BEFORE_RELEASE {
            let item = ledger.take(queue, false).unwrap();
            assert_eq!((item.lease, item.want), (100, 0));
            ledger.flushed(queue, Some(recorded(100)));
        }
        assert_eq!(ledger.take(queue, false).unwrap().lease, 0);
        ledger.flushed(queue, Some(recorded(0)));
        assert!(ledger.take(queue, false).is_none(), "nothing left to write");
        assert!(ledger.queues().is_empty());
    }

    #[test]
    fn a_failed_flush_is_put_back_whole() {
        let (ledger, queue) = lease_100_draw_30();
        let item = ledger.take(queue, false).unwrap();
        assert!(ledger.try_draw(queue, DAY, 20), "a publish during the flush");
        ledger.restore(item);
        assert_eq!((ledger.pending_bytes(queue), ledger.pending_count(queue, DAY), ledger.undrawn(queue)), (50, 2, 50));
    }

    #[test]
    fn a_refusal_after_its_flush_is_written_back_negative() {
        let (ledger, queue) = lease_100_draw_30();
        ledger.take(queue, false);
        ledger.flushed(queue, Some(recorded(70)));
        ledger.undo_draw(queue, DAY, 30);
        let item = ledger.take(queue, false).unwrap();
        assert_eq!((item.drawn, item.lease, item.counts), (-30, 100, vec![(DAY, -1)]));
    }

    #[test]
    fn over_a_lowered_limit_the_undrawn_lease_is_not_drawn_on() {
        let (ledger, queue) = lease_100_draw_30();
        ledger.take(queue, false);
        assert!(ledger.try_draw(queue, DAY, 10), "a publish during the flush");
        ledger.flushed(queue, Some(Recorded { lease: 70, over_limit: true }));
        assert!(!ledger.try_draw(queue, DAY, 1));
        let item = ledger.take(queue, false).unwrap();
        assert_eq!((item.drawn, item.lease), (10, 0), "the next flush gives the rest back");
    }

    #[test]
    fn stopping_gives_every_lease_back() {
        let (ledger, queue) = lease_100_draw_30();
        let item = ledger.take(queue, true).unwrap();
        assert_eq!((item.drawn, item.lease, item.want), (30, 0, 0));
    }
}
