//! Long polls: a consume that finds nothing waits in Rust (Lua cannot block) until a wake-up for
//! its queue, the earliest lease or delay falling due, or its own deadline — whichever is first —
//! and then runs the consume script again. No loop polls Redis on a timer. On shutdown a waiting
//! poll answers with no messages at once, so graceful shutdown is not held up.

use crate::engine::{ConsumeOutcome, Delivery};
use crate::state::DataPlane;
use aqs_core::error::{ApiError, ApiResult};
use aqs_core::ids::QueueId;
use aqs_core::time::now_ms;
use std::time::Duration;
use tokio::time::Instant;

/// The shortest sleep between two attempts, so a due time in the past cannot spin.
const MIN_SLEEP: Duration = Duration::from_millis(5);

pub struct Consumed {
    pub deliveries: Vec<Delivery>,
    pub lease_ms: u64,
    /// The queue is paused (so `deliveries` is empty).
    pub paused: bool,
}

/// Resolves when the process shuts down; never without a shutdown signal.
async fn shutting_down(state: &DataPlane) {
    match state.shutdown.get() {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}

/// Leases up to `max` messages, waiting up to `wait` for the first one.
pub async fn consume(
    state: &DataPlane,
    queue: QueueId,
    max: u32,
    lease_ms: u64,
    wait: Duration,
) -> ApiResult<Consumed> {
    let deadline = Instant::now() + wait;
    // Registered before the first attempt: a publish landing between the attempt and the wait
    // still wakes us.
    let waiter = (!wait.is_zero()).then(|| state.waiters.register(queue));
    loop {
        let notified = waiter.as_ref().map(|w| w.notify.clone());
        let notified_fut = notified.as_ref().map(|n| n.notified());
        tokio::pin!(notified_fut);
        if let Some(fut) = notified_fut.as_mut().as_pin_mut() {
            fut.enable();
        }
        let now = now_ms();
        let next_due_ms = match state.engine.consume(queue, max, lease_ms, now).await? {
            ConsumeOutcome::Delivered { deliveries, lease_ms, next_due_ms } => {
                if !deliveries.is_empty() {
                    return Ok(Consumed { deliveries, lease_ms, paused: false });
                }
                next_due_ms
            }
            // A paused queue delivers nothing; answer at once rather than hold the connection.
            ConsumeOutcome::Paused => return Ok(Consumed { deliveries: Vec::new(), lease_ms, paused: true }),
            ConsumeOutcome::QueueMissing => return Err(ApiError::not_found("no such queue")),
        };
        let Some(notified_fut) = notified_fut.as_mut().as_pin_mut() else {
            return Ok(Consumed { deliveries: Vec::new(), lease_ms, paused: false });
        };
        let current = Instant::now();
        if current >= deadline {
            return Ok(Consumed { deliveries: Vec::new(), lease_ms, paused: false });
        }
        let wake_at = match next_due_ms {
            Some(due) => deadline.min(current + Duration::from_millis(due.saturating_sub(now)).max(MIN_SLEEP)),
            None => deadline,
        };
        tokio::select! {
            _ = notified_fut => {}
            _ = tokio::time::sleep_until(wake_at) => {}
            _ = shutting_down(state) => return Ok(Consumed { deliveries: Vec::new(), lease_ms, paused: false }),
        }
    }
}
