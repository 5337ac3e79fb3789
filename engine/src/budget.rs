//! Storage budget leases (`scripts/budget.lua`): granting this replica more of a queue's free
//! storage when a single publish finds its lease short (`lease.lua`), and writing the ledger
//! (`ledger.rs`) to Redis a few times a second (`flush.lua`).

use super::Engine;
use super::ledger::{FlushItem, Recorded};
use crate::error::StorageResult;
use aqs_core::ids::QueueId;
use aqs_core::time::now_ms;
use futures_util::future::join_all;
use redis::Value;

/// What asking for a lease that fits a publish gave.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Drawn {
    /// The bytes are drawn and the publish counted (`Ledger::try_draw`).
    Yes,
    StorageFull,
    QueueMissing,
}

impl Engine {
    /// Draws `bytes` for one publish on `day`, growing this replica's lease in Redis when the one
    /// held is short. The undrawn rest of the lease is given back first, so the limit is judged on
    /// exactly what is stored, whatever lease this replica held.
    pub(super) async fn draw(&self, queue: QueueId, day: u32, bytes: u64, now_ms: u64) -> StorageResult<Drawn> {
        let ledger = &self.ledger;
        if ledger.try_draw(queue, day, bytes) {
            return Ok(Drawn::Yes);
        }
        let _leasing = ledger.lock_leasing(queue).await;
        // Another publish may have been granted a lease while this one waited.
        if ledger.try_draw(queue, day, bytes) {
            return Ok(Drawn::Yes);
        }
        let held = ledger.give_back_undrawn(queue);
        let q = self.keys.queue(queue);
        let mut inv = self.prepare(&self.scripts.lease);
        inv.key(q.meta()).key(q.stats()).key(q.budget());
        inv.arg(now_ms).arg(self.replica.as_ref()).arg(held).arg(bytes);
        match self.run(&inv).await? {
            // lease.lua grants at least `held + bytes`, and `held` covers what is drawn.
            Value::Int(lease) if ledger.grant_and_draw(queue, lease, day, bytes) => Ok(Drawn::Yes),
            Value::Int(lease) => Err(anyhow::anyhow!("lease.lua granted {lease} bytes, short of {bytes}").into()),
            Value::BulkString(reply) if reply == b"storage" => {
                ledger.granted(queue, held);
                Ok(Drawn::StorageFull)
            }
            Value::BulkString(reply) if reply == b"no_queue" => Ok(Drawn::QueueMissing),
            other => Err(anyhow::anyhow!("lease.lua returned {other:?}").into()),
        }
    }

    /// Gives back the undrawn part of this replica's lease on `queue`, so that a publish judged
    /// by `publish.lua` sees all the room there is; returns the lease kept, or `None` when no
    /// part was undrawn. The caller holds `lock_leasing` until that publish is done.
    pub(super) fn give_back_for_publish(&self, queue: QueueId) -> Option<i64> {
        (self.ledger.undrawn(queue) > 0).then(|| self.ledger.give_back_undrawn(queue))
    }

    /// Writes what this process published since the last flush: stored bytes, today's counts,
    /// leases renewed, topped up or (`release`, or idle) given back. One `flush.lua` call per
    /// queue, all sent at once (the connection pipelines them); what could not be written is kept
    /// for the next flush.
    pub async fn flush_ledger(&self, release: bool) -> StorageResult<()> {
        let ledger = &self.ledger;
        let _flushing = ledger.write_gate().await;
        let now = now_ms();
        let flushes = ledger.queues().into_iter().map(|queue| async move {
            let _leasing = ledger.lock_leasing(queue).await;
            let Some(item) = ledger.take(queue, release) else { return Ok(()) };
            match self.flush_one(&item, now).await {
                Ok(recorded) => {
                    ledger.flushed(queue, recorded);
                    Ok(())
                }
                Err(err) => {
                    ledger.restore(item);
                    Err(err)
                }
            }
        });
        join_all(flushes).await.into_iter().collect()
    }

    /// What Redis recorded, or `None` when the queue is gone.
    async fn flush_one(&self, item: &FlushItem, now_ms: u64) -> StorageResult<Option<Recorded>> {
        let q = self.keys.queue(item.queue);
        let mut inv = self.prepare(&self.scripts.flush);
        inv.key(q.meta()).key(q.stats()).key(q.budget()).key(q.minutes());
        inv.arg(now_ms).arg(self.replica.as_ref()).arg(item.drawn).arg(item.lease).arg(item.want);
        for (day, n) in &item.counts {
            inv.arg(day).arg(n);
        }
        match self.run(&inv).await? {
            Value::Int(-1) => Ok(None),
            Value::Array(reply) => match reply.as_slice() {
                [Value::Int(lease), Value::Int(over)] => Ok(Some(Recorded { lease: *lease, over_limit: *over == 1 })),
                other => Err(anyhow::anyhow!("flush.lua returned {other:?}").into()),
            },
            other => Err(anyhow::anyhow!("flush.lua returned {other:?}").into()),
        }
    }
}
