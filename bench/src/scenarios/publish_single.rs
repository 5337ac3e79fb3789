//! Scenario 1: publish one message per request over many connections, against the floor (a bare
//! axum route doing one EVALSHA) with the same client and bytes, in alternating rounds. Then the
//! same publish open-loop at half the peak just measured, for latency without coordinated
//! omission, and Redis round trips and CPU per message.

use super::{Ctx, open_loop, progress, redis_cost};
use crate::api::sample_body;
use crate::load::{Tally, Window, closed_loop};
use crate::redis_stats::RedisCost;
use crate::scenario_result::{ScenarioResult, Target};
use anyhow::Context;
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
    let share = redis_cost::calibrate(&ctx.redis_url, &ctx.target, &calls[0], s.calibration_requests).await?;

    // Rounds of one floor window and one AQS window, the order swapped every round (ABBA...):
    // what else the machine does during the run then weighs on both sides alike. The ratio is
    // of the totals; each round's own ratio goes in the note, to show the spread.
    let rounds = s.publish_rounds.max(1);
    let slice = s.publish / rounds as u32;
    let mut floor = Side::default();
    let mut aqs = Side::default();
    let mut round_ratios = Vec::new();
    // The floor's script is one XADD: every XADD it causes ran inside its EVALSHA.
    let floor_share = HashMap::from([("xadd".to_owned(), 0.0)]);
    for round in 0..rounds {
        let floor_first = round % 2 == 0;
        for floor_turn in [floor_first, !floor_first] {
            let (side, target, name, share) = match (floor_turn, &ctx.floor) {
                (true, Some(floor_target)) => (&mut floor, floor_target, "floor", &floor_share),
                (true, None) => continue,
                (false, _) => (&mut aqs, &ctx.target, "aqs", &share),
            };
            progress(&format!("{name}: single publish, {conns} connections, {slice:?} (round {})", round + 1));
            side.run(&ctx.redis_url, target, &calls, Window::after(s.warmup, slice), share, name).await?;
        }
        if let (Some(f), Some(a)) = (floor.last_rate, aqs.last_rate) {
            round_ratios.push(a / f);
        }
    }

    let peak = aqs.rate();
    ctx.peak_single = Some(peak);
    ctx.aqs.publish_single = Some(peak);
    let (p50, p99) = aqs.tally.latencies.p50_p99_ms();
    let floor_rate = ctx.floor.as_ref().map(|_| floor.rate());
    let spread = if round_ratios.is_empty() {
        String::new()
    } else {
        let shown: Vec<String> = round_ratios.iter().map(|r| format!("{r:.2}")).collect();
        format!("; ratio per round {}", shown.join(", "))
    };
    // Only set when a floor round ran.
    let floor_cost = match &floor.cost {
        Some((cost, process_usec)) => {
            format!("; floor: Redis {:.2} µs/msg by commandstats, {process_usec:.2} µs/msg process CPU", cost.usec)
        }
        None => String::new(),
    };
    let (cost, process_usec) = aqs.cost.take().context("no AQS round ran")?;

    let mut rows = vec![
        ScenarioResult::new(SCENARIO, peak, "msgs/s")
            .compared("floor (axum + 1 EVALSHA)", floor_rate)
            .latency(p50, p99)
            .target(Target::RatioAtLeast(0.9))
            .note(format!(
                "{conns} connections, closed loop, {rounds} rounds of {slice:?} per side{spread}{}{}{floor_cost}",
                aqs.tally.error_note(),
                floor.tally.error_note()
            )),
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

/// One side of the comparison (the floor or AQS) over every round.
#[derive(Default)]
struct Side {
    tally: Tally,
    seconds: f64,
    last_rate: Option<f64>,
    /// Redis cost per message of the last round (commandstats are reset for each window).
    cost: Option<(RedisCost, f64)>,
}

impl Side {
    async fn run(
        &mut self,
        redis_url: &str,
        target: &crate::client::Target,
        calls: &[crate::client::Call],
        window: Window,
        share: &HashMap<String, f64>,
        name: &str,
    ) -> anyhow::Result<()> {
        let meter = redis_cost::CostMeter::start(redis_url).await?;
        let tally = closed_loop(target, calls.to_vec(), window, StatusCode::CREATED, 1).await;
        self.cost = Some(meter.finish(tally.msgs_total, share).await?);
        tally.ensure_progress(name)?;
        self.last_rate = Some(tally.msgs as f64 / window.seconds());
        self.seconds += window.seconds();
        self.tally.merge(tally);
        Ok(())
    }

    fn rate(&self) -> f64 {
        self.tally.msgs as f64 / self.seconds.max(f64::EPSILON)
    }
}
