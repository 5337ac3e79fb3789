//! The sweeper: about once a second, for every live queue (`NS:queues`), one `sweep.lua` call
//! that promotes due delayed messages and dead-letters expired leases that used their last
//! attempt; every ten minutes the same call also prunes old daily counters. Every replica runs
//! one; concurrent sweeps are harmless (each call is atomic and idempotent). Redis errors are
//! logged and the next tick tries again.
//!
//! A pass also yields each queue's depth and dead letters (the sweep script reads them), from
//! which the per-queue metrics of the deepest queues are set (`aqs_core::metrics::queue_depths`),
//! and marks the sweeper's lag.

use crate::state::DataPlane;
use aqs_core::ids::QueueId;
use aqs_core::metrics;
use aqs_core::time::now_ms;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

const TICK: Duration = Duration::from_secs(1);
const PRUNE_EVERY: Duration = Duration::from_secs(600);

pub fn spawn(state: DataPlane, shutdown: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut last_prune: Option<Instant> = None;
        metrics::SWEEPER.caught_up();
        // Logged once per outage, not once a second.
        let mut failing = false;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            let prune = last_prune.is_none_or(|at| at.elapsed() >= PRUNE_EVERY);
            match sweep_all(&state, prune).await {
                Ok(()) => {
                    if prune {
                        last_prune = Some(Instant::now());
                    }
                    if failing {
                        tracing::info!("sweeper recovered");
                        failing = false;
                    }
                }
                Err(err) if !failing => {
                    tracing::warn!(error = format!("{err:#}"), "sweep failed; retrying every tick");
                    failing = true;
                }
                Err(err) => tracing::debug!(error = %err, "sweep failed again"),
            }
        }
    })
}

async fn sweep_all(state: &DataPlane, prune: bool) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut conn = state.engine.conn();
    let ids: Vec<String> = redis::cmd("SMEMBERS").arg(state.engine.keys().queues()).query_async(&mut conn).await?;
    let mut depths = Vec::new();
    for id in ids {
        let Some(queue) = QueueId::parse(&id) else { continue };
        let outcome = state.engine.sweep(queue, now_ms(), prune).await.map_err(|e| anyhow::anyhow!("{e}"))?;
        let Some(outcome) = outcome else { continue };
        if outcome.dead_lettered > 0 {
            tracing::debug!(%queue, dead_lettered = outcome.dead_lettered, "expired leases dead-lettered");
        }
        if metrics::enabled() && outcome.depth + outcome.dead_letters > 0 {
            let slug = if outcome.slug.is_empty() { id } else { outcome.slug };
            depths.push((slug, outcome.depth, outcome.dead_letters));
        }
    }
    metrics::queue_depths(depths);
    metrics::swept(started.elapsed());
    Ok(())
}
