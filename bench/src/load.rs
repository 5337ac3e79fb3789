//! Closed-loop load: each worker owns one connection and sends its next request as soon as the
//! last one is answered. Workers run through a warm-up, then a measured window; only requests
//! that started and finished inside the window count, so connection set-up and the ramp do not.

use crate::client::{Call, Conn, Target};
use crate::latency::Latencies;
use hyper::StatusCode;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub measure_from: Instant,
    pub end: Instant,
}

impl Window {
    /// A window starting after `warmup` from now, lasting `duration`.
    pub fn after(warmup: Duration, duration: Duration) -> Self {
        let measure_from = Instant::now() + warmup;
        Self { measure_from, end: measure_from + duration }
    }

    pub fn contains(&self, started: Instant, finished: Instant) -> bool {
        started >= self.measure_from && finished <= self.end
    }

    pub fn seconds(&self) -> f64 {
        (self.end - self.measure_from).as_secs_f64()
    }
}

/// What workers counted.
#[derive(Debug, Default)]
pub struct Tally {
    /// Requests answered as expected inside the window.
    pub ops: u64,
    /// Messages they carried (or acknowledged).
    pub msgs: u64,
    /// Messages over the whole run, warm-up included (for per-message Redis cost).
    pub msgs_total: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub latencies: Latencies,
}

impl Tally {
    pub fn merge(&mut self, other: Tally) {
        self.ops += other.ops;
        self.msgs += other.msgs;
        self.msgs_total += other.msgs_total;
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        self.latencies.merge(other.latencies);
    }

    pub fn error(&mut self, err: impl std::fmt::Display) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(err.to_string());
        }
    }

    /// Fails when nothing succeeded, naming the first error.
    pub fn ensure_progress(&self, what: &str) -> anyhow::Result<()> {
        if self.ops == 0 {
            anyhow::bail!(
                "{what}: no request succeeded ({} errors; first: {})",
                self.errors,
                self.first_error.as_deref().unwrap_or("none")
            );
        }
        Ok(())
    }

    /// `", N errors (first: …)"` when there were errors.
    pub fn error_note(&self) -> String {
        match &self.first_error {
            Some(first) => format!(", {} errors (first: {first})", self.errors),
            None => String::new(),
        }
    }
}

/// Runs `calls.len()` closed-loop workers, worker `i` repeating `calls[i]` on its own connection
/// until the window ends. Each answer must be `expected`; it counts as `msgs_per_call` messages.
pub async fn closed_loop(
    target: &Target,
    calls: Vec<Call>,
    window: Window,
    expected: StatusCode,
    msgs_per_call: u64,
) -> Tally {
    let workers: Vec<_> = calls
        .into_iter()
        .map(|call| {
            let target = target.clone();
            tokio::spawn(async move {
                let mut tally = Tally::default();
                let Some(mut conn) = connect(&target, &mut tally).await else { return tally };
                loop {
                    let started = Instant::now();
                    if started >= window.end {
                        return tally;
                    }
                    match conn.send(&call).await {
                        Ok((status, _)) if status == expected => {
                            let finished = Instant::now();
                            tally.msgs_total += msgs_per_call;
                            if window.contains(started, finished) {
                                tally.ops += 1;
                                tally.msgs += msgs_per_call;
                                tally.latencies.record(finished - started);
                            }
                        }
                        Ok((status, body)) => tally.error(format!("{status}: {}", String::from_utf8_lossy(&body))),
                        Err(err) => {
                            tally.error(format!("{err:#}"));
                            // Do not spin on a dead server.
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    }
                }
            })
        })
        .collect();
    join(workers).await
}

/// A worker's connection; `None` (the failure counted in `tally`) when it cannot be made, and the
/// worker ends with what it counted.
pub async fn connect(target: &Target, tally: &mut Tally) -> Option<Conn> {
    match target.connect().await {
        Ok(conn) => Some(conn),
        Err(err) => {
            tally.error(format!("{err:#}"));
            None
        }
    }
}

/// Every worker's tally, merged; a worker that panicked counts as an error.
pub async fn join(workers: Vec<tokio::task::JoinHandle<Tally>>) -> Tally {
    let mut total = Tally::default();
    for worker in workers {
        match worker.await {
            Ok(tally) => total.merge(tally),
            Err(err) => total.error(format!("worker panicked: {err}")),
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_counts_only_requests_inside_it() {
        let w = Window::after(Duration::from_millis(100), Duration::from_secs(1));
        let before = w.measure_from - Duration::from_millis(1);
        assert!(!w.contains(before, w.measure_from + Duration::from_millis(5)));
        assert!(w.contains(w.measure_from, w.measure_from + Duration::from_millis(5)));
        assert!(!w.contains(w.end - Duration::from_millis(1), w.end + Duration::from_millis(1)));
        assert!((w.seconds() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn tallies_merge_and_keep_the_first_error() {
        let mut a = Tally { ops: 2, msgs: 200, ..Tally::default() };
        let mut b = Tally { ops: 1, msgs: 100, ..Tally::default() };
        b.error("429: slow down");
        b.error("500");
        a.merge(b);
        assert_eq!((a.ops, a.msgs, a.errors), (3, 300, 2));
        assert_eq!(a.error_note(), ", 2 errors (first: 429: slow down)");
        assert!(a.ensure_progress("x").is_ok());
        assert!(Tally::default().ensure_progress("x").is_err());
    }
}
