//! The dead-letter queue: list (in pages, optionally of the dead letters whose reason contains a
//! text), count, replay, purge (`dlq_*.lua`).

use super::admin::PURGE_CHUNK;
use super::reply::Reply;
use super::{Charge, Engine};
use crate::error::StorageResult;
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
    /// Every dead letter whose reason contains this text (plain, case-sensitive).
    ReasonContains(String),
}

/// One page of dead letters and where the next one starts (`None`: this was the last).
#[derive(Clone, Debug)]
pub struct DeadLetterPage {
    pub letters: Vec<DeadLetter>,
    pub next: Option<String>,
}

/// Longest reason filter accepted: a reason is kept to 1 KiB.
pub const REASON_FILTER_MAX: usize = 1024;

/// `<ms>-<seq>`: a dead-letter stream id, as a page cursor.
fn valid_cursor(cursor: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
    cursor.split_once('-').is_some_and(|(ms, seq)| digits(ms) && digits(seq))
}

impl Engine {
    /// The oldest `limit` dead letters; `None` when the queue does not exist.
    pub async fn dead_letters(&self, queue: QueueId, limit: u32) -> StorageResult<Option<Vec<DeadLetter>>> {
        Ok(self.dead_letter_page(queue, None, limit, "").await?.map(|page| page.letters))
    }

    /// Up to `limit` dead letters after `cursor` (`None`: from the oldest), only those whose reason
    /// contains `reason` when it is not empty. A filtered page reads one bounded chunk and may come
    /// back short with a `next`. A malformed cursor reads from the oldest (it comes from a URL).
    pub async fn dead_letter_page(
        &self,
        queue: QueueId,
        cursor: Option<&str>,
        limit: u32,
        reason: &str,
    ) -> StorageResult<Option<DeadLetterPage>> {
        let cursor = cursor.filter(|c| valid_cursor(c)).unwrap_or("");
        let mut inv = self.invocation(&self.scripts.dlq_list, queue);
        inv.arg("list").arg(limit.max(1)).arg(PREVIEW_BYTES).arg(cursor).arg(reason);
        let Some(mut reply) = self.run_found(&inv, "dlq_list.lua").await? else {
            return Ok(None);
        };
        let next = reply.opt_text()?;
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
        Ok(Some(DeadLetterPage { letters: out, next }))
    }

    /// How many dead letters have a reason that contains `reason` (every one when it is empty:
    /// then one XLEN through `stats`). Reads the dead-letter queue in bounded chunks.
    pub async fn count_dead_letters(&self, queue: QueueId, reason: &str) -> StorageResult<u64> {
        let mut conn = self.conn.clone();
        if reason.is_empty() {
            let n: u64 = redis::cmd("XLEN").arg(self.keys.queue(queue).dead_letters()).query_async(&mut conn).await?;
            return Ok(n);
        }
        let (mut total, mut cursor) = (0, String::new());
        loop {
            let mut inv = self.invocation(&self.scripts.dlq_list, queue);
            inv.arg("count").arg(&cursor).arg(reason).arg(PURGE_CHUNK);
            let Some(mut reply) = self.run_found(&inv, "dlq_list.lua").await? else {
                return Ok(0);
            };
            let (matching, read, chunk, last) = (reply.uint()?, reply.uint()?, reply.uint()?, reply.text()?);
            total += matching;
            if read < chunk || last.is_empty() {
                return Ok(total);
            }
            cursor = last;
        }
    }

    /// Puts dead letters back on the queue with attempts reset; returns how many.
    pub async fn replay_dead_letters(&self, queue: QueueId, selection: &Selection) -> StorageResult<u64> {
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
    pub async fn purge_dead_letters(&self, queue: QueueId, selection: &Selection, now_ms: u64) -> StorageResult<u64> {
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
    /// bounded chunks for everything or every match; the request is charged once, on its first
    /// call.
    async fn chunked<'a>(
        &self,
        selection: &Selection,
        build: impl Fn(Vec<String>, Option<Charge>) -> super::Invocation<'a>,
    ) -> StorageResult<u64> {
        match selection {
            Selection::Ids(ids) => {
                let args = std::iter::once("ids".to_owned()).chain(ids.iter().cloned()).collect();
                let (n, ..) = self.dlq_chunk(&build(args, self.charge)).await?;
                Ok(n)
            }
            Selection::All => {
                let (mut total, mut charge) = (0, self.charge);
                loop {
                    let inv = build(vec!["all".into(), PURGE_CHUNK.to_string()], charge.take());
                    let (n, chunk, ..) = self.dlq_chunk(&inv).await?;
                    total += n;
                    if n < chunk {
                        return Ok(total);
                    }
                }
            }
            // Acted-on entries leave the DLQ, the others stay: each call goes on after the last
            // entry read, so the walk only moves forward and ends at the end of the DLQ.
            Selection::ReasonContains(text) => {
                let (mut total, mut cursor, mut charge) = (0, String::new(), self.charge);
                loop {
                    let args = vec!["match".into(), PURGE_CHUNK.to_string(), cursor.clone(), text.clone()];
                    let (n, chunk, read, last) = self.dlq_chunk(&build(args, charge.take())).await?;
                    total += n;
                    if read < chunk || last.is_empty() {
                        return Ok(total);
                    }
                    cursor = last;
                }
            }
        }
    }

    /// One call of a DLQ action: `(acted on, chunk size used, entries read, last entry read or '')`.
    async fn dlq_chunk(&self, inv: &super::Invocation<'_>) -> StorageResult<(u64, u64, u64, String)> {
        let mut reply = Reply::new(self.run(inv).await?)?;
        Ok((reply.uint()?, reply.uint()?, reply.uint()?, reply.text()?))
    }
}
