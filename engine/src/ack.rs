//! Ack, nack, bury and release of deliveries named by already-verified receipts (`ack.lua`,
//! `nack.lua`, `bury.lua`, `release.lua`).

use super::Engine;
use super::reply::ints;
use crate::error::StorageResult;
use aqs_core::ids::QueueId;
use aqs_core::receipt::{AckHint, Receipt, Run, StreamId};
use aqs_core::time::utc_day;
use std::collections::HashMap;

/// What a nack did to one delivery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NackResult {
    /// Back in the queue, available after the delay.
    Returned,
    /// That was its last attempt: moved to the dead-letter queue.
    DeadLettered,
    /// The receipt's delivery is no longer current.
    LeaseLost,
}

impl Engine {
    /// Acknowledges each receipt; `true` where it was still the current delivery.
    pub async fn ack(&self, queue: QueueId, receipts: &[Receipt], now_ms: u64) -> StorageResult<Vec<bool>> {
        self.ack_hinted(queue, receipts, &vec![None; receipts.len()], now_ms).await
    }

    /// [`Engine::ack`] with each receipt's hint (`hints[i]` for `receipts[i]`; `None` for a
    /// version 1 receipt): with a hint the script need not read the entry.
    pub async fn ack_hinted(
        &self,
        queue: QueueId,
        receipts: &[Receipt],
        hints: &[Option<AckHint>],
        now_ms: u64,
    ) -> StorageResult<Vec<bool>> {
        let mut inv = self.invocation(&self.scripts.ack, queue);
        inv.arg(now_ms).arg(utc_day(now_ms)).arg(receipts.len());
        match whole_run(receipts, hints) {
            Some((run, last)) => inv.arg(run.first.to_string()).arg(last.to_string()).arg(run.len),
            None => inv.arg("").arg("").arg(0),
        };
        for (i, receipt) in receipts.iter().enumerate() {
            inv.arg(receipt.stream_id.to_string()).arg(receipt.message.to_string()).arg(receipt.delivery);
            match hints.get(i).copied().flatten() {
                Some(hint) => inv.arg(hint.base).arg(hint.stored_bytes).arg(u8::from(hint.idempotency_key)),
                None => inv.arg("").arg(0).arg(0),
            };
        }
        ints(self.run(&inv).await?)?
            .into_iter()
            .map(|code| match code {
                1 => Ok(true),
                0 => Ok(false),
                other => Err(anyhow::anyhow!("ack.lua returned the code {other}").into()),
            })
            .collect()
    }

    /// Returns each receipt's message to the queue after `delay_ms`, keeping `error` as its last
    /// error; a message on its last attempt is dead-lettered with that error as the reason.
    pub async fn nack(
        &self,
        queue: QueueId,
        receipts: &[Receipt],
        delay_ms: u64,
        error: &str,
        now_ms: u64,
    ) -> StorageResult<Vec<NackResult>> {
        let retries: Vec<(Receipt, u64)> = receipts.iter().map(|receipt| (receipt.clone(), delay_ms)).collect();
        self.nack_each(queue, &retries, error, now_ms).await
    }

    /// [`nack`](Self::nack) with a delay of its own for each receipt (`(receipt, delay_ms)`): many
    /// retries, each with its own backoff, in one script call.
    pub async fn nack_each(
        &self,
        queue: QueueId,
        retries: &[(Receipt, u64)],
        error: &str,
        now_ms: u64,
    ) -> StorageResult<Vec<NackResult>> {
        let mut inv = self.invocation(&self.scripts.nack, queue);
        inv.arg(now_ms).arg(utc_day(now_ms)).arg(error).arg(retries.len());
        for (receipt, delay_ms) in retries {
            inv.arg(receipt.stream_id.to_string()).arg(receipt.message.to_string()).arg(receipt.delivery);
            inv.arg(*delay_ms);
        }
        nack_results("nack.lua", ints(self.run(&inv).await?)?)
    }

    /// Dead-letters each receipt's message at once with `reason`, whatever its attempts (a push
    /// handler's non-retryable answer). Never `Returned`.
    pub async fn bury(
        &self,
        queue: QueueId,
        receipts: &[Receipt],
        reason: &str,
        now_ms: u64,
    ) -> StorageResult<Vec<NackResult>> {
        let mut inv = self.invocation(&self.scripts.bury, queue);
        inv.arg(now_ms).arg(reason).arg(receipts.len());
        for receipt in receipts {
            inv.arg(receipt.stream_id.to_string()).arg(receipt.message.to_string()).arg(receipt.delivery);
        }
        nack_results("bury.lua", ints(self.run(&inv).await?)?)
    }

    /// Hands leased deliveries back uncounted and due at once (a push dispatcher stopped before it
    /// sent them); `true` where the delivery was still current.
    pub async fn release(&self, queue: QueueId, receipts: &[Receipt], now_ms: u64) -> StorageResult<Vec<bool>> {
        let mut inv = self.invocation(&self.scripts.release, queue);
        inv.arg(now_ms).arg(utc_day(now_ms)).arg(receipts.len());
        for receipt in receipts {
            inv.arg(receipt.stream_id.to_string()).arg(receipt.message.to_string()).arg(receipt.delivery);
        }
        Ok(ints(self.run(&inv).await?)?.into_iter().map(|code| code == 1).collect())
    }
}

/// The per-receipt codes of `nack.lua` and `bury.lua`; any other code is an internal error.
fn nack_results(script: &str, codes: Vec<i64>) -> StorageResult<Vec<NackResult>> {
    codes
        .into_iter()
        .map(|code| match code {
            1 => Ok(NackResult::Returned),
            2 => Ok(NackResult::DeadLettered),
            0 => Ok(NackResult::LeaseLost),
            other => Err(anyhow::anyhow!("{script} returned the code {other}").into()),
        })
        .collect()
}

/// The oldest run (`consume.rs`) that these receipts name whole, with its last stream id: ack.lua
/// may trim it from the stream's head when every one of them is acknowledged. It checks that
/// itself, so a receipt named twice only costs the trim, never an entry.
fn whole_run(receipts: &[Receipt], hints: &[Option<AckHint>]) -> Option<(Run, StreamId)> {
    let mut runs: HashMap<Run, (u32, StreamId)> = HashMap::new();
    for (receipt, hint) in receipts.iter().zip(hints) {
        if let Some(run) = hint.and_then(|h| h.run) {
            let (count, last) = runs.entry(run).or_insert((0, run.first));
            *count += 1;
            *last = (*last).max(receipt.stream_id);
        }
    }
    runs.into_iter()
        .filter(|(run, (count, _))| *count == run.len)
        .min_by_key(|(run, _)| run.first)
        .map(|(run, (_, last))| (run, last))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nack_codes_map_and_a_surprise_is_internal() {
        let results = nack_results("nack.lua", vec![1, 2, 0]).unwrap();
        assert_eq!(results, vec![NackResult::Returned, NackResult::DeadLettered, NackResult::LeaseLost]);
        assert!(matches!(nack_results("nack.lua", vec![1, 7]).unwrap_err(), crate::error::StorageError::Unexpected(_)));
    }
}
