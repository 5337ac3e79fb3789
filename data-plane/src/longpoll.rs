//! Long polls: a consume that finds nothing waits in Rust (Lua cannot block) until a wake-up for
//! its queue, the earliest lease or delay falling due, or its own deadline — whichever is first —
//! and then runs the consume script again. No loop polls Redis on a timer. On shutdown a waiting
//! poll answers with no messages at once, so graceful shutdown is not held up.

use crate::state::DataPlane;
use aqs_core::error::{ApiError, ApiResult};
use aqs_core::ids::QueueId;
use aqs_core::time::now_ms;
use aqs_engine::{Charge, ConsumeOutcome, Delivery};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The shortest sleep between two attempts, so a due time in the past cannot spin.
const MIN_SLEEP: Duration = Duration::from_millis(5);

pub struct Consumed {
    pub deliveries: Vec<Delivery>,
    pub lease_ms: u64,
    /// The queue is paused (so `deliveries` is empty).
    pub paused: bool,
}

/// Resolves when the process shuts down or `stop` is cancelled; never without either. One future
/// for both, the pair boxed: a held poll keeps it for its whole wait.
async fn ended(state: &DataPlane, stop: Option<&CancellationToken>) {
    match (state.shutdown.get(), stop) {
        (Some(shutdown), Some(stop)) => {
            Box::pin(async {
                tokio::select! {
                    () = shutdown.cancelled() => {}
                    () = stop.cancelled() => {}
                }
            })
            .await;
        }
        (Some(token), None) | (None, Some(token)) => token.cancelled().await,
        (None, None) => std::future::pending().await,
    }
}

/// Leases up to `max` messages, waiting up to `wait` for the first one: a consumer's request,
/// charged to its token's rate budget once (on the first attempt), unless an earlier script of the
/// same request took the charge (`None`: a consume that acknowledged first).
///
/// Not an `async fn` itself (nor is [`consume_until`]): a wrapper's future would hold its own copy
/// of the arguments beside the inner future's, for the whole wait of every held poll.
pub fn consume(
    state: &DataPlane,
    charge: Option<Charge>,
    queue: QueueId,
    max: u32,
    lease_ms: u64,
    wait: Duration,
) -> impl Future<Output = ApiResult<Consumed>> + Send + '_ {
    consume_charged(state, queue, max, lease_ms, wait, None, charge)
}

/// [`consume`] that also stops waiting, answering with no messages, once `stop` is cancelled. Only
/// the wait is cut short, never a consume script in flight: a caller that dropped the future
/// instead could lose the answer of a script that had already leased messages.
pub fn consume_until<'a>(
    state: &'a DataPlane,
    queue: QueueId,
    max: u32,
    lease_ms: u64,
    wait: Duration,
    stop: Option<&'a CancellationToken>,
) -> impl Future<Output = ApiResult<Consumed>> + Send + 'a {
    consume_charged(state, queue, max, lease_ms, wait, stop, None)
}

/// An `async` block rather than an `async fn`: the arguments are held once, not also copied into
/// the function's own locals.
#[allow(clippy::manual_async_fn, reason = "an async fn would hold its arguments twice (above)")]
fn consume_charged<'a>(
    state: &'a DataPlane,
    queue: QueueId,
    max: u32,
    lease_ms: u64,
    wait: Duration,
    stop: Option<&'a CancellationToken>,
    mut charge: Option<Charge>,
) -> impl Future<Output = ApiResult<Consumed>> + Send + 'a {
    async move {
        if stop.is_some_and(CancellationToken::is_cancelled) {
            return Ok(Consumed { deliveries: Vec::new(), lease_ms, paused: false });
        }
        let deadline = Instant::now() + wait;
        // Registered before the first attempt: a publish landing between the attempt and the wait
        // still wakes us.
        let waiter = (!wait.is_zero()).then(|| state.engine.waiters().register(queue));
        // Set between a wake-up and the end of the attempt it triggers: dropped there (the client went
        // away, shutdown), the wake-up goes to another waiter, as publish meant it for someone.
        let mut pass_on = PassOn(None);
        loop {
            let notified = waiter.as_ref().map(|w| w.notify.clone());
            let notified_fut = notified.as_ref().map(|n| n.notified());
            tokio::pin!(notified_fut);
            if let Some(fut) = notified_fut.as_mut().as_pin_mut() {
                fut.enable();
            }
            let now = now_ms();
            let wait_until_ms = match &waiter {
                Some(_) => now + deadline.saturating_duration_since(Instant::now()).as_millis() as u64,
                None => 0,
            };
            // Boxed: the script call's future is large and lives only during the attempt; inline, it
            // would be part of every held poll's task for the whole wait.
            // Only the first attempt is charged: the later ones are the same request.
            let charge = charge.take();
            let attempt = Box::pin(async move {
                match charge {
                    Some(charge) => {
                        state.engine.charged(charge).consume(queue, max, lease_ms, now, wait_until_ms).await
                    }
                    None => state.engine.consume(queue, max, lease_ms, now, wait_until_ms).await,
                }
            })
            .await;
            pass_on.0 = None;
            let next_due_ms = match attempt? {
                ConsumeOutcome::Delivered { deliveries, lease_ms, next_due_ms } => {
                    if !deliveries.is_empty() {
                        // A full batch: more may be ready than this poll could take, and a publish of
                        // n messages woke at most n waiters; let one more look.
                        if deliveries.len() >= max as usize
                            && let Some(waiter) = &waiter
                        {
                            waiter.notify.notify_one();
                        }
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
            // A consumer's request waiting (push dispatchers, which pass `stop`, are not counted).
            let _held = stop.is_none().then(aqs_core::metrics::LongPollHeld::enter);
            tokio::select! {
                _ = notified_fut => pass_on.0 = notified.clone(),
                _ = tokio::time::sleep_until(wake_at) => {}
                _ = ended(state, stop) => return Ok(Consumed { deliveries: Vec::new(), lease_ms, paused: false }),
            }
        }
    }
}

/// Re-issues a consumed wake-up when dropped while armed.
struct PassOn(Option<std::sync::Arc<tokio::sync::Notify>>);

impl Drop for PassOn {
    fn drop(&mut self) {
        if let Some(notify) = self.0.take() {
            notify.notify_one();
        }
    }
}
