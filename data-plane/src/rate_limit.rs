//! Per-token rate limits and the last-use stamp, kept per process: with N replicas behind a load
//! balancer a token can reach N times these rates. Token buckets:
//!
//! - publish, consume, ack and nack: 1,000 requests per second;
//! - stats, peek and the dead-letter list: 120 per minute;
//! - purge, dead-letter replay and dead-letter purge: 6 per minute.
//!
//! Only valid tokens get buckets (a bad one is a 401 before). A bucket idle for a minute has
//! refilled completely, so dropping it changes nothing: the map is swept of those every minute.
//! It holds at most [`CAPACITY`] tokens; should more be active within one minute, the least
//! recently seen half is dropped (they start again with a full bucket).

use aqs_core::error::ApiError;
use aqs_core::limits;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use uuid::Uuid;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Messages = 0,
    Reads = 1,
    Actions = 2,
}

impl Class {
    /// (burst, refill per second)
    fn budget(self) -> (f64, f64) {
        match self {
            Class::Messages => {
                (f64::from(limits::PUBLISH_CONSUME_PER_SECOND), f64::from(limits::PUBLISH_CONSUME_PER_SECOND))
            }
            Class::Reads => (f64::from(limits::STATS_PER_MINUTE), f64::from(limits::STATS_PER_MINUTE) / 60.0),
            Class::Actions => {
                (f64::from(limits::ADMIN_ACTIONS_PER_MINUTE), f64::from(limits::ADMIN_ACTIONS_PER_MINUTE) / 60.0)
            }
        }
    }
}

#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

struct TokenUsage {
    buckets: [Option<Bucket>; 3],
    last_recorded_ms: u64,
    seen: Instant,
}

/// How often a token's last use is written to Redis.
const RECORD_EVERY_MS: u64 = 60_000;
/// The most tokens with buckets.
pub const CAPACITY: usize = 100_000;
/// Every bucket is full again after this long idle (the slowest refill: 6 or 120 per minute), and
/// the sweep runs this often.
const IDLE: Duration = Duration::from_secs(60);

pub struct Usage {
    inner: Mutex<Buckets>,
    capacity: usize,
}

struct Buckets {
    tokens: HashMap<Uuid, TokenUsage>,
    swept_at: Instant,
}

impl Default for Usage {
    fn default() -> Self {
        Self::with_capacity(CAPACITY)
    }
}

/// The request may go ahead; `record_use` says the token's last use is due to be written.
pub struct Admitted {
    pub record_use: bool,
}

impl Usage {
    fn with_capacity(capacity: usize) -> Self {
        Self { inner: Mutex::new(Buckets { tokens: HashMap::new(), swept_at: Instant::now() }), capacity }
    }

    /// How many tokens have buckets.
    pub fn len(&self) -> usize {
        self.inner.lock().expect("usage lock").tokens.len()
    }

    /// Takes one request of `class` from `token`'s budget, or answers 429 with Retry-After.
    pub fn admit(&self, token: Uuid, class: Class, now_ms: u64) -> Result<Admitted, ApiError> {
        let now = Instant::now();
        let mut inner = self.inner.lock().expect("usage lock");
        let full = inner.tokens.len() >= self.capacity && !inner.tokens.contains_key(&token);
        if full || now.duration_since(inner.swept_at) >= IDLE {
            inner.sweep(now, self.capacity);
        }
        let usage =
            inner.tokens.entry(token).or_insert(TokenUsage { buckets: [None; 3], last_recorded_ms: 0, seen: now });
        usage.seen = now;
        let (burst, per_sec) = class.budget();
        let bucket = usage.buckets[class as usize].get_or_insert(Bucket { tokens: burst, at: now });
        bucket.tokens = (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * per_sec).min(burst);
        bucket.at = now;
        if bucket.tokens < 1.0 {
            let retry_after_secs = ((1.0 - bucket.tokens) / per_sec).ceil().max(1.0) as u64;
            return Err(ApiError::RateLimited {
                message: "too many requests for this token; slow down".into(),
                retry_after_secs,
            });
        }
        bucket.tokens -= 1.0;
        let record_use = now_ms.saturating_sub(usage.last_recorded_ms) >= RECORD_EVERY_MS;
        if record_use {
            usage.last_recorded_ms = now_ms;
        }
        Ok(Admitted { record_use })
    }
}

impl Buckets {
    fn sweep(&mut self, now: Instant, capacity: usize) {
        self.tokens.retain(|_, u| now.duration_since(u.seen) < IDLE);
        if self.tokens.len() >= capacity {
            let mut seen: Vec<Instant> = self.tokens.values().map(|u| u.seen).collect();
            let middle = seen.len() / 2;
            let (_, cut, _) = seen.select_nth_unstable(middle);
            let cut = *cut;
            self.tokens.retain(|_, u| u.seen > cut);
        }
        if self.tokens.capacity() > 2 * self.tokens.len().max(64) {
            self.tokens.shrink_to(2 * self.tokens.len());
        }
        self.swept_at = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_allow_six_then_refuse_with_retry_after() {
        let usage = Usage::default();
        let token = Uuid::new_v4();
        for _ in 0..6 {
            assert!(usage.admit(token, Class::Actions, 1).is_ok());
        }
        match usage.admit(token, Class::Actions, 1) {
            Err(ApiError::RateLimited { retry_after_secs, .. }) => assert!((1..=10).contains(&retry_after_secs)),
            _ => panic!("expected rate_limited"),
        }
        assert!(usage.admit(token, Class::Messages, 1).is_ok(), "classes have separate budgets");
        assert!(usage.admit(Uuid::new_v4(), Class::Actions, 1).is_ok(), "tokens have separate budgets");
    }

    #[test]
    fn last_use_is_recorded_once_a_minute() {
        let usage = Usage::default();
        let token = Uuid::new_v4();
        assert!(usage.admit(token, Class::Messages, 1_000_000).unwrap().record_use);
        assert!(!usage.admit(token, Class::Messages, 1_030_000).unwrap().record_use);
        assert!(usage.admit(token, Class::Messages, 1_060_000).unwrap().record_use);
    }

    #[test]
    fn the_buckets_stay_within_their_bound() {
        let usage = Usage::with_capacity(100);
        let first = Uuid::new_v4();
        usage.admit(first, Class::Messages, 1).unwrap();
        for _ in 0..1_000 {
            usage.admit(Uuid::new_v4(), Class::Messages, 1).unwrap();
            assert!(usage.len() <= 100);
        }
        assert!(usage.len() > 1, "only the least recently seen half goes: {}", usage.len());
    }

    #[test]
    fn idle_buckets_are_swept() {
        let usage = Usage::default();
        for _ in 0..10 {
            usage.admit(Uuid::new_v4(), Class::Actions, 1).unwrap();
        }
        {
            let mut inner = usage.inner.lock().unwrap();
            let past = Instant::now() - IDLE;
            inner.swept_at = past;
            inner.tokens.values_mut().for_each(|u| u.seen = past);
        }
        usage.admit(Uuid::new_v4(), Class::Actions, 1).unwrap();
        assert_eq!(usage.len(), 1, "full buckets idle for a minute are dropped");
    }
}
