//! Message mode's dispatcher: a leaser that keeps leased messages ready ahead of the requests, and
//! a sender that POSTs each under the concurrency cap (`docs/push-delivery.md`).
//!
//! The cap counts requests in flight, as the target's `concurrency` is defined: a request's permit
//! is held from the POST to its answer, not through the trip to Redis that settles it. Leasing,
//! sending and settling overlap instead of taking turns, so a free place is filled from messages
//! already leased while the next lease and the previous answers' settlement are under way.
//!
//! Two bounds keep the leases honest:
//! - at most `OUTSTANDING_PER_PLACE × concurrency` messages are leased and not yet settled (sent or
//!   waiting to be), so a settler that falls behind stops the leasing rather than piling up leases.
//!   The bound covers the two trips to Redis around each delivery as well as the delivery: with
//!   two per place (one being sent, one ready), the leases and settlements in flight took the
//!   places' share and a drained queue kept them waiting for messages (41.6k–42.5k/s against
//!   45.4k–48.5k/s with four, the builds taking turns, 2026-12-06; docs/performance.md);
//! - a leased message that waited longer than `STALE_AFTER` for a free place (a slow handler holds
//!   every place) goes back to the queue uncounted instead of being sent, so every POST starts with
//!   at least the handler's timeout plus half the margin left on its lease.

use super::dispatcher::{Leasing, hand_back};
use super::message;
use super::settings::{LEASE_MARGIN, PushSettings};
use super::settle::Settler;
use crate::state::DataPlane;
use aqs_core::limits::CONSUME_MAX_MESSAGES;
use aqs_engine::Delivery;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Messages leased and not yet settled, per place of the concurrency cap: one being leased, one
/// ready, one being sent, one being settled.
const OUTSTANDING_PER_PLACE: usize = 4;
/// How long a leased message may wait for a free place before it goes back to the queue.
const STALE_AFTER: Duration = Duration::from_millis(LEASE_MARGIN.as_millis() as u64 / 2);

/// A leased message waiting for a free place, with its share of the outstanding bound.
struct Ready {
    delivery: Delivery,
    leased_at: Instant,
    outstanding: OwnedSemaphorePermit,
}

/// Runs message mode until `stop`; then hands back what was leased and not sent.
pub async fn run(state: DataPlane, settings: Arc<PushSettings>, settler: Settler, stop: CancellationToken) {
    let places = Arc::new(Semaphore::new(settings.concurrency()));
    let outstanding = Arc::new(Semaphore::new(settings.concurrency() * OUTSTANDING_PER_PLACE));
    let (ready_tx, mut ready) = mpsc::unbounded_channel();
    let leaser = tokio::spawn(keep_leased(state.clone(), settings.clone(), outstanding, ready_tx, stop.clone()));
    loop {
        let place = tokio::select! {
            place = places.clone().acquire_owned() => place.expect("the semaphore is never closed"),
            _ = stop.cancelled() => break,
        };
        let next = tokio::select! {
            next = ready.recv() => next,
            _ = stop.cancelled() => break,
        };
        let Some(Ready { delivery, leased_at, outstanding }) = next else { break };
        if leased_at.elapsed() > STALE_AFTER {
            hand_back(&state, &settings, std::slice::from_ref(&delivery)).await;
            continue;
        }
        let (state, settings, settler) = (state.clone(), settings.clone(), settler.clone());
        tokio::spawn(async move {
            message::deliver(&state, &settings, delivery, &settler, place, outstanding).await;
        });
    }
    // The leaser stops at `stop` too; once it has, nothing more arrives and the rest goes back.
    leaser.await.ok();
    let mut left = Vec::new();
    while let Ok(r) = ready.try_recv() {
        left.push(r.delivery);
    }
    if !left.is_empty() {
        hand_back(&state, &settings, &left).await;
    }
}

/// Leases as many messages as the outstanding bound allows (at most a consume's maximum per call)
/// and queues them for the sender, until `stop`.
async fn keep_leased(
    state: DataPlane,
    settings: Arc<PushSettings>,
    outstanding: Arc<Semaphore>,
    ready: mpsc::UnboundedSender<Ready>,
    stop: CancellationToken,
) {
    let mut leasing = Leasing::default();
    loop {
        let first = tokio::select! {
            permit = outstanding.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
            _ = stop.cancelled() => break,
        };
        let mut held = vec![first];
        while held.len() < CONSUME_MAX_MESSAGES as usize {
            match outstanding.clone().try_acquire_owned() {
                Ok(permit) => held.push(permit),
                Err(_) => break,
            }
        }
        // Not raced against `stop` (a dropped consume would strand what it leased): `lease` stops
        // waiting on its own, and the sender hands back whatever is queued once this returns.
        let Some(deliveries) = leasing.next(&state, &settings, held.len() as u32, &stop).await else { continue };
        let leased_at = Instant::now();
        for (delivery, outstanding) in deliveries.into_iter().zip(held) {
            // The sender outlives this task, so the queue is open.
            ready.send(Ready { delivery, leased_at, outstanding }).ok();
        }
    }
}
