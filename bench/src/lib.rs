//! `aqs-bench`: the AQS load generator. It drives the real service over loopback with a lean
//! HTTP/1.1 client and measures, in one run, each scenario of DESIGN.md's Performance section
//! next to what it is compared with: a floor server (a bare axum route doing one EVALSHA, in
//! `floor`) and BullMQ on the same Redis (its results are read from `bench.mjs`'s JSON lines).
//!
//! `run` takes the service URL, the Redis URL and the aqs pid; it makes its own member and queues
//! through `/api/v1`. `smoke` runs every scenario for about a second, for the end-to-end tests.
//! `infra/bench` starts the service and BullMQ and calls the binary (`src/main.rs`).

pub mod api;
pub mod bullmq;
pub mod client;
pub mod floor;
pub mod latency;
pub mod load;
pub mod monitor;
pub mod proc_status;
pub mod redis_stats;
pub mod scale;
pub mod scenario_result;
pub mod scenarios;
pub mod schedule;
pub mod table;

pub use bullmq::BullmqResults;
pub use scale::Scale;
pub use scenario_result::{ScenarioResult, Target};

use anyhow::Context;
use tokio::net::TcpListener;

#[derive(Debug, Clone)]
pub struct Options {
    /// The AQS service, `http://127.0.0.1:PORT`.
    pub base_url: String,
    /// The Redis AQS uses (read for commandstats and memory; the floor writes there too).
    pub redis_url: String,
    /// The `aqs` process, for its resident memory; without it the RSS figure is skipped.
    pub aqs_pid: Option<u32>,
    /// The floor server; without it the single-publish ratio is null.
    pub floor_url: Option<String>,
    /// BullMQ's results from this run; without them the BullMQ ratios are null.
    pub bullmq: Option<BullmqResults>,
    pub scale: Scale,
    /// Run only these scenario groups (`publish_single`, `publish_batch`, `consume_ack`, `wakeup`,
    /// `memory`, `idle_polls`); all when empty.
    pub only: Vec<String>,
}

/// Runs every scenario in turn; a scenario that fails gives results with `error` set and the run
/// goes on. Fails only if the bench cannot set itself up (no service, no sign-up).
pub async fn run(options: &Options) -> anyhow::Result<Vec<ScenarioResult>> {
    let mut ctx = scenarios::Ctx::new(options).await?;
    let wanted = |name: &str| options.only.is_empty() || options.only.iter().any(|o| o == name);
    let mut results = Vec::new();
    if wanted("publish_single") {
        results.extend(scenarios::publish_single::run(&mut ctx).await);
    }
    if wanted("publish_batch") {
        results.extend(scenarios::publish_batch::run(&mut ctx).await);
    }
    if wanted("consume_ack") {
        results.extend(scenarios::consume_ack::run(&mut ctx).await);
    }
    if wanted("wakeup") {
        results.extend(scenarios::wakeup::run(&mut ctx).await);
    }
    if wanted("memory") {
        results.extend(scenarios::memory::run(&mut ctx).await);
    }
    if wanted("idle_polls") {
        results.extend(scenarios::idle_polls::run(&mut ctx).await);
    }
    Ok(results)
}

/// Every scenario except BullMQ, about a second each with small counts (200 idle long polls
/// instead of 10,000), against a running `aqs serve` at `base_url` on `redis_url`. Starts its own
/// floor server in this process and makes its own member and queues. Fails if any scenario
/// could not run; asserts nothing about timings.
pub async fn smoke(base_url: &str, redis_url: &str, aqs_pid: u32) -> anyhow::Result<Vec<ScenarioResult>> {
    let listener = TcpListener::bind("127.0.0.1:0").await.context("cannot bind the floor server")?;
    let floor_url = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let redis = redis_url.to_owned();
    let floor = tokio::spawn(async move {
        floor::serve(listener, &redis, async {
            // Either a stop or a dropped sender ends the floor.
            stopped.await.ok();
        })
        .await
    });
    let options = Options {
        base_url: base_url.to_owned(),
        redis_url: redis_url.to_owned(),
        aqs_pid: Some(aqs_pid),
        floor_url: Some(floor_url),
        bullmq: None,
        scale: Scale::smoke(),
        only: Vec::new(),
    };
    let results = run(&options).await;
    stop.send(()).ok();
    floor.await.context("floor server panicked")??;
    let results = results?;
    let failed: Vec<String> =
        results.iter().filter_map(|r| r.error.as_ref().map(|e| format!("{}: {e}", r.scenario))).collect();
    anyhow::ensure!(failed.is_empty(), "bench scenarios failed:\n{}", failed.join("\n"));
    Ok(results)
}
