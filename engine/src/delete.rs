//! Deleting one message the console points at (`delete_message.lua`): a ready or retrying stream
//! entry, or a delayed message. A message under a live lease is not deleted: its consumer holds a
//! receipt and is working on it; the console says so and when the lease ends.

use super::Engine;
use super::browse::MessageRef;
use super::reply::Reply;
use crate::error::StorageResult;
use aqs_core::ids::QueueId;

/// What deleting one message did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Deleted {
    /// Gone for good, with its message id.
    Deleted(String),
    /// Under a live lease until this deadline (ms): not deleted.
    Leased(u64),
    /// No longer there (acknowledged, delivered and moved, purged), or a dead letter.
    Gone,
}

impl Engine {
    /// Deletes the message `reference` points at, unless a consumer holds it; `Ok(None)` when the
    /// queue does not exist. A dead letter is [`Deleted::Gone`] here: dead letters are purged
    /// (`purge_dead_letters`).
    pub async fn delete_message(
        &self,
        queue: QueueId,
        reference: &MessageRef,
        now_ms: u64,
    ) -> StorageResult<Option<Deleted>> {
        let (where_, id) = match reference {
            MessageRef::Stream(sid) => ("s", sid),
            MessageRef::Delayed(id) => ("d", id),
            MessageRef::Dead(_) => return Ok(Some(Deleted::Gone)),
        };
        let mut inv = self.invocation(&self.scripts.delete_message, queue);
        inv.arg(now_ms).arg(where_).arg(id.as_str());
        let Some(mut reply) = self.run_found(&inv, "delete_message.lua").await? else {
            return Ok(None);
        };
        Ok(Some(outcome(&mut reply)?))
    }
}

fn outcome(reply: &mut Reply) -> StorageResult<Deleted> {
    Ok(match reply.text()?.as_str() {
        "deleted" => Deleted::Deleted(reply.text()?),
        "leased" => Deleted::Leased(reply.uint()?),
        "gone" => Deleted::Gone,
        other => return Err(anyhow::anyhow!("delete_message.lua returned {other:?}").into()),
    })
}
