//! Scenario 2: publish in batches of 100 over a few connections, against BullMQ's `addBulk` of
//! 100 on the same Redis, with Redis round trips and CPU per message.

use super::{Ctx, progress, redis_cost};
use crate::api::sample_body;
use crate::load::{Window, closed_loop};
use crate::scenario_result::{ScenarioResult, Target};
use hyper::StatusCode;

const SCENARIO: &str = "publish_batch_100";
pub const BATCH: usize = 100;

pub async fn run(ctx: &mut Ctx) -> Vec<ScenarioResult> {
    match measure(ctx).await {
        Ok(rows) => rows,
        Err(err) => vec![ScenarioResult::failed(SCENARIO, "msgs/s", &err)],
    }
}

async fn measure(ctx: &mut Ctx) -> anyhow::Result<Vec<ScenarioResult>> {
    let s = ctx.scale.clone();
    let conns = s.batch_connections;
    let queue = ctx.queue("batch", conns).await?;
    let body = sample_body();
    let calls = (0..conns).map(|i| queue.publish_batch(i, &body, BATCH)).collect::<anyhow::Result<Vec<_>>>()?;

    progress(&format!("aqs: batch publish of {BATCH}, {conns} connections, {:?}", s.batch));
    let share = redis_cost::calibrate(&ctx.redis_url, &ctx.target, &calls[0], s.calibration_requests / 5 + 1).await?;
    let meter = redis_cost::CostMeter::start(&ctx.redis_url).await?;
    let window = Window::after(s.warmup, s.batch);
    let mut tally = closed_loop(&ctx.target, calls, window, StatusCode::CREATED, BATCH as u64).await;
    let (cost, process_usec) = meter.finish(tally.msgs_total, &share).await?;
    tally.ensure_progress("aqs batch publish")?;
    let (p50, p99) = tally.latencies.p50_p99_ms();
    let rate = tally.msgs as f64 / window.seconds();
    ctx.aqs.publish_batch = Some(rate);
    let mut rows = vec![
        ScenarioResult::new(SCENARIO, rate, "msgs/s")
            .compared("bullmq addBulk 100", ctx.bullmq("add_bulk_100"))
            .latency(p50, p99)
            .target(Target::RatioAtLeast(3.0))
            .note(format!("{conns} connections, closed loop, latency per batch{}", tally.error_note())),
    ];
    rows.extend(redis_cost::rows("publish_batch", &cost, process_usec));
    Ok(rows)
}
