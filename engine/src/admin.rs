//! Peek and purge of ready messages (`peek.lua`, `purge.lua`).

use super::Engine;
use super::reply::chunk_counts;
use crate::error::StorageResult;
use aqs_core::ids::QueueId;

/// A ready message read without leasing it.
#[derive(Clone, Debug)]
pub struct PeekedMessage {
    pub id: String,
    pub body: Vec<u8>,
    pub content_type: String,
    pub attributes: String,
    pub group_id: Option<String>,
    pub published_at_ms: u64,
    /// Deliveries so far.
    pub attempts: u32,
}

/// Messages asked of one chunked script call (purge, replay, DLQ purge); the script lowers it for
/// queues with large payloads (64 MiB of bodies per call at most). Bounds how long a call holds
/// Redis.
pub const PURGE_CHUNK: u32 = 500;

impl Engine {
    /// Up to `limit` ready messages in delivery order, attempts and leases untouched.
    pub async fn peek(&self, queue: QueueId, limit: u32, now_ms: u64) -> StorageResult<Option<Vec<PeekedMessage>>> {
        let mut inv = self.invocation(&self.scripts.peek, queue);
        inv.arg(now_ms).arg(limit);
        let Some(mut reply) = self.run_found(&inv, "peek.lua").await? else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(reply.remaining() / 8);
        while reply.remaining() > 0 {
            let _stream_id = reply.text()?;
            out.push(PeekedMessage {
                id: reply.text()?,
                body: reply.bytes()?,
                content_type: reply.text()?,
                attributes: reply.text()?,
                group_id: reply.opt_text()?,
                published_at_ms: reply.uint()?,
                attempts: reply.uint()? as u32,
            });
        }
        Ok(Some(out))
    }

    /// Deletes every waiting ready message (not leased, not delayed), in bounded chunks; returns
    /// how many. Stops at the first chunk that is not full, so a steady stream of publishes
    /// cannot keep it going forever.
    pub async fn purge_ready(&self, queue: QueueId, now_ms: u64) -> StorageResult<u64> {
        let (mut total, mut charge) = (0, self.charge);
        loop {
            // The request is charged once, on its first chunk.
            let mut inv = self.invocation_charged(&self.scripts.purge, queue, charge.take());
            inv.arg(now_ms).arg(PURGE_CHUNK);
            let (n, chunk) = chunk_counts("purge.lua", self.run(&inv).await?)?;
            total += n;
            if n < chunk {
                return Ok(total);
            }
        }
    }
}
