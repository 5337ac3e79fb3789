//! Per-token rate limits and the last-use stamp, kept per process: with N replicas behind a load
//! balancer a token can reach N times these rates. Token buckets:
//!
//! - publish, consume, ack and nack: 1,000 requests per second;
//! - stats, peek and the dead-letter list: 120 per minute;
//! - purge, dead-letter replay and dead-letter purge: 6 per minute.

use aqs_core::error::ApiError;
use aqs_core::limits;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;
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
const SWEEP_AT: usize = 10_000;

#[derive(Default)]
pub struct Usage {
    tokens: Mutex<HashMap<Uuid, TokenUsage>>,
}

/// The request may go ahead; `record_use` says the token's last use is due to be written.
pub struct Admitted {
    pub record_use: bool,
}

impl Usage {
    /// Takes one request of `class` from `token`'s budget, or answers 429 with Retry-After.
    pub fn admit(&self, token: Uuid, class: Class, now_ms: u64) -> Result<Admitted, ApiError> {
        let now = Instant::now();
        let mut tokens = self.tokens.lock().expect("usage lock");
        if tokens.len() >= SWEEP_AT && !tokens.contains_key(&token) {
            tokens.retain(|_, u| now.duration_since(u.seen).as_secs() < 120);
        }
        let usage = tokens.entry(token).or_insert(TokenUsage { buckets: [None; 3], last_recorded_ms: 0, seen: now });
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
}
