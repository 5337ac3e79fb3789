//! Per-token rate limits, held in Redis so that they hold for the whole deployment, however many
//! replicas serve the token:
//!
//! - publish, consume, ack, nack and extend: 1,000 requests per second ([`Class::Messages`]);
//! - stats, peek and the dead-letter list: 120 per minute ([`Class::Reads`]);
//! - purge, dead-letter replay and dead-letter purge: 6 per minute ([`Class::Actions`]).
//!
//! Each token has one bucket per class, a key in its queue's hash slot (`Keys::rate_bucket`),
//! charged inside the script the request runs anyway (`scripts/rate.lua`, a GCRA): no extra round
//! trip, and a refused request changes nothing else. A handler gets a [`Charge`] from
//! `QueueContext::authorize` and runs its scripts through [`Engine::charged`]; only the first
//! script of a request is charged (a long poll's later attempts, a purge's later chunks, a publish
//! retried after giving back storage lease are the same request). A request answered without a
//! script (bad input, say) costs Redis nothing and is not counted.

use super::Engine;
use aqs_core::error::ApiError;
use aqs_core::ids::QueueId;
use aqs_core::keys::Keys;
use aqs_core::limits;
use redis::{ScriptInvocation, Value};
use uuid::Uuid;

/// A family of routes sharing one budget per token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Messages,
    Reads,
    Actions,
}

impl Class {
    /// Requests per window, and the window (ms): the bucket holds `budget` requests and refills
    /// one every `window / budget` ms.
    fn budget(self) -> (u64, u64) {
        match self {
            Class::Messages => (u64::from(limits::PUBLISH_CONSUME_PER_SECOND), 1_000),
            Class::Reads => (u64::from(limits::STATS_PER_MINUTE), 60_000),
            Class::Actions => (u64::from(limits::ADMIN_ACTIONS_PER_MINUTE), 60_000),
        }
    }

    /// The bucket key's last part.
    fn suffix(self) -> &'static str {
        match self {
            Class::Messages => "m",
            Class::Reads => "r",
            Class::Actions => "a",
        }
    }
}

/// One request of `class` by `token`, at `now_ms` (the replica's clock, as every script deadline).
#[derive(Clone, Copy, Debug)]
pub struct Charge {
    pub token: Uuid,
    pub class: Class,
    pub now_ms: u64,
}

impl Charge {
    pub(super) fn bucket(&self, keys: &Keys, queue: QueueId) -> String {
        keys.rate_bucket(queue, self.token, self.class.suffix())
    }

    /// The values rate.lua takes off the front of ARGV: 'rl', budget, interval ms, now ms.
    pub(super) fn args(&self) -> [u64; 3] {
        let (budget, window_ms) = self.class.budget();
        [budget, window_ms / budget, self.now_ms]
    }

    /// Makes `inv` a charged call: the ARGV opening (call before any other argument) and the
    /// bucket as the last key (call after every other key).
    pub(super) fn open_args(&self, inv: &mut ScriptInvocation<'_>) {
        inv.arg("rl");
        for value in self.args() {
            inv.arg(value);
        }
    }
}

/// rate.lua's refusal, `{'rate_limited', wait ms, budget, window ms}`, as the API's answer; `None`
/// for any other reply.
pub(super) fn refusal(reply: &Value) -> Option<ApiError> {
    let Value::Array(items) = reply else { return None };
    match items.as_slice() {
        [Value::BulkString(word), Value::Int(wait_ms), Value::Int(budget), Value::Int(window_ms)]
            if word == b"rate_limited" =>
        {
            let secs = |ms: i64| u64::try_from(ms).unwrap_or(0).div_ceil(1000).max(1);
            Some(ApiError::RateLimited {
                message: "too many requests for this token; slow down".into(),
                retry_after_secs: secs(*wait_ms),
                limit: u64::try_from(*budget).unwrap_or(0),
                window_secs: secs(*window_ms),
            })
        }
        _ => None,
    }
}

impl Engine {
    /// This engine charging the next request's first script to `charge` (see the module note).
    pub fn charged(&self, charge: Charge) -> Engine {
        Engine { charge: Some(charge), ..self.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(items: Vec<Value>) -> Value {
        Value::Array(items)
    }

    #[test]
    fn a_refusal_rounds_the_wait_up_to_whole_seconds() {
        let word = || Value::BulkString(b"rate_limited".to_vec());
        let err = refusal(&reply(vec![word(), Value::Int(9_001), Value::Int(6), Value::Int(60_000)])).unwrap();
        match err {
            ApiError::RateLimited { retry_after_secs, limit, window_secs, .. } => {
                assert_eq!((retry_after_secs, limit, window_secs), (10, 6, 60));
            }
            other => panic!("{other:?}"),
        }
        let err = refusal(&reply(vec![word(), Value::Int(1), Value::Int(1000), Value::Int(1000)])).unwrap();
        assert!(matches!(err, ApiError::RateLimited { retry_after_secs: 1, window_secs: 1, .. }), "{err:?}");
    }

    #[test]
    fn other_replies_are_not_refusals() {
        assert!(refusal(&reply(vec![Value::BulkString(b"ok".to_vec()), Value::Int(1)])).is_none());
        assert!(refusal(&reply(vec![Value::Int(1), Value::Int(0)])).is_none());
        assert!(refusal(&Value::BulkString(b"1-0".to_vec())).is_none());
    }

    #[test]
    fn budgets_refill_in_whole_milliseconds() {
        for class in [Class::Messages, Class::Reads, Class::Actions] {
            let (budget, window_ms) = class.budget();
            assert_eq!(window_ms % budget, 0, "{class:?}");
        }
        let charge = Charge { token: Uuid::nil(), class: Class::Actions, now_ms: 5 };
        assert_eq!(charge.args(), [6, 10_000, 5]);
    }
}
