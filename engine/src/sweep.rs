//! One sweep of one queue's timers (`sweep.lua`): due delays promoted, expired leases that used
//! their last attempt dead-lettered, old daily counters pruned, expired storage leases settled,
//! and once a minute the oldest message's age sampled for the Overview's graphs.

use super::Engine;
use super::reply::{Reply, Status, unexpected};
use super::stats::DAILY_HISTORY_DAYS;
use crate::error::StorageResult;
use aqs_core::ids::QueueId;
use aqs_core::time::utc_day;

/// Items of each kind one sweep call handles: bounds how long it holds Redis.
const SWEEP_LIMIT: u32 = 1000;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepOutcome {
    pub promoted: u64,
    pub dead_lettered: u64,
    /// What the queue holds after the sweep, for the per-queue metrics: ready, in-flight and
    /// delayed messages; dead letters.
    pub depth: u64,
    pub dead_letters: u64,
    pub slug: String,
}

impl Engine {
    /// `None` when the queue no longer exists. `prune` also drops daily counters older than
    /// `DAILY_HISTORY_DAYS`.
    pub async fn sweep(&self, queue: QueueId, now_ms: u64, prune: bool) -> StorageResult<Option<SweepOutcome>> {
        let prune_before = if prune { utc_day(now_ms - DAILY_HISTORY_DAYS * 86_400_000) } else { 0 };
        let mut inv = self.invocation(&self.scripts.sweep, queue);
        inv.key(self.keys.queue(queue).budget());
        inv.arg(now_ms).arg(SWEEP_LIMIT).arg(prune_before).arg(utc_day(now_ms));
        let value = self.run(&inv).await?;
        let mut reply = Reply::new(value)?;
        if reply.remaining() == 1 {
            return match reply.status("sweep.lua")? {
                Status::NoQueue => Ok(None),
                other => Err(unexpected("sweep.lua", other)),
            };
        }
        let outcome = SweepOutcome {
            promoted: reply.uint()?,
            dead_lettered: reply.uint()?,
            depth: reply.uint()?,
            dead_letters: reply.uint()?,
            slug: reply.text()?,
        };
        Ok(Some(outcome))
    }
}
