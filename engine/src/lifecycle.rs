//! What the control plane asks of a queue's storage besides its messages, so that it never reads
//! nor deletes the engine's keys itself: whether consumers hold leases (`held_leases.lua`),
//! deleting every key of a deleted queue (`drop_queue.lua`), the tokens' last uses and the push
//! delivery log.

use super::Engine;
use crate::error::StorageResult;
use aqs_core::ids::QueueId;
use redis::Value;
use std::collections::HashMap;
use uuid::Uuid;

/// Idempotency records one `drop_queue.lua` call deletes at most: bounds how long it holds Redis.
const DROP_CHUNK: u32 = 1000;

impl Engine {
    /// How many leases consumers hold on `queue` at `now_ms` (a lease a nack released is not held).
    pub async fn held_leases(&self, queue: QueueId, now_ms: u64) -> StorageResult<u64> {
        let mut inv = self.invocation(&self.scripts.held_leases, queue);
        inv.arg(now_ms);
        match self.run(&inv).await? {
            Value::Int(n) => Ok(u64::try_from(n).unwrap_or(0)),
            other => Err(anyhow::anyhow!("held_leases.lua returned {other:?}").into()),
        }
    }

    /// Deletes every message and every key of `queue`. Its meta goes first, so no publish is
    /// accepted once this started; call it only once the queue can no longer be reached (its slug
    /// and tokens gone) and is tombstoned. Safe to call again after an interruption.
    pub async fn drop_queue(&self, queue: QueueId) -> StorageResult<()> {
        let q = self.keys.queue(queue);
        loop {
            let mut inv = self.invocation(&self.scripts.drop_queue, queue);
            // Every key the queue stores, from the one inventory (`QueueKeys::stored`).
            for key in q.stored() {
                inv.key(key);
            }
            inv.arg(DROP_CHUNK);
            match self.run(&inv).await? {
                Value::Int(0) => return Ok(()),
                Value::Int(_) => {}
                other => return Err(anyhow::anyhow!("drop_queue.lua returned {other:?}").into()),
            }
        }
    }
}

impl Engine {
    /// Records that token `token_id` of `queue` was used at `now_ms` (callers do it at most once a
    /// minute per token, off the request's path).
    pub async fn record_token_use(&self, queue: QueueId, token_id: Uuid, now_ms: u64) -> StorageResult<()> {
        let key = self.keys.queue(queue).token_last_used();
        let mut conn = self.conn.clone();
        redis::cmd("HSET").arg(key).arg(token_id.to_string()).arg(now_ms).query_async::<()>(&mut conn).await?;
        Ok(())
    }

    /// token id → its last use (ms) recorded on `queue`.
    pub async fn token_last_uses(&self, queue: QueueId) -> StorageResult<HashMap<Uuid, u64>> {
        let key = self.keys.queue(queue).token_last_used();
        let mut conn = self.conn.clone();
        let raw: HashMap<String, String> = redis::cmd("HGETALL").arg(key).query_async(&mut conn).await?;
        Ok(raw.into_iter().filter_map(|(id, ms)| Some((Uuid::try_parse(&id).ok()?, ms.parse().ok()?))).collect())
    }

    /// The last `count` push delivery records of `queue` (`DeliveryRecord` JSON), newest first.
    pub async fn push_log(&self, queue: QueueId, count: usize) -> StorageResult<Vec<String>> {
        let key = self.keys.queue(queue).push_log();
        let mut conn = self.conn.clone();
        let last = count.saturating_sub(1) as isize;
        Ok(redis::cmd("LRANGE").arg(key).arg(0).arg(last).query_async(&mut conn).await?)
    }
}
