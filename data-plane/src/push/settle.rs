//! Message mode's settlements, many per script call. Each delivery still gets its own POST, its
//! own verdict and its own log line; what is shared is the trip to Redis afterwards: one settler
//! task per dispatcher takes every answer that arrived while it was busy and acknowledges them in
//! one `ack` script call (with each lease's hint, so the script reads no entry), returns its
//! retries in one `nack` call per reason (each message with its own backoff) and dead-letters the
//! refused ones in one call per reason, then writes their log lines in one pipeline.
//!
//! A delivery keeps its share of the dispatcher's outstanding bound until it is settled, so a
//! settler that falls behind stops the leasing; it is settled inside its lease (the lease margin
//! covers the wait here, a few milliseconds at most). If Redis cannot take a settlement, the lease
//! runs out and the message comes back, one attempt higher: nothing is lost.

use super::deliver::Attempt;
use super::log;
use super::message::{nack_outcome, receipt, record, retry_delay};
use super::outcome::Verdict;
use super::settings::PushSettings;
use crate::state::DataPlane;
use aqs_core::push::{DeliveryOutcome, DeliveryRecord, LOG_LEN};
use aqs_core::receipt::{AckHint, Receipt};
use aqs_core::time::now_ms;
use aqs_engine::Delivery;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, mpsc};

/// Most answers settled in one round: bounds one ack script's arguments.
const MAX_PER_ROUND: usize = 256;

/// One answered delivery waiting to be applied to its lease.
pub struct Settlement {
    pub delivery: Delivery,
    pub attempt: Attempt,
    pub verdict: Verdict,
    /// The delivery's share of the outstanding bound, released once the settlement is applied.
    pub outstanding: OwnedSemaphorePermit,
}

/// Hands answered deliveries to the dispatcher's settler task, which runs until every `Settler`
/// clone is dropped (the dispatcher and its in-flight deliveries), then settles what is left.
#[derive(Clone)]
pub struct Settler {
    tx: mpsc::UnboundedSender<Settlement>,
}

impl Settler {
    pub fn spawn(state: DataPlane, settings: Arc<PushSettings>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(state, settings, rx));
        Self { tx }
    }

    pub fn settle(&self, settlement: Settlement) {
        // The receiver lives as long as any sender, so this cannot fail; if it ever did, the
        // lease would run out and the message come back.
        self.tx.send(settlement).ok();
    }
}

async fn run(state: DataPlane, settings: Arc<PushSettings>, mut rx: mpsc::UnboundedReceiver<Settlement>) {
    let mut round = Vec::with_capacity(MAX_PER_ROUND);
    while rx.recv_many(&mut round, MAX_PER_ROUND).await > 0 {
        settle_round(&state, &settings, &round).await;
        // Dropping the round releases its outstanding permits: the dispatcher may lease again.
        round.clear();
    }
}

/// Applies every verdict of a round to its lease, then logs them, oldest answer first.
pub async fn settle_round(state: &DataPlane, settings: &PushSettings, round: &[Settlement]) {
    let mut outcomes: Vec<Option<DeliveryOutcome>> = vec![None; round.len()];
    let acks: Vec<usize> = (0..round.len()).filter(|&i| round[i].verdict == Verdict::Ack).collect();
    if !acks.is_empty() {
        let receipts: Vec<_> = acks.iter().map(|&i| receipt(settings, &round[i].delivery)).collect();
        let hints: Vec<Option<AckHint>> = acks.iter().map(|&i| Some(round[i].delivery.hint)).collect();
        match state.engine.ack_hinted(settings.queue, &receipts, &hints, now_ms()).await {
            Ok(acked) => {
                for (&i, ok) in acks.iter().zip(acked) {
                    outcomes[i] = Some(if ok { DeliveryOutcome::Acked } else { DeliveryOutcome::LeaseLost });
                }
            }
            Err(err) => tracing::warn!(
                error = %err, queue = %settings.queue, deliveries = acks.len(),
                "cannot acknowledge push deliveries; their leases will run out"
            ),
        }
    }
    settle_failures(state, settings, round, &mut outcomes).await;
    // Only the newest `LOG_LEN` lines would survive the log's trim: build no others.
    let mut records: Vec<DeliveryRecord> = round
        .iter()
        .zip(outcomes)
        .rev()
        .filter_map(|(s, outcome)| {
            let id = s.delivery.message.to_string();
            Some(record(&s.attempt, &settings.record.handler_url, &id, 1, outcome?, &s.verdict))
        })
        .take(LOG_LEN)
        .collect();
    records.reverse();
    log::record_all(state, settings.queue, &records).await;
}

/// Failed deliveries of a round that share what one script call takes once: retried or
/// dead-lettered, and the reason. Each member is a delivery's index in the round and, for a retry,
/// its own delay.
struct Failures<'a> {
    dead: bool,
    reason: &'a str,
    members: Vec<(usize, u64)>,
}

/// Applies the round's retries (one `nack_each` per reason, each message with its own backoff) and
/// dead letters (one `bury` per reason).
async fn settle_failures(
    state: &DataPlane,
    settings: &PushSettings,
    round: &[Settlement],
    outcomes: &mut [Option<DeliveryOutcome>],
) {
    let mut groups: Vec<Failures> = Vec::new();
    for (i, s) in round.iter().enumerate() {
        let (dead, reason, delay) = match &s.verdict {
            Verdict::Ack => continue,
            Verdict::Retry { after, reason } => (false, reason.as_str(), retry_delay(&s.delivery, *after)),
            Verdict::Dead { reason } => (true, reason.as_str(), Duration::ZERO),
        };
        let member = (i, delay.as_millis() as u64);
        match groups.iter_mut().find(|g| g.dead == dead && g.reason == reason) {
            Some(group) => group.members.push(member),
            None => groups.push(Failures { dead, reason, members: vec![member] }),
        }
    }
    let now = now_ms();
    for group in groups {
        let receipts = group.members.iter().map(|&(i, delay)| (receipt(settings, &round[i].delivery), delay));
        let settled = if group.dead {
            let receipts: Vec<Receipt> = receipts.map(|(receipt, _)| receipt).collect();
            state.engine.bury(settings.queue, &receipts, group.reason, now).await
        } else {
            state.engine.nack_each(settings.queue, &receipts.collect::<Vec<_>>(), group.reason, now).await
        };
        match settled {
            Ok(results) => {
                for (&(i, _), result) in group.members.iter().zip(results) {
                    outcomes[i] = Some(nack_outcome(result));
                }
            }
            Err(err) => tracing::warn!(
                error = %err, queue = %settings.queue, deliveries = group.members.len(),
                "cannot settle failed push deliveries; their leases will run out"
            ),
        }
    }
}
