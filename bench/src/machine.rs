//! What the machine did while a scenario group ran, beside what the group measured: the share of
//! CPU time the hypervisor gave to other guests (`steal` in `/proc/stat`), how busy and idle the
//! cores were, the stalls Redis's own latency monitor saw (`LATENCY LATEST` and `HISTORY`, reset
//! before the group), and how long a fixed CPU job took just before it (a core slowed by a busy
//! neighbour on the host shows there, not in steal). Runs on a shared virtual machine move by a
//! quarter or more from one to the next; these rows say when the machine moved
//! (`docs/performance.md`, What the machine did).

use crate::redis_stats::RedisProbe;
use crate::scenario_result::ScenarioResult;
use std::time::Instant;

/// Redis records a latency event when one of its operations (a command, an AOF write, a fork, an
/// expiry cycle) takes at least this long. Set on the bench's Redis at the start of each group:
/// far below the latency rows' 10 ms targets, far above what a command takes.
const STALL_MS: u64 = 5;

/// Steps of the fixed CPU job: about 5 ms on a 3 GHz core (one dependent multiply-add per step).
const JOB_STEPS: u64 = 5_000_000;

/// A fixed amount of CPU work on this thread, no memory traffic: the fastest of five runs, ms. The
/// fastest filters out the runs another process preempted, so what is left is the core's own
/// speed, which a busy neighbour on the host lowers without any steal being counted.
pub fn fixed_job_ms() -> f64 {
    (0..5)
        .map(|_| {
            let start = Instant::now();
            let mut x: u64 = 1;
            for step in 0..JOB_STEPS {
                x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(step));
            }
            std::hint::black_box(x);
            start.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::INFINITY, f64::min)
}

/// CPU time since boot over every core, in the kernel's ticks.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CpuTimes {
    /// user, nice, system, irq and softirq.
    pub busy: u64,
    /// idle and iowait.
    pub idle: u64,
    /// Time this machine was ready to run but another guest of the host ran instead.
    pub steal: u64,
}

impl CpuTimes {
    /// The aggregate `cpu` line of `/proc/stat`; `None` elsewhere than on Linux.
    pub fn now() -> Option<Self> {
        Self::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// `cpu  user nice system idle iowait irq softirq steal guest guest_nice` (guest time is
    /// already counted in user).
    pub fn parse(stat: &str) -> Option<Self> {
        let fields: Vec<u64> = stat
            .lines()
            .next()?
            .strip_prefix("cpu ")?
            .split_whitespace()
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        let field = |i: usize| fields.get(i).copied().unwrap_or(0);
        Some(Self {
            busy: field(0) + field(1) + field(2) + field(5) + field(6),
            idle: field(3) + field(4),
            steal: field(7),
        })
    }

    /// The time between `self` and `later`, as percentages of it: (busy, idle, stolen).
    pub fn shares_until(&self, later: &CpuTimes) -> Option<(f64, f64, f64)> {
        let busy = later.busy.saturating_sub(self.busy) as f64;
        let idle = later.idle.saturating_sub(self.idle) as f64;
        let steal = later.steal.saturating_sub(self.steal) as f64;
        let total = busy + idle + steal;
        (total > 0.0).then(|| (100.0 * busy / total, 100.0 * idle / total, 100.0 * steal / total))
    }
}

/// One kind of Redis stall in a group: its event name, the longest, and in how many seconds it
/// happened (the monitor keeps the longest per second).
#[derive(Debug, Clone, PartialEq)]
pub struct Stall {
    pub event: String,
    pub max_ms: u64,
    pub seconds: usize,
}

/// Watches one group from `start` to `finish`.
pub struct Watch {
    cpu: Option<CpuTimes>,
    job_ms: f64,
    started: Instant,
    redis: Option<RedisProbe>,
}

impl Watch {
    /// Resets Redis's latency monitor (a Redis that cannot be reached only loses the stall part).
    pub async fn start(redis_url: &str) -> Self {
        let redis = match reset_monitor(redis_url).await {
            Ok(conn) => Some(conn),
            Err(err) => {
                crate::scenarios::progress(&format!("Redis's latency monitor is not read: {err:#}"));
                None
            }
        };
        // Timed first, while the machine is between groups.
        let job_ms = fixed_job_ms();
        Self { cpu: CpuTimes::now(), job_ms, started: Instant::now(), redis }
    }

    /// The row `<group>_cpu_stolen`: the share of CPU time stolen while the group ran, with the
    /// cores' busy and idle shares and Redis's stalls in its note; `None` without `/proc/stat`.
    pub async fn finish(self, group: &str) -> Option<ScenarioResult> {
        let (busy, idle, stolen) = self.cpu?.shares_until(&CpuTimes::now()?)?;
        let stalls = match self.redis {
            Some(mut probe) => {
                stalls(&mut probe).await.map(|s| describe(&s)).unwrap_or_else(|err| format!("unread ({err:#})"))
            }
            None => "unread".to_owned(),
        };
        let note = format!(
            "over {:.0} s: the cores busy {busy:.1} %, idle {idle:.1} %, stolen by the host for other guests \
             {stolen:.1} %; Redis stalls of {STALL_MS} ms or more: {stalls}; before the group a fixed CPU job took \
             {:.2} ms (the fastest of five; a slower core takes longer)",
            self.started.elapsed().as_secs_f64(),
            self.job_ms
        );
        Some(ScenarioResult::new(&format!("{group}_cpu_stolen"), stolen, "% of CPU time").note(note))
    }
}

async fn reset_monitor(redis_url: &str) -> anyhow::Result<RedisProbe> {
    let mut probe = RedisProbe::connect(redis_url).await?;
    probe.reset_latency_monitor(STALL_MS).await?;
    Ok(probe)
}

/// What the latency monitor recorded since its reset, longest first.
async fn stalls(probe: &mut RedisProbe) -> anyhow::Result<Vec<Stall>> {
    let mut stalls: Vec<Stall> = probe
        .latency_events()
        .await?
        .into_iter()
        .map(|(event, max_ms, seconds)| Stall { event, max_ms, seconds })
        .collect();
    stalls.sort_by(|a, b| b.max_ms.cmp(&a.max_ms).then_with(|| a.event.cmp(&b.event)));
    Ok(stalls)
}

/// `command 44 ms (in 12 s), aof-write 16 ms (in 9 s)`, longest first; `none`.
pub fn describe(stalls: &[Stall]) -> String {
    if stalls.is_empty() {
        return "none".to_owned();
    }
    let each: Vec<String> =
        stalls.iter().map(|s| format!("{} {} ms (in {} s)", s.event, s.max_ms, s.seconds)).collect();
    each.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_aggregate_cpu_line_splits_into_busy_idle_and_stolen() {
        let before = CpuTimes::parse("cpu  100 5 40 800 20 1 4 30 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n").unwrap();
        assert_eq!(before, CpuTimes { busy: 150, idle: 820, steal: 30 });
        let after = CpuTimes { busy: 450, idle: 920, steal: 130 };
        let (busy, idle, stolen) = before.shares_until(&after).unwrap();
        assert_eq!((busy, idle, stolen), (60.0, 20.0, 20.0));
        // Older kernels print fewer columns: steal is then zero.
        assert_eq!(CpuTimes::parse("cpu  1 2 3 4\n").unwrap(), CpuTimes { busy: 6, idle: 4, steal: 0 });
        assert_eq!(CpuTimes::parse("intr 1 2\n"), None);
        assert_eq!(before.shares_until(&before), None);
    }

    #[test]
    fn the_fixed_job_takes_a_measurable_time() {
        let ms = fixed_job_ms();
        assert!(ms.is_finite() && ms > 0.0, "{ms}");
    }

    #[test]
    fn stalls_read_longest_first() {
        let stalls = [
            Stall { event: "command".into(), max_ms: 44, seconds: 12 },
            Stall { event: "aof-write".into(), max_ms: 16, seconds: 9 },
        ];
        assert_eq!(describe(&stalls), "command 44 ms (in 12 s), aof-write 16 ms (in 9 s)");
        assert_eq!(describe(&[]), "none");
    }
}
