//! Stored messages over the included 1 MiB: the publish script records each in the queue's
//! `large` zset (message id → body bytes) and every script that deletes a message removes it
//! (`common.lua`'s `forget_large`), so the count is exact while the message is ready, leased,
//! delayed or dead. Billing asks before it lets a queue go back to a smaller payload size.

use super::Engine;
use crate::error::StorageResult;
use aqs_core::ids::QueueId;

impl Engine {
    /// How many stored messages of `queue` have a body larger than `limit` bytes.
    pub async fn stored_larger_than(&self, queue: QueueId, limit: u64) -> StorageResult<u64> {
        let mut conn = self.conn.clone();
        let count: u64 = redis::cmd("ZCOUNT")
            .arg(self.keys.queue(queue).large())
            .arg(format!("({limit}"))
            .arg("+inf")
            .query_async(&mut conn)
            .await?;
        Ok(count)
    }
}
