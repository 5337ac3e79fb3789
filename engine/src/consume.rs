//! Consume: lease up to N messages with `consume.lua`. Waiting (long polls) happens in the caller:
//! Lua cannot block.

use super::Engine;
use super::publish::DEFAULT_CONTENT_TYPE;
use super::reply::{Reply, Status, unexpected};
use crate::error::StorageResult;
use aqs_core::ids::{MessageId, QueueId};
use aqs_core::receipt::{AckHint, Receipt, Run, StreamId};
use aqs_core::time::utc_day;

/// One delivery: a message under a fresh lease.
#[derive(Clone, Debug)]
pub struct Delivery {
    pub stream_id: StreamId,
    pub message: MessageId,
    pub body: Vec<u8>,
    pub content_type: String,
    pub attributes: String,
    pub group_id: Option<String>,
    pub published_at_ms: u64,
    /// Counts this delivery: 1 on the first.
    pub attempts: u32,
    /// What the receipt carries so that ack need not read the entry.
    pub hint: AckHint,
}

impl Delivery {
    /// The receipt of this delivery of a message of `queue`, valid until `expires_at_ms`.
    pub fn receipt(&self, queue: QueueId, expires_at_ms: u64) -> Receipt {
        Receipt { queue, stream_id: self.stream_id, message: self.message, delivery: self.attempts, expires_at_ms }
    }
}

#[derive(Debug)]
pub enum ConsumeOutcome {
    Delivered {
        deliveries: Vec<Delivery>,
        /// The lease actually granted (the queue's visibility timeout when none was asked).
        lease_ms: u64,
        /// When the earliest lease or delay falls due: a long poll sleeps until then at most.
        next_due_ms: Option<u64>,
    },
    Paused,
    QueueMissing,
}

impl Engine {
    /// Leases up to `max` messages for `lease_ms` (0 = the queue's visibility timeout). A caller
    /// that will wait for messages when there are none says until when (`wait_until_ms`, 0 for
    /// none), so that publishes wake it (the `w` mark in `meta`).
    pub async fn consume(
        &self,
        queue: QueueId,
        max: u32,
        lease_ms: u64,
        now_ms: u64,
        wait_until_ms: u64,
    ) -> StorageResult<ConsumeOutcome> {
        let mut inv = self.invocation(&self.scripts.consume, queue);
        inv.arg(now_ms).arg(utc_day(now_ms)).arg(max).arg(lease_ms).arg(wait_until_ms);
        let mut reply = Reply::new(self.run(&inv).await?)?;
        match reply.status("consume.lua")? {
            Status::Ok => {}
            Status::Paused => return Ok(ConsumeOutcome::Paused),
            Status::NoQueue => return Ok(ConsumeOutcome::QueueMissing),
            other => return Err(unexpected("consume.lua", other)),
        }
        let lease_ms = reply.uint()?;
        let next_due_ms = reply.opt_uint()?;
        let run_len = reply.uint()? as usize;
        let mut deliveries = Vec::with_capacity(reply.remaining() / 4);
        while reply.remaining() > 0 {
            deliveries.push(delivery(&mut reply)?);
        }
        mark_run(&mut deliveries, run_len)?;
        Ok(ConsumeOutcome::Delivered { deliveries, lease_ms, next_due_ms })
    }
}

/// Gives the last `len` deliveries, one run (consume.lua's header), their run: their receipts
/// carry it, so that an ack of all of them can trim them from the stream (ack.rs).
fn mark_run(deliveries: &mut [Delivery], len: usize) -> StorageResult<()> {
    if len > deliveries.len() {
        return Err(anyhow::anyhow!("consume.lua gave a run of {len} with {} deliveries", deliveries.len()).into());
    }
    let at = deliveries.len() - len;
    if let Some(first) = deliveries.get(at).map(|d| d.stream_id) {
        let run = Run { first, len: len as u32 };
        for d in &mut deliveries[at..] {
            d.hint.run = Some(run);
        }
    }
    Ok(())
}

/// One delivery of consume.lua's reply: the stream id, message id and body, then either the 8
/// other values or none, for a plain message's first delivery (see the script's header).
fn delivery(reply: &mut Reply) -> StorageResult<Delivery> {
    let sid = reply.text()?;
    let id = reply.text()?;
    let stream_id = StreamId::parse(&sid).ok_or_else(|| anyhow::anyhow!("bad stream id {sid}"))?;
    let message = MessageId::parse(&id).ok_or_else(|| anyhow::anyhow!("bad message id {id}"))?;
    let body = reply.bytes()?;
    match reply.uint()? {
        0 => Ok(Delivery {
            stream_id,
            message,
            content_type: DEFAULT_CONTENT_TYPE.to_owned(),
            attributes: String::new(),
            group_id: None,
            published_at_ms: stream_id.ms,
            attempts: 1,
            hint: AckHint { base: 0, stored_bytes: body.len() as u64, idempotency_key: false, run: None },
            body,
        }),
        8 => Ok(Delivery {
            stream_id,
            message,
            body,
            content_type: reply.text()?,
            attributes: reply.text()?,
            group_id: reply.opt_text()?,
            published_at_ms: reply.uint()?,
            attempts: reply.uint()? as u32,
            hint: AckHint {
                base: reply.uint()? as u32,
                stored_bytes: reply.uint()?,
                idempotency_key: reply.int()? == 1,
                run: None,
            },
        }),
        other => Err(anyhow::anyhow!("consume.lua gave {other} values after a delivery's body").into()),
    }
}
