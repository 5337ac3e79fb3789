//! The push log: the last `LOG_LEN` delivery outcomes of a queue, newest first, in a capped Redis
//! list under the queue's hash tag (`NS:{q:ID}:push:log`), which the control plane shows. A display
//! aid only: failing to write it never affects a delivery.

use crate::state::DataPlane;
use aqs_core::ids::QueueId;
use aqs_core::push::{DeliveryRecord, LOG_LEN};

pub async fn record(state: &DataPlane, queue: QueueId, entry: &DeliveryRecord) {
    let key = state.engine.keys().queue(queue).push_log();
    let line = match serde_json::to_string(entry) {
        Ok(line) => line,
        Err(err) => {
            tracing::warn!(error = %err, %queue, "cannot encode a push log entry");
            return;
        }
    };
    let mut pipe = redis::pipe();
    pipe.lpush(&key, line).ignore().ltrim(&key, 0, LOG_LEN as isize - 1).ignore();
    let written: redis::RedisResult<()> = pipe.query_async(&mut state.engine.conn()).await;
    if let Err(err) = written {
        tracing::warn!(error = %err, %queue, "cannot write the push log");
    }
}
