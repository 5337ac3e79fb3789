//! Push delivery: the platform calls the queue's HTTP handler, one message or one batch (in the
//! Worker-trigger shape) per request, as `docs/push-delivery.md` describes.
//!
//! The control plane projects each push target into `NS:{q:ID}:push` and lists the queue in
//! `NS:push`. Every data-plane replica runs one supervisor ([`spawn`]) that reads that set about
//! once a second and keeps one dispatcher per pushed queue running with the current settings
//! (restarted when they change, stopped when push is). The steps of a delivery, each its own module
//! so a test can drive one:
//!
//! - `settings`: the projected record, parsed; the lease and timeout it implies.
//! - `dispatcher`: lease (engine consume + long poll) → hand out deliveries under a concurrency cap;
//!   `message_flow`: message mode's leasing ahead of its requests.
//! - `message` / `batch`: build the request body; apply the verdict to the leases (ack, nack with a
//!   delay, or dead-letter at once through the engine's `bury`). `settle`: message mode's answers
//!   applied and logged many per round trip, each still with its own POST and log line.
//! - `deliver`: one signed HTTP attempt → `Answer`. `sign`: Standard Webhooks signatures.
//! - `outcome`: `Answer` → `Verdict` (ack / retry / dead). `backoff`: Retry-After and backoff.
//! - `ssrf`: the connect-time address guard. `log`: the last 20 outcomes per queue.
//!
//! Guarantees: at-least-once, as for consumers. A message is leased by one dispatcher at a time
//! (the engine's lease), so replicas never send it concurrently; a replica that dies mid-request
//! leaves a lease that runs out after the timeout plus a margin, and the message is sent again with
//! `attempts` one higher. A paused queue leases nothing, so it sends nothing beyond what was already
//! leased (message mode's few leased ahead, sent within 2.5 s or handed back).

mod backoff;
pub mod batch;
mod connect;
pub mod deliver;
pub mod dispatcher;
mod keep_alive;
mod log;
pub mod message;
mod message_flow;
pub mod outcome;
pub mod settings;
pub mod settle;
pub mod sign;
pub mod ssrf;

use crate::state::DataPlane;
use aqs_core::ids::QueueId;
use aqs_core::projection::PushRecord;
use settings::PushSettings;
use std::collections::HashMap;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

/// How often the supervisor re-reads the push targets: the delay before a change takes effect.
const RECONCILE_EVERY: Duration = Duration::from_secs(1);

/// A running dispatcher: the record it was started with, and its stop signal.
type Running = HashMap<QueueId, (PushRecord, CancellationToken)>;

/// Starts the supervisor of this replica's dispatchers.
pub fn spawn(state: DataPlane, shutdown: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut running = Running::new();
        let mut tick = tokio::time::interval(RECONCILE_EVERY);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut failing = false;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tick.tick() => {}
            }
            match settings::load_all(&mut state.engine.conn(), state.engine.keys()).await {
                Ok(records) => {
                    failing = false;
                    reconcile(&state, &mut running, records, &shutdown);
                }
                Err(err) if !failing => {
                    tracing::warn!(error = %err, "cannot read the push targets; retrying every second");
                    failing = true;
                }
                Err(_) => {}
            }
        }
        for (_, (_, stop)) in running.drain() {
            stop.cancel();
        }
    })
}

/// Stops the dispatchers whose target is gone or changed, and starts the missing ones.
fn reconcile(
    state: &DataPlane,
    running: &mut Running,
    records: HashMap<QueueId, PushRecord>,
    shutdown: &CancellationToken,
) {
    running.retain(|queue, (record, stop)| {
        let current = records.get(queue) == Some(record);
        if !current {
            stop.cancel();
        }
        current
    });
    for (queue, record) in records {
        if running.contains_key(&queue) {
            continue;
        }
        let Some(settings) = PushSettings::new(queue, record.clone()) else {
            tracing::warn!(%queue, "the push target's URL or secret is unusable; not dispatching");
            // Remembered, so the warning is not repeated every second until the record changes.
            running.insert(queue, (record, CancellationToken::new()));
            continue;
        };
        let stop = shutdown.child_token();
        tokio::spawn(dispatcher::run(state.clone(), settings, stop.clone()));
        running.insert(queue, (record, stop));
    }
}
