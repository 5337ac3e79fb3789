//! The cost of replica acknowledgements: single and batched publish through a data-plane process
//! with `AQS_REDIS_REPLICA_ACKS=1`, beside the same publish through the main service (no replica
//! acks), with a replica attached to their Redis for both sides, in alternating windows.
//!
//! `infra/bench` starts the second process and an empty Redis; this scenario makes that Redis a
//! replica of the main one for its own windows only (`REPLICAOF`, then `REPLICAOF NO ONE`), so the
//! other scenarios run without the cost of feeding a replica. Without them (`--acks-url`,
//! `--replica-redis`) the group is skipped. Once the replica is detached, the second process is
//! stopped (`--acks-pid`): it runs push dispatchers like any data-plane process, and with no
//! replica left it would lease the push scenarios' messages and hold them, unconfirmed, until
//! their leases ran out.

use super::{Ctx, progress};
use crate::api::sample_body;
use crate::client::{Call, Target as Service};
use crate::load::{Tally, Window, closed_loop};
use crate::scenario_result::{ScenarioResult, Target};
use hyper::StatusCode;
use std::time::{Duration, Instant};

pub async fn run(ctx: &mut Ctx) -> Vec<ScenarioResult> {
    let (Some(acks), Some(replica)) = (ctx.acks.clone(), ctx.replica_redis_url.clone()) else {
        progress("replica acks: no --acks-url / --replica-redis; skipped");
        return Vec::new();
    };
    let attached = attach(&replica, &ctx.redis_url).await;
    let rows = match attached {
        Ok(()) => measure(ctx, &acks).await,
        Err(err) => Err(err),
    };
    if let Err(err) = detach(&replica).await {
        progress(&format!("replica acks: could not detach the replica: {err:#}"));
    }
    if let Some(pid) = ctx.acks_pid
        && let Err(err) = stop(pid).await
    {
        progress(&format!("replica acks: could not stop the process with replica acks: {err:#}"));
    }
    rows.unwrap_or_else(|err| vec![ScenarioResult::failed("publish_single_replica_acks", "msgs/s", &err)])
}

async fn measure(ctx: &mut Ctx, acks: &Service) -> anyhow::Result<Vec<ScenarioResult>> {
    let s = ctx.scale.clone();
    let body = sample_body();
    let single = ctx.queue("acks-single", s.single_connections).await?;
    let single_calls =
        (0..s.single_connections).map(|i| single.publish(i, &body)).collect::<anyhow::Result<Vec<_>>>()?;
    let batch = ctx.queue("acks-batch", s.batch_connections).await?;
    let batch_calls = (0..s.batch_connections)
        .map(|i| batch.publish_batch(i, &body, super::publish_batch::BATCH))
        .collect::<anyhow::Result<Vec<_>>>()?;

    let rounds = s.publish_rounds.max(1);
    let mut single_rates =
        abba(ctx, acks, &single_calls, s.publish / rounds as u32, rounds, 1, "single publish").await?;
    let per_batch = super::publish_batch::BATCH as u64;
    let mut batch_rates =
        abba(ctx, acks, &batch_calls, s.batch / rounds as u32, rounds, per_batch, "batch publish").await?;
    Ok(vec![
        single_rates.row(
            "publish_single_replica_acks",
            "the same publish without replica acks",
            0.7,
            &format!("{} connections, {rounds} alternating rounds", s.single_connections),
        ),
        batch_rates.row(
            "publish_batch_replica_acks",
            "the same batches without replica acks",
            0.9,
            &format!("{} connections, batches of 100, {rounds} alternating rounds", s.batch_connections),
        ),
    ])
}

/// Both sides' tallies over every round.
#[derive(Default)]
struct Rates {
    plain: Tally,
    plain_s: f64,
    acks: Tally,
    acks_s: f64,
}

impl Rates {
    fn plain_rate(&self) -> f64 {
        self.plain.msgs as f64 / self.plain_s.max(f64::EPSILON)
    }

    fn acks_rate(&self) -> f64 {
        self.acks.msgs as f64 / self.acks_s.max(f64::EPSILON)
    }

    /// The row: the rate with acks against the rate without, and both sides' latencies.
    fn row(&mut self, scenario: &str, baseline: &str, target: f64, what: &str) -> ScenarioResult {
        let ms = |ms: Option<f64>| ms.map_or("-".to_owned(), |ms| format!("{ms:.2}"));
        let (p50, p99) = self.acks.latencies.p50_p99_ms();
        let (base_p50, base_p99) = self.plain.latencies.p50_p99_ms();
        ScenarioResult::new(scenario, self.acks_rate(), "msgs/s")
            .compared(baseline, Some(self.plain_rate()))
            .latency(p50, p99)
            .target(Target::RatioAtLeast(target))
            .note(format!(
                "{what}, a replica attached to both sides; without acks p50/p99 {}/{} ms{}",
                ms(base_p50),
                ms(base_p99),
                self.acks.error_note()
            ))
    }
}

/// Rounds of one window per side, the order swapped every round.
async fn abba(
    ctx: &Ctx,
    acks: &Service,
    calls: &[Call],
    slice: Duration,
    rounds: usize,
    per_request: u64,
    what: &str,
) -> anyhow::Result<Rates> {
    let mut rates = Rates::default();
    for round in 0..rounds {
        let acks_first = round % 2 == 1;
        for with_acks in [acks_first, !acks_first] {
            let (service, name) = if with_acks { (acks, "with replica acks") } else { (&ctx.target, "without") };
            progress(&format!("aqs {name}: {what}, {slice:?} (round {})", round + 1));
            let window = Window::after(ctx.scale.warmup, slice);
            let tally = closed_loop(service, calls.to_vec(), window, StatusCode::CREATED, per_request).await;
            tally.ensure_progress(name)?;
            if with_acks {
                rates.acks_s += window.seconds();
                rates.acks.merge(tally);
            } else {
                rates.plain_s += window.seconds();
                rates.plain.merge(tally);
            }
        }
    }
    Ok(rates)
}

/// Makes `replica` a replica of `primary` and waits until it streams from it.
async fn attach(replica: &str, primary: &str) -> anyhow::Result<()> {
    let primary = url::Url::parse(primary)?;
    let (host, port) = (primary.host_str().unwrap_or("127.0.0.1").to_owned(), primary.port().unwrap_or(6379));
    let mut conn = redis::Client::open(replica)?.get_multiplexed_async_connection().await?;
    redis::cmd("REPLICAOF").arg(&host).arg(port).query_async::<()>(&mut conn).await?;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let info: String = redis::cmd("INFO").arg("replication").query_async(&mut conn).await?;
        if info.contains("master_link_status:up") && !info.contains("master_sync_in_progress:1") {
            return Ok(());
        }
        anyhow::ensure!(Instant::now() < deadline, "the replica did not sync within 120 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn detach(replica: &str) -> anyhow::Result<()> {
    let mut conn = redis::Client::open(replica)?.get_multiplexed_async_connection().await?;
    redis::cmd("REPLICAOF").arg("NO").arg("ONE").query_async::<()>(&mut conn).await?;
    redis::cmd("FLUSHALL").query_async::<()>(&mut conn).await?;
    Ok(())
}

/// Sends `pid` SIGTERM and waits until it has exited.
async fn stop(pid: u32) -> anyhow::Result<()> {
    crate::peers::process::signal(&pid.to_string(), "TERM");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !crate::proc_status::has_exited(pid) {
        anyhow::ensure!(Instant::now() < deadline, "{pid} still runs 30 s after SIGTERM");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}
