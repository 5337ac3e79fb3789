//! The open-loop arrival schedule: request `i` is due at `start + i / rate`, whatever happened to
//! the requests before it. Latency is measured from the due time, not from when the request was
//! actually sent, so a stalled server is charged for the requests it kept waiting (no coordinated
//! omission).

use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    start: Instant,
    interval_ns: f64,
    count: u64,
}

impl Schedule {
    /// `rate` arrivals per second for `duration`, starting at `start`.
    pub fn new(start: Instant, rate: f64, duration: Duration) -> Self {
        let rate = rate.max(1.0);
        Self { start, interval_ns: 1e9 / rate, count: (rate * duration.as_secs_f64()).floor() as u64 }
    }

    /// How many arrivals the schedule holds.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// When arrival `i` is due.
    pub fn due(&self, i: u64) -> Instant {
        self.start + Duration::from_nanos((i as f64 * self.interval_ns) as u64)
    }

    /// How many arrivals are due at or before `now` (capped at `count`): the dispatcher sends
    /// every one of them at once when it wakes late, instead of drifting.
    pub fn due_by(&self, now: Instant) -> u64 {
        if now < self.start {
            return 0;
        }
        let elapsed = (now - self.start).as_nanos() as f64;
        ((elapsed / self.interval_ns).floor() as u64 + 1).min(self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_are_evenly_spaced() {
        let t0 = Instant::now();
        let s = Schedule::new(t0, 1000.0, Duration::from_secs(2));
        assert_eq!(s.count(), 2000);
        assert_eq!(s.due(0), t0);
        assert_eq!(s.due(1), t0 + Duration::from_millis(1));
        assert_eq!(s.due(1500), t0 + Duration::from_millis(1500));
    }

    #[test]
    fn a_late_wake_up_releases_every_due_arrival() {
        let t0 = Instant::now();
        let s = Schedule::new(t0, 1000.0, Duration::from_secs(1));
        assert_eq!(s.due_by(t0), 1);
        assert_eq!(s.due_by(t0 + Duration::from_micros(999)), 1);
        assert_eq!(s.due_by(t0 + Duration::from_millis(10)), 11);
        assert_eq!(s.due_by(t0 + Duration::from_secs(5)), 1000);
    }

    #[test]
    fn nothing_is_due_before_the_start() {
        let t0 = Instant::now() + Duration::from_secs(1);
        let s = Schedule::new(t0, 10.0, Duration::from_secs(1));
        assert_eq!(s.due_by(Instant::now()), 0);
    }
}
