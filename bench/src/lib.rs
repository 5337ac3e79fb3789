//! `aqs-bench`: the AQS load generator. It drives the real service over loopback with a lean
//! HTTP/1.1 client and measures, in one run, each scenario of `docs/performance.md`
//! next to what it is compared with: a floor server (a bare axum route doing one EVALSHA, in
//! `floor`), BullMQ on the same Redis (its results are read from `bench.mjs`'s JSON lines), and
//! RabbitMQ and NATS JetStream, each on a private server this process starts for its own
//! scenarios and stops after (`peers`).
//!
//! `run` takes the service URL, the Redis URL and the aqs pid; it makes its own member and queues
//! through `/api/v1`. `smoke` runs every scenario for about a second, for the end-to-end tests.
//! `infra/bench` starts the service and BullMQ and calls the binary (`src/main.rs`).

pub mod api;
pub mod bullmq;
pub mod client;
pub mod floor;
pub mod handler;
pub mod latency;
pub mod load;
pub mod machine;
pub mod monitor;
pub mod peers;
pub mod proc_status;
pub mod push_api;
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
    /// Run only these scenario groups (see `GROUPS`); all when empty.
    pub only: Vec<String>,
    /// A data-plane process on the same Redis with `AQS_REDIS_REPLICA_ACKS=1`, and an empty Redis
    /// the `replica_acks` group attaches as a replica for its windows; without both it is skipped.
    pub acks_url: Option<String>,
    /// That process's pid, stopped once the group is done.
    pub acks_pid: Option<u32>,
    pub replica_redis_url: Option<String>,
}

/// The scenario groups, in the order they run. The peer groups come last: they compare with the
/// AQS figures of the same run.
pub const GROUPS: [&str; 11] = [
    "publish_single",
    "publish_batch",
    "consume_ack",
    "wakeup",
    "end_to_end",
    "memory",
    "idle_polls",
    "replica_acks",
    "push",
    "rabbitmq",
    "nats",
];

/// The AQS groups a peer group is compared with; `--only rabbitmq` runs them too.
const COMPARED_WITH_PEERS: [&str; 5] = ["publish_single", "publish_batch", "consume_ack", "end_to_end", "memory"];

/// Whether group `name` runs under `only` (every group when it is empty).
pub fn wanted(only: &[String], name: &str) -> bool {
    let named = |n: &str| only.iter().any(|o| o == n);
    only.is_empty() || named(name) || (COMPARED_WITH_PEERS.contains(&name) && (named("rabbitmq") || named("nats")))
}

/// Runs every scenario in turn, each group that ran followed by its `<group>_cpu_stolen` row
/// (`machine`); a scenario that fails gives results with `error` set and the run goes on. Fails
/// only if the bench cannot set itself up (no service, no sign-up).
pub async fn run(options: &Options) -> anyhow::Result<Vec<ScenarioResult>> {
    if let Some(unknown) = options.only.iter().find(|o| !GROUPS.contains(&o.as_str())) {
        anyhow::bail!("unknown scenario group {unknown}; the groups are {}", GROUPS.join(", "));
    }
    let mut ctx = scenarios::Ctx::new(options).await?;
    let mut results = Vec::new();
    for group in GROUPS.iter().filter(|g| wanted(&options.only, g)) {
        let watch = machine::Watch::start(&options.redis_url).await;
        let rows = match *group {
            "publish_single" => scenarios::publish_single::run(&mut ctx).await,
            "publish_batch" => scenarios::publish_batch::run(&mut ctx).await,
            "consume_ack" => scenarios::consume_ack::run(&mut ctx).await,
            "wakeup" => scenarios::wakeup::run(&mut ctx).await,
            "end_to_end" => scenarios::end_to_end::run(&mut ctx).await,
            "memory" => scenarios::memory::run(&mut ctx).await,
            "idle_polls" => scenarios::idle_polls::run(&mut ctx).await,
            "replica_acks" => scenarios::replica_acks::run(&mut ctx).await,
            "push" => scenarios::push::run(&mut ctx).await,
            "rabbitmq" => scenarios::vs_peers::rabbitmq(&mut ctx).await,
            "nats" => scenarios::vs_peers::jetstream(&mut ctx).await,
            other => unreachable!("group {other} is in GROUPS but has no scenario"),
        };
        // A group that was skipped (`replica_acks` without its process) has nothing to explain.
        let ran = !rows.is_empty();
        results.extend(rows);
        if ran {
            results.extend(watch.finish(group).await);
        }
        if let Err(err) = ctx.delete_queues().await {
            scenarios::progress(&format!("could not delete the {group} queues: {err:#}"));
        }
    }
    Ok(results)
}

/// Every scenario except BullMQ, RabbitMQ and JetStream included, about a second each with small
/// counts (200 idle long polls instead of 10,000), against a running `aqs serve` at `base_url` on
/// `redis_url`, started with `AQS_OPERATOR_EMAILS` naming `push_api::OPERATOR_EMAIL` and
/// `AQS_PUSH_ALLOW_PRIVATE_NETWORKS=true` (the push scenarios deliver to a handler on loopback). Starts its own
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
        acks_url: None,
        acks_pid: None,
        replica_redis_url: None,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn only(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn every_group_runs_without_only() {
        assert!(GROUPS.iter().all(|g| wanted(&[], g)));
    }

    #[test]
    fn a_peer_group_brings_the_aqs_groups_it_compares_with() {
        let o = only(&["nats"]);
        let run: Vec<&str> = GROUPS.iter().copied().filter(|g| wanted(&o, g)).collect();
        assert_eq!(run, ["publish_single", "publish_batch", "consume_ack", "end_to_end", "memory", "nats"]);
        let o = only(&["wakeup", "memory"]);
        let run: Vec<&str> = GROUPS.iter().copied().filter(|g| wanted(&o, g)).collect();
        assert_eq!(run, ["wakeup", "memory"]);
    }
}
