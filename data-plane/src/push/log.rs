//! The push log: the last `LOG_LEN` delivery outcomes of a queue, newest first, in a capped Redis
//! list under the queue's hash tag (`NS:{q:ID}:push:log`), which the control plane shows. A display
//! aid only: failing to write it never affects a delivery. Message mode writes the lines of many
//! deliveries in one round trip; each delivery still has its own line.

use crate::state::DataPlane;
use aqs_core::ids::QueueId;
use aqs_core::push::{DeliveryRecord, LOG_LEN};

pub async fn record(state: &DataPlane, queue: QueueId, entry: &DeliveryRecord) {
    record_all(state, queue, std::slice::from_ref(entry)).await;
}

/// Logs `entries`, oldest first, in one round trip (message mode settles many answers at once).
pub async fn record_all(state: &DataPlane, queue: QueueId, entries: &[DeliveryRecord]) {
    let key = state.engine.keys().queue(queue).push_log();
    // Only the newest `LOG_LEN` would survive the trim.
    let kept = &entries[entries.len().saturating_sub(LOG_LEN)..];
    let mut lines = Vec::with_capacity(kept.len());
    for entry in kept {
        match serde_json::to_string(entry) {
            Ok(line) => lines.push(line),
            Err(err) => tracing::warn!(error = %err, %queue, "cannot encode a push log entry"),
        }
    }
    if lines.is_empty() {
        return;
    }
    let mut pipe = redis::pipe();
    // LPUSH puts each value at the head in turn: the last (newest) ends up first.
    pipe.lpush(&key, lines).ignore().ltrim(&key, 0, LOG_LEN as isize - 1).ignore();
    let written: redis::RedisResult<()> = pipe.query_async(&mut state.engine.conn()).await;
    if let Err(err) = written {
        tracing::warn!(error = %err, %queue, "cannot write the push log");
    }
}
