//! What Redis says about a run: `INFO commandstats` (calls and microseconds per command, reset
//! with `CONFIG RESETSTAT` before a scenario), `used_memory`, and the server's own CPU time.
//!
//! Commands a Lua script runs are counted in commandstats as well as the EVALSHA that ran them,
//! and the EVALSHA's microseconds already include theirs. So per-message figures count a command
//! only for its share of top-level calls, which a short MONITOR pass measures (see `monitor`).

use anyhow::Context;
use redis::aio::MultiplexedConnection;
use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq)]
pub struct CommandStat {
    /// As commandstats names it: `evalsha`, `config|resetstat`.
    pub name: String,
    pub calls: u64,
    pub usec: u64,
}

/// A connection for reading statistics, separate from the service's.
pub struct RedisProbe {
    conn: MultiplexedConnection,
}

impl RedisProbe {
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        let client = redis::Client::open(url).context("bad Redis URL")?;
        let conn = client.get_multiplexed_async_connection().await.context("cannot connect to Redis")?;
        Ok(Self { conn })
    }

    pub async fn reset_stats(&mut self) -> anyhow::Result<()> {
        redis::cmd("CONFIG").arg("RESETSTAT").query_async::<()>(&mut self.conn).await.context("CONFIG RESETSTAT")
    }

    pub async fn info(&mut self, section: &str) -> anyhow::Result<String> {
        redis::cmd("INFO").arg(section).query_async(&mut self.conn).await.with_context(|| format!("INFO {section}"))
    }

    pub async fn command_stats(&mut self) -> anyhow::Result<Vec<CommandStat>> {
        Ok(parse_commandstats(&self.info("commandstats").await?))
    }

    pub async fn used_memory(&mut self) -> anyhow::Result<u64> {
        let info = self.info("memory").await?;
        info_field(&info, "used_memory").and_then(|v| v.parse().ok()).context("INFO memory has no used_memory")
    }

    /// Makes Redis's latency monitor record any operation of `threshold_ms` or more, and forgets
    /// what it recorded so far.
    pub async fn reset_latency_monitor(&mut self, threshold_ms: u64) -> anyhow::Result<()> {
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("latency-monitor-threshold")
            .arg(threshold_ms)
            .query_async::<()>(&mut self.conn)
            .await
            .context("CONFIG SET latency-monitor-threshold")?;
        redis::cmd("LATENCY").arg("RESET").query_async::<()>(&mut self.conn).await.context("LATENCY RESET")
    }

    /// Each event the latency monitor recorded since its reset: its name, its longest (ms), and in
    /// how many seconds it happened. `LATENCY LATEST` gives `[event, time, latest ms, max ms]`,
    /// `LATENCY HISTORY` one `[time, ms]` per second (the last 160).
    pub async fn latency_events(&mut self) -> anyhow::Result<Vec<(String, u64, usize)>> {
        let latest: Vec<(String, u64, u64, u64)> =
            redis::cmd("LATENCY").arg("LATEST").query_async(&mut self.conn).await.context("LATENCY LATEST")?;
        let mut events = Vec::with_capacity(latest.len());
        for (event, _, _, max_ms) in latest {
            let history: Vec<(u64, u64)> = redis::cmd("LATENCY")
                .arg("HISTORY")
                .arg(&event)
                .query_async(&mut self.conn)
                .await
                .context("LATENCY HISTORY")?;
            events.push((event, max_ms, history.len()));
        }
        Ok(events)
    }

    /// The Redis process's CPU time so far (user + system), in microseconds.
    pub async fn cpu_usec(&mut self) -> anyhow::Result<f64> {
        let info = self.info("cpu").await?;
        let field = |name| info_field(&info, name).and_then(|v| v.parse::<f64>().ok());
        Ok((field("used_cpu_user").context("no used_cpu_user")? + field("used_cpu_sys").context("no used_cpu_sys")?)
            * 1e6)
    }
}

/// `name:value` from an INFO answer.
pub fn info_field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(':')).map(str::trim)
}

/// Parses `cmdstat_<name>:calls=N,usec=N,...` lines.
pub fn parse_commandstats(info: &str) -> Vec<CommandStat> {
    info.lines()
        .filter_map(|line| {
            let (name, fields) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let field = |key: &str| {
                fields.split(',').find_map(|kv| kv.strip_prefix(key)?.strip_prefix('=')).and_then(|v| v.parse().ok())
            };
            Some(CommandStat { name: name.to_owned(), calls: field("calls")?, usec: field("usec")? })
        })
        .collect()
}

/// Commands the probe itself sends, left out of a scenario's cost.
fn is_probe_command(name: &str) -> bool {
    name == "info" || name.starts_with("config") || name == "monitor"
}

/// Redis cost of a scenario, per message.
#[derive(Debug, Clone, PartialEq)]
pub struct RedisCost {
    /// Top-level commands (requests a client sent) per message.
    pub round_trips: f64,
    /// Microseconds Redis spent executing them per message.
    pub usec: f64,
    /// The heaviest commands, `name calls/msg usec/msg`, for diagnosis.
    pub breakdown: String,
}

/// Per-message cost from commandstats. `top_level_share` maps a command's base name (`evalsha`,
/// `hget`) to the share of its calls that came from clients rather than from scripts; a command
/// missing from it counts as top-level, except that script commands are always top-level.
pub fn cost_per_message(stats: &[CommandStat], top_level_share: &HashMap<String, f64>, messages: u64) -> RedisCost {
    let n = messages.max(1) as f64;
    let mut round_trips = 0.0;
    let mut usec = 0.0;
    let mut rows: Vec<(f64, String)> = Vec::new();
    for s in stats.iter().filter(|s| !is_probe_command(&s.name)) {
        let base = s.name.split('|').next().unwrap_or(&s.name);
        let share = if is_script_command(base) { 1.0 } else { top_level_share.get(base).copied().unwrap_or(1.0) };
        round_trips += s.calls as f64 * share / n;
        usec += s.usec as f64 * share / n;
        rows.push((
            s.usec as f64 / n,
            format!("{} {:.3}/msg {:.2}µs/msg", s.name, s.calls as f64 / n, s.usec as f64 / n),
        ));
    }
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    let breakdown = rows.into_iter().take(6).map(|(_, r)| r).collect::<Vec<_>>().join(", ");
    RedisCost { round_trips, usec, breakdown }
}

pub fn is_script_command(base: &str) -> bool {
    matches!(base, "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro")
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "# Commandstats\r\n\
        cmdstat_xadd:calls=100,usec=300,usec_per_call=3.00,rejected_calls=0,failed_calls=0\r\n\
        cmdstat_evalsha:calls=100,usec=900,usec_per_call=9.00,rejected_calls=0,failed_calls=0\r\n\
        cmdstat_hget:calls=300,usec=150,usec_per_call=0.50,rejected_calls=0,failed_calls=0\r\n\
        cmdstat_config|resetstat:calls=1,usec=132,usec_per_call=132.00,rejected_calls=0,failed_calls=0\r\n\
        cmdstat_info:calls=1,usec=50,usec_per_call=50.00,rejected_calls=0,failed_calls=0\r\n";

    #[test]
    fn parses_commandstats() {
        let stats = parse_commandstats(INFO);
        assert_eq!(stats.len(), 5);
        assert_eq!(stats[0], CommandStat { name: "xadd".into(), calls: 100, usec: 300 });
        assert_eq!(stats[3].name, "config|resetstat");
    }

    #[test]
    fn script_inner_commands_are_not_counted_twice() {
        let stats = parse_commandstats(INFO);
        // XADD only ran inside the script; a third of the HGETs came from clients.
        let share = HashMap::from([("xadd".to_owned(), 0.0), ("hget".to_owned(), 1.0 / 3.0)]);
        let cost = cost_per_message(&stats, &share, 100);
        assert!((cost.round_trips - 2.0).abs() < 1e-9, "{cost:?}");
        assert!((cost.usec - 9.5).abs() < 1e-9, "{cost:?}");
        assert!(cost.breakdown.starts_with("evalsha 1.000/msg 9.00µs/msg"));
        assert!(!cost.breakdown.contains("info") && !cost.breakdown.contains("config"));
    }

    #[test]
    fn reads_info_fields() {
        let info = "# Memory\r\nused_memory:1048576\r\nused_memory_human:1.00M\r\n";
        assert_eq!(info_field(info, "used_memory"), Some("1048576"));
        assert_eq!(info_field(info, "used_memory_rss"), None);
    }
}
