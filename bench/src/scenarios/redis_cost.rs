//! Redis round trips and Redis CPU per message for a publish scenario: `CONFIG RESETSTAT` before
//! the AQS run, `INFO commandstats` after, divided by the messages published. A short MONITOR
//! pass first tells which commands the service sent and which its scripts ran, so script
//! commands are not counted twice (see `redis_stats`). The Redis process's own CPU time (which
//! also counts parsing and socket work) is given next to it.

use crate::client::{Call, Target};
use crate::monitor::{Monitor, redis_addr};
use crate::redis_stats::{RedisCost, RedisProbe, cost_per_message, is_script_command};
use crate::scenario_result::ScenarioResult;
use anyhow::Context;
use hyper::StatusCode;
use std::collections::HashMap;

/// Sends `call` `requests` times on one connection under MONITOR; returns each command's share
/// of client-sent calls.
pub async fn calibrate(
    redis_url: &str,
    target: &Target,
    call: &Call,
    requests: usize,
) -> anyhow::Result<HashMap<String, f64>> {
    let monitor = Monitor::start(&redis_addr(redis_url)?).await?;
    let mut conn = target.connect().await?;
    for _ in 0..requests {
        conn.expect(call, StatusCode::CREATED).await.context("calibration request")?;
    }
    // MONITOR lines arrive asynchronously; give the last ones a moment.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    Ok(monitor.finish().await?.top_level_share())
}

/// Counts Redis work between `start` and `finish`.
pub struct CostMeter {
    probe: RedisProbe,
    cpu_start: f64,
}

impl CostMeter {
    pub async fn start(redis_url: &str) -> anyhow::Result<Self> {
        let mut probe = RedisProbe::connect(redis_url).await?;
        probe.reset_stats().await?;
        let cpu_start = probe.cpu_usec().await?;
        Ok(Self { probe, cpu_start })
    }

    /// The cost per message, and the Redis process's CPU µs per message.
    pub async fn finish(mut self, messages: u64, share: &HashMap<String, f64>) -> anyhow::Result<(RedisCost, f64)> {
        let cpu = self.probe.cpu_usec().await? - self.cpu_start;
        let stats = self.probe.command_stats().await?;
        Ok((cost_per_message(&stats, share, messages), cpu / messages.max(1) as f64))
    }
}

impl CostMeter {
    /// Script calls (EVALSHA…) and their microseconds per unit of `per` (messages, wake-ups), with
    /// the Redis process's CPU µs per unit and the heaviest commands, as a sentence for a note.
    pub async fn finish_scripts(mut self, per: u64, unit: &str) -> anyhow::Result<String> {
        let cpu = self.probe.cpu_usec().await? - self.cpu_start;
        let stats = self.probe.command_stats().await?;
        let n = per.max(1) as f64;
        let scripts = stats.iter().filter(|s| is_script_command(s.name.split('|').next().unwrap_or(&s.name)));
        let (calls, usec) = scripts.fold((0, 0), |(c, u), s| (c + s.calls, u + s.usec));
        let all = cost_per_message(&stats, &HashMap::new(), per);
        Ok(format!(
            "Redis: {:.3} script calls/{unit}, {:.2} µs/{unit} in scripts, {:.2} µs/{unit} process CPU ({})",
            calls as f64 / n,
            usec as f64 / n,
            cpu / n,
            all.breakdown
        ))
    }
}

/// The two rows of a publish scenario's Redis cost.
pub fn rows(scenario: &str, cost: &RedisCost, process_usec: f64) -> Vec<ScenarioResult> {
    vec![
        ScenarioResult::new(&format!("{scenario}_redis_round_trips"), cost.round_trips, "calls/msg")
            .note(format!("commandstats: {}", cost.breakdown)),
        ScenarioResult::new(&format!("{scenario}_redis_cpu"), cost.usec, "µs/msg")
            .note(format!("commandstats usec of client calls; Redis process CPU {process_usec:.2} µs/msg")),
    ]
}
