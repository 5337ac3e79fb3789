//! Writes the ledger (`engine::ledger`: single publishes' counts and stored bytes, storage leases)
//! to Redis every `EVERY`, so other replicas and the console see them within that. Redis errors are
//! logged once per outage; the ledger waits for the next flush. `aqs serve` flushes once more
//! after the last connection closed, giving the leases back. Each successful flush marks the
//! flush lag (`aqs_ledger_flush_lag_seconds`).

use crate::state::DataPlane;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

const EVERY: Duration = Duration::from_millis(200);

pub fn spawn(state: DataPlane, shutdown: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut failing = false;
        aqs_core::metrics::LEDGER_FLUSH.caught_up();
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            let flushed = state.engine.flush_ledger(false).await;
            if flushed.is_ok() {
                aqs_core::metrics::LEDGER_FLUSH.caught_up();
            }
            match flushed {
                Ok(()) if failing => {
                    tracing::info!("Redis answers again; the publish ledger is written");
                    failing = false;
                }
                Ok(()) => {}
                Err(err) if !failing => {
                    tracing::warn!(error = %err, "cannot write the publish ledger; keeping it for the next try");
                    failing = true;
                }
                Err(_) => {}
            }
        }
    })
}
