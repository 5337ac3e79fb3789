//! Message mode's settlements, many per script call. Each delivery still gets its own POST, its
//! own verdict and its own log line; what is shared is the trip to Redis afterwards: one settler
//! task per dispatcher takes every answer that arrived while it was busy and acknowledges them in
//! one `ack` script call (with each lease's hint, so the script reads no entry), then writes their
//! log lines in one pipeline. Retries and dead letters, rarer and each with its own delay or reason,
//! go one script call each, as before.
//!
//! A delivery keeps its share of the dispatcher's outstanding bound until it is settled, so a
//! settler that falls behind stops the leasing; it is settled inside its lease (the lease margin
//! covers the wait here, a few milliseconds at most). If Redis cannot take a settlement, the lease
//! runs out and the message comes back, one attempt higher: nothing is lost.

use super::deliver::Attempt;
use super::log;
use super::message::{apply, receipt, record};
use super::outcome::Verdict;
use super::settings::PushSettings;
use crate::state::DataPlane;
use aqs_core::push::{DeliveryOutcome, DeliveryRecord, LOG_LEN};
use aqs_core::receipt::AckHint;
use aqs_core::time::now_ms;
use aqs_engine::Delivery;
use std::sync::Arc;
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
    for (i, s) in round.iter().enumerate().filter(|(_, s)| s.verdict != Verdict::Ack) {
        match apply(state, settings, &s.delivery, &s.verdict).await {
            Ok(outcome) => outcomes[i] = Some(outcome),
            Err(err) => tracing::warn!(
                error = %err, queue = %settings.queue, message = %s.delivery.message,
                "cannot settle a push delivery"
            ),
        }
    }
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
