//! Scenario 1: publish one message per request over many connections, against the floor (a bare
//! axum route doing one EVALSHA) measured just before with the same client and bytes. Then the
//! same publish open-loop at half the peak just measured, for latency without coordinated
//! omission, and Redis round trips and CPU per message.

use super::{Ctx, open_loop, progress, redis_cost};
use crate::api::sample_body;
use crate::load::{Window, closed_loop};
use crate::scenario_result::{ScenarioResult, Target};
use hyper::StatusCode;
use std::collections::HashMap;

const SCENARIO: &str = "publish_single";

pub async fn run(ctx: &mut Ctx) -> Vec<ScenarioResult> {
    match measure(ctx).await {
        Ok(rows) => rows,
        Err(err) => vec![ScenarioResult::failed(SCENARIO, "msgs/s", &err)],
    }
}

async fn measure(ctx: &mut Ctx) -> anyhow::Result<Vec<ScenarioResult>> {
    let s = ctx.scale.clone();
    let conns = s.single_connections;
    // One token per connection: the per-token rate limit is not what this measures.
    let queue = ctx.queue("single", conns).await?;
    let body = sample_body();
    let calls = (0..conns).map(|i| queue.publish(i, &body)).collect::<anyhow::Result<Vec<_>>>()?;

    let (floor, floor_cost) = match &ctx.floor {
        Some(floor) => {
            progress(&format!("floor: single publish, {conns} connections, {:?}", s.publish));
            let meter = redis_cost::CostMeter::start(&ctx.redis_url).await?;
            let window = Window::after(s.warmup, s.publish);
            let tally = closed_loop(floor, calls.clone(), window, StatusCode::CREATED, 1).await;
            // The floor's script is one XADD: every XADD it causes ran inside its EVALSHA.
            let share = HashMap::from([("xadd".to_owned(), 0.0)]);
            let (cost, process_usec) = meter.finish(tally.msgs_total, &share).await?;
            tally.ensure_progress("floor")?;
            let note = format!(
                "; floor: Redis {:.2} µs/msg by commandstats, {process_usec:.2} µs/msg process CPU{}",
                cost.usec,
                tally.error_note()
            );
            (Some(tally.msgs as f64 / window.seconds()), note)
        }
        None => (None, String::new()),
    };

    progress(&format!("aqs: single publish, {conns} connections, {:?}", s.publish));
    let share = redis_cost::calibrate(&ctx.redis_url, &ctx.target, &calls[0], s.calibration_requests).await?;
    let meter = redis_cost::CostMeter::start(&ctx.redis_url).await?;
    let window = Window::after(s.warmup, s.publish);
    let mut tally = closed_loop(&ctx.target, calls.clone(), window, StatusCode::CREATED, 1).await;
    let (cost, process_usec) = meter.finish(tally.msgs_total, &share).await?;
    tally.ensure_progress("aqs single publish")?;
    let peak = tally.msgs as f64 / window.seconds();
    ctx.peak_single = Some(peak);
    let (p50, p99) = tally.latencies.p50_p99_ms();

    let mut rows = vec![
        ScenarioResult::new(SCENARIO, peak, "msgs/s")
            .compared("floor (axum + 1 EVALSHA)", floor)
            .latency(p50, p99)
            .target(Target::RatioAtLeast(0.7))
            .note(format!("{conns} connections, closed loop, {:?}{}{floor_cost}", s.publish, tally.error_note())),
        ScenarioResult::new("publish_single_vs_bullmq_add", peak, "msgs/s")
            .compared("bullmq add (64 concurrent)", ctx.bullmq("add"))
            .note("for context only; no target"),
    ];
    rows.extend(redis_cost::rows(SCENARIO, &cost, process_usec));

    let rate = peak / 2.0;
    progress(&format!("aqs: single publish open loop at {rate:.0}/s, {:?}", s.open_loop));
    let mut open = open_loop::run(&ctx.target, calls, rate, s.open_loop).await?;
    let (p50, p99) = open.latencies.p50_p99_ms();
    rows.push(
        ScenarioResult::new("publish_single_open_loop", open.msgs as f64 / s.open_loop.as_secs_f64(), "msgs/s")
            .latency(p50, p99)
            .note(format!(
                "offered {rate:.0}/s (50% of peak) on a fixed schedule; latency from the scheduled time{}",
                open.error_note()
            )),
    );
    Ok(rows)
}
