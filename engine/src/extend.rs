//! Lease extension (a consumer's heartbeat) of deliveries named by already-verified receipts
//! (`extend.lua`).

use super::Engine;
use super::reply::ints;
use crate::error::StorageResult;
use aqs_core::ids::QueueId;
use aqs_core::receipt::{AckHint, Receipt};

impl Engine {
    /// Moves each receipt's lease deadline to `now_ms + lease_ms`; `true` where the receipt was
    /// still the current delivery. `hints[i]` is `receipts[i]`'s hint (`None` for a version 1
    /// receipt: the script then reads the entry).
    pub async fn extend(
        &self,
        queue: QueueId,
        receipts: &[Receipt],
        hints: &[Option<AckHint>],
        lease_ms: u64,
        now_ms: u64,
    ) -> StorageResult<Vec<bool>> {
        let mut inv = self.invocation(&self.scripts.extend, queue);
        inv.arg(now_ms).arg(lease_ms).arg(receipts.len());
        for (i, receipt) in receipts.iter().enumerate() {
            inv.arg(receipt.stream_id.to_string()).arg(receipt.message.to_string()).arg(receipt.delivery);
            match hints.get(i).copied().flatten() {
                Some(hint) => inv.arg(hint.base),
                None => inv.arg(""),
            };
        }
        ints(self.run(&inv).await?)?
            .into_iter()
            .map(|code| match code {
                1 => Ok(true),
                0 => Ok(false),
                other => Err(anyhow::anyhow!("extend.lua returned the code {other}").into()),
            })
            .collect()
    }
}
