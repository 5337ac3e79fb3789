//! The metrics every role records, by name, and the few helpers that record them. They go through
//! the `metrics` facade: nothing is kept anywhere unless the binary installed a recorder (it does
//! when `AQS_METRICS_ADDR` is set, `aqs::metrics`), and until then every helper returns at once.
//!
//! # Series (Prometheus names)
//!
//! | series | type | labels | what |
//! | --- | --- | --- | --- |
//! | `aqs_build_info` | gauge (1) | `version` | the running build |
//! | `aqs_http_requests_total` | counter | `route`, `method`, `status` | answered requests; `route` is the route's template (`/queue/v1/{slug}/messages`), `unmatched` for paths no route serves |
//! | `aqs_http_request_duration_seconds` | histogram | `route`, `method` | time to the response head (a long poll's includes its wait) |
//! | `aqs_redis_script_duration_seconds` | histogram | `script` | one EVALSHA of a message script, round trip included |
//! | `aqs_redis_script_errors_total` | counter | `script` | script calls that failed (Redis unreachable, a script error) |
//! | `aqs_long_polls_held` | gauge | | consume requests waiting for a message now |
//! | `aqs_push_deliveries_total` | counter | `mode` (`message`, `batch`), `outcome` | push POSTs by what the answer meant: `acked`, `retried`, `dead_lettered`, `partial` (a batch with some returned) |
//! | `aqs_sweep_duration_seconds` | histogram | | one sweeper pass over every queue |
//! | `aqs_sweeper_lag_seconds` | gauge | | since the sweeper last completed a pass (about 1 s when healthy) |
//! | `aqs_ledger_flush_lag_seconds` | gauge | | since the publish ledger was last written to Redis (about 0.2 s when healthy) |
//! | `aqs_projection_resyncs_total` | counter | `outcome` (`ok`, `error`) | re-syncs of the Redis projection from PostgreSQL |
//! | `aqs_projection_resync_duration_seconds` | histogram | | one re-sync |
//! | `aqs_queue_depth` | gauge | `queue` (slug) | ready + in flight + delayed messages |
//! | `aqs_queue_dead_letters` | gauge | `queue` (slug) | dead letters |
//!
//! Per-queue series are bounded: only the [`DEPTH_QUEUES`] queues holding the most messages (depth
//! plus dead letters; empty queues never), as this replica's sweeper saw them on its last pass
//! (about every second; the sweep script reads the figures, so they cost no round trip). Every
//! replica sweeps every queue, so every replica reports the same queues: aggregate with
//! `max by (queue)`. A queue that empties reads 0 once; a queue no longer reported leaves the
//! scrape when its gauge has not been set for a while (the exporter's idle timeout, 15 s).
//!
//! Gauges are set when they change or at scrape time ([`refresh`]); lags are measured at scrape
//! time, so a stuck loop shows a growing lag rather than a stale one.

pub mod http;

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

pub const BUILD_INFO: &str = "aqs_build_info";
pub const HTTP_REQUESTS: &str = "aqs_http_requests_total";
pub const HTTP_REQUEST_DURATION: &str = "aqs_http_request_duration_seconds";
pub const SCRIPT_DURATION: &str = "aqs_redis_script_duration_seconds";
pub const SCRIPT_ERRORS: &str = "aqs_redis_script_errors_total";
pub const LONG_POLLS_HELD: &str = "aqs_long_polls_held";
pub const PUSH_DELIVERIES: &str = "aqs_push_deliveries_total";
pub const SWEEP_DURATION: &str = "aqs_sweep_duration_seconds";
pub const SWEEPER_LAG: &str = "aqs_sweeper_lag_seconds";
pub const LEDGER_FLUSH_LAG: &str = "aqs_ledger_flush_lag_seconds";
pub const RESYNCS: &str = "aqs_projection_resyncs_total";
pub const RESYNC_DURATION: &str = "aqs_projection_resync_duration_seconds";
pub const QUEUE_DEPTH: &str = "aqs_queue_depth";
pub const QUEUE_DEAD_LETTERS: &str = "aqs_queue_dead_letters";

/// How many queues the per-queue series cover at most.
pub const DEPTH_QUEUES: usize = 50;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Whether a recorder is installed: when not, nothing is measured (not even the clock read).
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Called once the process's recorder is installed: from here on the helpers record, and
/// [`describe`] has given every series its help text.
pub fn set_enabled() {
    describe();
    // Counters a dashboard or alert reads exist at zero from the start, not from their first event.
    for (mode, outcome) in PUSH_OUTCOMES {
        metrics::counter!(PUSH_DELIVERIES, "mode" => *mode, "outcome" => *outcome).increment(0);
    }
    ENABLED.store(true, Ordering::Relaxed);
}

/// Every (mode, outcome) a push delivery is counted under.
const PUSH_OUTCOMES: &[(&str, &str)] = &[
    ("message", "acked"),
    ("message", "retried"),
    ("message", "dead_lettered"),
    ("batch", "acked"),
    ("batch", "retried"),
    ("batch", "partial"),
];

/// Registers each message script's error counter at zero (the data plane calls it with the
/// scripts it loaded), so an alert on script errors has a series before the first one.
pub fn scripts_known(scripts: &[&'static str]) {
    if enabled() {
        for script in scripts {
            metrics::counter!(SCRIPT_ERRORS, "script" => *script).increment(0);
        }
    }
}

fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_gauge!(BUILD_INFO, "The running build (always 1).");
    describe_counter!(HTTP_REQUESTS, "Answered HTTP requests by route template, method and status.");
    describe_histogram!(HTTP_REQUEST_DURATION, Unit::Seconds, "Time to the response head, by route template.");
    describe_histogram!(SCRIPT_DURATION, Unit::Seconds, "One EVALSHA of a message script, round trip included.");
    describe_counter!(SCRIPT_ERRORS, "Message script calls that failed.");
    describe_gauge!(LONG_POLLS_HELD, "Consume requests waiting for a message.");
    describe_counter!(PUSH_DELIVERIES, "Push deliveries (POSTs to a handler) by mode and outcome.");
    describe_histogram!(SWEEP_DURATION, Unit::Seconds, "One sweeper pass over every queue.");
    describe_gauge!(SWEEPER_LAG, Unit::Seconds, "Time since the sweeper last completed a pass.");
    describe_gauge!(LEDGER_FLUSH_LAG, Unit::Seconds, "Time since the publish ledger was last written to Redis.");
    describe_counter!(RESYNCS, "Re-syncs of the Redis projection from PostgreSQL, by outcome.");
    describe_histogram!(RESYNC_DURATION, Unit::Seconds, "One re-sync of the Redis projection.");
    describe_gauge!(QUEUE_DEPTH, "Ready, in-flight and delayed messages of the deepest queues.");
    describe_gauge!(QUEUE_DEAD_LETTERS, "Dead letters of the deepest queues.");
}

/// Sets the gauges that are read rather than counted: build info, long polls held, the lags.
/// The exporter calls it before every render.
pub fn refresh() {
    metrics::gauge!(BUILD_INFO, "version" => env!("CARGO_PKG_VERSION")).set(1.0);
    metrics::gauge!(LONG_POLLS_HELD).set(LONG_POLLS.load(Ordering::Relaxed) as f64);
    for lag in [&SWEEPER, &LEDGER_FLUSH] {
        lag.refresh();
    }
}

/// One message script call.
pub fn script_ran(script: &'static str, took: Duration, ok: bool) {
    if !enabled() {
        return;
    }
    metrics::histogram!(SCRIPT_DURATION, "script" => script).record(took.as_secs_f64());
    if !ok {
        metrics::counter!(SCRIPT_ERRORS, "script" => script).increment(1);
    }
}

/// One push POST and what its answer meant.
pub fn push_delivered(mode: &'static str, outcome: &'static str) {
    if enabled() {
        metrics::counter!(PUSH_DELIVERIES, "mode" => mode, "outcome" => outcome).increment(1);
    }
}

/// One sweeper pass over every queue, completed.
pub fn swept(took: Duration) {
    SWEEPER.caught_up();
    if enabled() {
        metrics::histogram!(SWEEP_DURATION).record(took.as_secs_f64());
    }
}

/// One re-sync of the projection.
pub fn resynced(ok: bool, took: Duration) {
    if !enabled() {
        return;
    }
    metrics::counter!(RESYNCS, "outcome" => if ok { "ok" } else { "error" }).increment(1);
    metrics::histogram!(RESYNC_DURATION).record(took.as_secs_f64());
}

/// Sets the per-queue gauges from one sweeper pass: `queues` holds (slug, depth, dead letters) of
/// every queue the pass saw holding something.
pub fn queue_depths(queues: Vec<(String, u64, u64)>) {
    if !enabled() {
        return;
    }
    static REPORTED: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut reported = REPORTED.lock().unwrap_or_else(PoisonError::into_inner);
    let deepest = deepest(queues, DEPTH_QUEUES);
    // A reported queue that emptied reads 0 once, rather than its last depth until it goes idle.
    for slug in reported.iter().filter(|slug| !deepest.iter().any(|(s, _, _)| s == *slug)) {
        metrics::gauge!(QUEUE_DEPTH, "queue" => slug.clone()).set(0.0);
        metrics::gauge!(QUEUE_DEAD_LETTERS, "queue" => slug.clone()).set(0.0);
    }
    for (slug, depth, dead) in &deepest {
        metrics::gauge!(QUEUE_DEPTH, "queue" => slug.clone()).set(*depth as f64);
        metrics::gauge!(QUEUE_DEAD_LETTERS, "queue" => slug.clone()).set(*dead as f64);
    }
    *reported = deepest.into_iter().map(|(slug, _, _)| slug).collect();
}

/// The `n` non-empty queues holding the most messages (depth plus dead letters; ties by slug, so
/// the choice is stable from one pass to the next).
fn deepest(mut queues: Vec<(String, u64, u64)>, n: usize) -> Vec<(String, u64, u64)> {
    queues.retain(|(_, depth, dead)| depth + dead > 0);
    queues.sort_unstable_by(|(a, a_depth, a_dead), (b, b_depth, b_dead)| {
        (b_depth + b_dead).cmp(&(a_depth + a_dead)).then_with(|| a.cmp(b))
    });
    queues.truncate(n);
    queues
}

static LONG_POLLS: AtomicI64 = AtomicI64::new(0);

/// A consume request waiting for a message, while it lives: an atomic here, read at scrape time,
/// so a poll costs no registry lookup.
pub struct LongPollHeld(());

impl LongPollHeld {
    pub fn enter() -> Self {
        LONG_POLLS.fetch_add(1, Ordering::Relaxed);
        Self(())
    }
}

impl Drop for LongPollHeld {
    fn drop(&mut self) {
        LONG_POLLS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A loop's lag: the time since it last caught up, reported only once the loop ran in this process.
pub struct Lag {
    gauge: &'static str,
    /// Milliseconds since the epoch of the last catch-up; 0 before the loop started.
    at_ms: AtomicU64,
}

pub static SWEEPER: Lag = Lag { gauge: SWEEPER_LAG, at_ms: AtomicU64::new(0) };
pub static LEDGER_FLUSH: Lag = Lag { gauge: LEDGER_FLUSH_LAG, at_ms: AtomicU64::new(0) };

impl Lag {
    /// The loop is up to date now (call it at the loop's start too: a loop that never succeeds
    /// then shows its lag growing from its start).
    pub fn caught_up(&self) {
        self.at_ms.store(crate::time::now_ms(), Ordering::Relaxed);
    }

    /// Seconds behind, once the loop started.
    pub fn seconds(&self) -> Option<f64> {
        match self.at_ms.load(Ordering::Relaxed) {
            0 => None,
            at => Some(crate::time::now_ms().saturating_sub(at) as f64 / 1000.0),
        }
    }

    fn refresh(&self) {
        if let Some(seconds) = self.seconds() {
            metrics::gauge!(self.gauge).set(seconds);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lag_is_reported_only_once_its_loop_started() {
        let lag = Lag { gauge: SWEEPER_LAG, at_ms: AtomicU64::new(0) };
        assert_eq!(lag.seconds(), None);
        lag.caught_up();
        assert!(lag.seconds().is_some_and(|s| s < 60.0));
        lag.at_ms.store(crate::time::now_ms() - 5_000, Ordering::Relaxed);
        assert!(lag.seconds().is_some_and(|s| s >= 5.0));
    }

    #[test]
    fn the_deepest_queues_are_kept_and_empty_ones_left_out() {
        let queues = vec![
            ("b".to_owned(), 5, 0),
            ("empty".to_owned(), 0, 0),
            ("a".to_owned(), 4, 1),
            ("c".to_owned(), 1, 0),
            ("d".to_owned(), 9, 0),
        ];
        let slugs = |n| deepest(queues.clone(), n).into_iter().map(|(s, _, _)| s).collect::<Vec<_>>();
        assert_eq!(slugs(2), ["d", "a"], "the largest first, ties by slug");
        assert_eq!(slugs(10), ["d", "a", "b", "c"]);
    }

    #[test]
    fn long_polls_are_counted_while_held() {
        let before = LONG_POLLS.load(Ordering::Relaxed);
        let held = LongPollHeld::enter();
        assert_eq!(LONG_POLLS.load(Ordering::Relaxed), before + 1);
        drop(held);
        assert_eq!(LONG_POLLS.load(Ordering::Relaxed), before);
    }
}
