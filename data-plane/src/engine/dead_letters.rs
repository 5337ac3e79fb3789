//! The dead-letter queue: list, replay, purge (`dlq_*.lua`).

use super::admin::PURGE_CHUNK;
use super::reply::chunk_counts;
use super::{Charge, Engine};
use aqs_core::error::ApiResult;
use aqs_core::ids::QueueId;

/// Bytes of the body shown in a dead letter's preview.
pub const PREVIEW_BYTES: usize = 256;

#[derive(Clone, Debug)]
pub struct DeadLetter {
    pub id: String,
    pub reason: String,
    pub attempts: u32,
    pub dead_at_ms: u64,
    /// The first `PREVIEW_BYTES` bytes of the body.
    pub body_preview: Vec<u8>,
    pub body_bytes: u64,
    pub content_type: String,
    pub published_at_ms: u64,
    pub group_id: Option<String>,
}

/// Which dead letters an action applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    All,
    Ids(Vec<String>),
}

impl Engine {
    /// The oldest `limit` dead letters; `None` when the queue does not exist.
    pub async fn dead_letters(&self, queue: QueueId, limit: u32) -> ApiResult<Option<Vec<DeadLetter>>> {
        let mut inv = self.invocation(&self.scripts.dlq_list, queue);
        inv.arg(limit).arg(PREVIEW_BYTES);
        let Some(mut reply) = self.run_found(&inv, "dlq_list.lua").await? else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(reply.remaining() / 9);
        while reply.remaining() > 0 {
            out.push(DeadLetter {
                id: reply.text()?,
                reason: reply.text()?,
                attempts: reply.uint()? as u32,
                dead_at_ms: reply.uint()?,
                body_preview: reply.bytes()?,
                body_bytes: reply.uint()?,
                content_type: reply.text()?,
                published_at_ms: reply.uint()?,
                group_id: reply.opt_text()?,
            });
        }
        Ok(Some(out))
    }

    /// Puts dead letters back on the queue with attempts reset; returns how many.
    pub async fn replay_dead_letters(&self, queue: QueueId, selection: &Selection) -> ApiResult<u64> {
        self.chunked(selection, |inv_args, charge| {
            let mut inv = self.invocation_charged(&self.scripts.dlq_replay, queue, charge);
            for arg in inv_args {
                inv.arg(arg);
            }
            inv
        })
        .await
    }

    /// Deletes dead letters for good; returns how many.
    pub async fn purge_dead_letters(&self, queue: QueueId, selection: &Selection, now_ms: u64) -> ApiResult<u64> {
        self.chunked(selection, |inv_args, charge| {
            let mut inv = self.invocation_charged(&self.scripts.dlq_purge, queue, charge);
            inv.arg(now_ms);
            for arg in inv_args {
                inv.arg(arg);
            }
            inv
        })
        .await
    }

    /// Runs a DLQ script once for a list of ids (at most 100 by the API), or repeatedly over
    /// bounded chunks for everything; the request is charged once, on its first call.
    async fn chunked<'a>(
        &self,
        selection: &Selection,
        build: impl Fn(Vec<String>, Option<Charge>) -> super::Invocation<'a>,
    ) -> ApiResult<u64> {
        match selection {
            Selection::Ids(ids) => {
                let args = std::iter::once("ids".to_owned()).chain(ids.iter().cloned()).collect();
                let (n, _chunk) = chunk_counts("a dead-letter script", self.run(&build(args, self.charge)).await?)?;
                Ok(n)
            }
            Selection::All => {
                let (mut total, mut charge) = (0, self.charge);
                loop {
                    let inv = build(vec!["all".into(), PURGE_CHUNK.to_string()], charge.take());
                    let (n, chunk) = chunk_counts("a dead-letter script", self.run(&inv).await?)?;
                    total += n;
                    if n < chunk {
                        return Ok(total);
                    }
                }
            }
        }
    }
}
