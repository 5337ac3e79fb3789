//! Usage this month per queue: message operations (publishes, deliveries, acks) and stored
//! bytes, read from the data plane's counters. Shown as estimates: they are not charged today.

use crate::queues;
use crate::state::ControlPlane;
use crate::teams::TeamId;
use aqs_core::ApiResult;
use aqs_core::time::now_ms;
use chrono::{Datelike, Utc};
use serde::Serialize;

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct QueueUsage {
    pub queue: String,
    pub queue_name: String,
    pub message_operations: u64,
    pub stored_bytes: u64,
    /// Always true: these figures are estimates and not billed.
    pub estimate: bool,
}

pub async fn this_month(cp: &ControlPlane, team: TeamId) -> ApiResult<Vec<QueueUsage>> {
    let now = now_ms();
    // Days so far this month, today included (the data plane keeps 35 days of counters).
    let days = Utc::now().day();
    let mut out = Vec::new();
    for row in queues::store::list(cp.db(), team).await? {
        let queue = row.into_queue(cp.public_url());
        let counts = cp.engine().daily_counts(queue.id, days, now).await?;
        let operations = counts.iter().map(|c| c.published + c.delivered + c.acked).sum();
        let stored_bytes = cp.engine().stats(queue.id, now).await?.map(|s| s.stored_bytes).unwrap_or(0);
        out.push(QueueUsage {
            queue: queue.slug.to_string(),
            queue_name: queue.name,
            message_operations: operations,
            stored_bytes,
            estimate: true,
        });
    }
    Ok(out)
}
