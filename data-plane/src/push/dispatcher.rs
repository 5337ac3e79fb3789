//! One dispatcher per pushed queue per replica: lease, deliver, settle, repeat
//! (`docs/push-delivery.md`).
//!
//! It leases exactly as a consumer does (the engine's consume, under a lease that covers filling a
//! batch, the handler's timeout and a margin), so replicas never deliver one message twice at
//! once, and a dispatcher that dies mid-delivery leaves leases that simply run out and come back.
//! It waits for messages with the long-poll machinery (woken by publishes, nacks and due delays;
//! each wait ends after at most `POLL` and the loop looks again, never polling Redis in
//! between). At most `concurrency` requests of a queue are in flight per replica. Message mode
//! (`message_flow`) leases ahead of its requests and settles their answers many per script call;
//! batch mode (here) holds one place of the cap per batch from lease to settlement. Stopped, a
//! dispatcher hands back what it leased but did not send, uncounted.

use super::settings::PushSettings;
use super::settle::Settler;
use super::{batch, message, message_flow};
use crate::longpoll;
use crate::state::DataPlane;
use aqs_core::error::ApiError;
use aqs_core::limits::LONG_POLL_MAX_SECS;
use aqs_core::projection::PushMode;
use aqs_core::time::now_ms;
use aqs_engine::Delivery;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long one wait for a first message lasts before the loop looks around again.
const POLL: Duration = Duration::from_secs(LONG_POLL_MAX_SECS as u64);
/// The pause after a paused queue or a Redis error, before leasing again.
const IDLE: Duration = Duration::from_secs(1);

/// What one leasing step found.
#[derive(Debug)]
pub enum Leased {
    Messages(Vec<Delivery>),
    /// Nothing became ready within the wait.
    Nothing,
    Paused,
    Failed(ApiError),
}

/// Runs until `stop` is cancelled (push stopped or changed, or the process shuts down). In-flight
/// deliveries finish on their own; messages leased but not yet sent are handed back.
pub async fn run(state: DataPlane, settings: PushSettings, stop: CancellationToken) {
    let settings = Arc::new(settings);
    tracing::info!(queue = %settings.queue, mode = settings.mode().as_str(), "push dispatcher started");
    match settings.mode() {
        PushMode::Message => {
            // Answers are applied to their leases many at a time; the settler ends once this and
            // every in-flight delivery's clone are gone.
            let settler = Settler::spawn(state.clone(), settings.clone());
            message_flow::run(state, settings.clone(), settler, stop).await;
        }
        PushMode::Batch => run_batches(state, settings.clone(), stop).await,
    }
    tracing::info!(queue = %settings.queue, "push dispatcher stopped");
}

/// Batch mode: each place of the concurrency cap leases a batch, sends it and settles it.
async fn run_batches(state: DataPlane, settings: Arc<PushSettings>, stop: CancellationToken) {
    let permits = Arc::new(Semaphore::new(settings.concurrency()));
    let mut leasing = Leasing::default();
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
            _ = stop.cancelled() => break,
        };
        // Not raced against `stop`: dropped mid-script, a lease would strand what it had leased.
        // `lease` stops waiting on its own, and what it took after the stop goes back.
        let Some(deliveries) = leasing.next(&state, &settings, settings.record.messages_per_run, &stop).await else {
            continue;
        };
        if stop.is_cancelled() {
            hand_back(&state, &settings, &deliveries).await;
            break;
        }
        let (state, settings) = (state.clone(), settings.clone());
        tokio::spawn(async move {
            batch::deliver(&state, &settings, deliveries).await;
            drop(permit);
        });
    }
}

/// A dispatcher's leasing, which says once (not every second) when it starts failing.
#[derive(Default)]
pub(super) struct Leasing {
    failing: bool,
}

impl Leasing {
    /// [`lease`]: the messages it got, or `None` after an empty wait, or after a second's pause
    /// on a paused queue or a Redis error.
    pub(super) async fn next(
        &mut self,
        state: &DataPlane,
        settings: &PushSettings,
        want: u32,
        stop: &CancellationToken,
    ) -> Option<Vec<Delivery>> {
        match lease(state, settings, want, stop).await {
            Leased::Messages(deliveries) => {
                self.failing = false;
                return Some(deliveries);
            }
            Leased::Nothing => return None,
            Leased::Paused => {}
            Leased::Failed(err) => {
                if !self.failing {
                    tracing::warn!(error = %err, queue = %settings.queue, "push dispatcher cannot lease; retrying");
                    self.failing = true;
                }
            }
        }
        idle(stop).await;
        None
    }
}

async fn idle(stop: &CancellationToken) {
    tokio::select! {
        _ = tokio::time::sleep(IDLE) => {}
        _ = stop.cancelled() => {}
    }
}

/// Leases up to `want` messages, waiting for the first; in batch mode then keeps filling the batch
/// for up to the target's `wait_seconds`. Once `stop` is cancelled it waits no more and answers
/// with what it holds.
pub async fn lease(state: &DataPlane, settings: &PushSettings, want: u32, stop: &CancellationToken) -> Leased {
    let lease_ms = settings.lease_ms();
    let mut got = match longpoll::consume_until(state, settings.queue, want, lease_ms, POLL, Some(stop)).await {
        Ok(consumed) if consumed.paused => return Leased::Paused,
        Ok(consumed) if consumed.deliveries.is_empty() => return Leased::Nothing,
        Ok(consumed) => consumed.deliveries,
        Err(err) => return Leased::Failed(err),
    };
    let fill_until = Instant::now() + settings.fill_wait();
    while (got.len() as u32) < want {
        let left = fill_until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let more = want - got.len() as u32;
        match longpoll::consume_until(state, settings.queue, more, lease_ms, left, Some(stop)).await {
            Ok(more) if !more.deliveries.is_empty() => got.extend(more.deliveries),
            // Paused, empty, failing or stopped: send (or hand back) what we hold.
            _ => break,
        }
    }
    Leased::Messages(got)
}

/// Returns deliveries a stopped dispatcher will not send, uncounted, so the queue's new target (or
/// its consumers, once push is off) gets them at once with the attempts they had. If Redis cannot
/// take them back, their leases run out and they come back later: nothing is lost.
pub(super) async fn hand_back(state: &DataPlane, settings: &PushSettings, deliveries: &[Delivery]) {
    let receipts: Vec<_> = deliveries.iter().map(|d| message::receipt(settings, d)).collect();
    if let Err(err) = state.engine.release(settings.queue, &receipts, now_ms()).await {
        tracing::warn!(error = %err, queue = %settings.queue, "cannot hand back leased push deliveries");
    }
}
