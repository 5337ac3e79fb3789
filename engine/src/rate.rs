//! Per-token rate limits, held in Redis so that they hold for the whole deployment, however many
//! replicas serve the token:
//!
//! - publish, consume, ack, nack and extend: 1,000 requests per second ([`Class::Messages`]);
//! - stats, peek and the dead-letter list: 120 per minute ([`Class::Reads`]);
//! - purge, dead-letter replay and dead-letter purge: 6 per minute ([`Class::Actions`]).
//!
//! Each token has one bucket per class, a key in its queue's hash slot (`Keys::rate_bucket`),
//! charged inside the script the request runs anyway (`scripts/rate.lua`, a GCRA): no extra round
//! trip, and a refused request changes nothing else. The data plane's route table names each
//! route's class; its handlers get a [`Charge`] and run their scripts through [`Engine::charged`]; only the first
//! script of a request is charged (a long poll's later attempts, a purge's later chunks, a publish
//! retried after giving back storage lease are the same request). A request answered without a
//! script (bad input, say) costs Redis nothing and is not counted.

use super::Engine;
use super::slices::Admission;
use crate::error::{StorageError, StorageResult};
use aqs_core::ids::QueueId;
use aqs_core::keys::Keys;
use aqs_core::limits;
use redis::{ScriptInvocation, Value};
use uuid::Uuid;

/// A family of routes sharing one budget per token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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

/// One request of `class` by `token` on `queue`, at `now_ms` (the replica's clock, as every script
/// deadline).
#[derive(Clone, Copy, Debug)]
pub struct Charge {
    pub queue: QueueId,
    pub token: Uuid,
    pub class: Class,
    pub now_ms: u64,
    /// How many requests to take from the budget at once (`slices.rs`); 1 unless the engine
    /// says otherwise.
    pub claim: u32,
}

impl Charge {
    pub fn new(queue: QueueId, token: Uuid, class: Class, now_ms: u64) -> Self {
        Self { queue, token, class, now_ms, claim: 1 }
    }

    pub(super) fn bucket(&self, keys: &Keys, queue: QueueId) -> String {
        keys.rate_bucket(queue, self.token, self.class.suffix())
    }

    /// The values rate.lua takes off the front of ARGV after 'rl': budget, interval ms, now ms,
    /// claim.
    pub(super) fn args(&self) -> [u64; 4] {
        let (budget, window_ms) = self.class.budget();
        [budget, window_ms / budget, self.now_ms, u64::from(self.claim)]
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

/// A charged script's reply split: rate.lua's refusal (`{'rate_limited', wait ms, budget, window
/// ms}`) as the API's error; an admitted charge's `{'granted', n, reply}` as n and the script's
/// own reply; any other reply (an uncharged call's) as it is, with no grant.
pub(super) fn settle(reply: Value) -> Result<(Option<u32>, Value), StorageError> {
    if let Some(refused) = refusal(&reply) {
        return Err(refused);
    }
    let Value::Array(mut items) = reply else { return Ok((None, reply)) };
    if let [Value::BulkString(word), Value::Int(granted), ..] = items.as_slice()
        && word == b"granted"
        && items.len() <= 3
    {
        let granted = u32::try_from(*granted).unwrap_or(1);
        // A script's nil reply ends the Lua table early: the reply is then missing.
        let inner = if items.len() == 3 { items.pop().unwrap_or(Value::Nil) } else { Value::Nil };
        return Ok((Some(granted), inner));
    }
    Ok((None, Value::Array(items)))
}

fn refusal(reply: &Value) -> Option<StorageError> {
    let Value::Array(items) = reply else { return None };
    match items.as_slice() {
        [Value::BulkString(word), Value::Int(wait_ms), Value::Int(budget), Value::Int(window_ms)]
            if word == b"rate_limited" =>
        {
            let secs = |ms: i64| u64::try_from(ms).unwrap_or(0).div_ceil(1000).max(1);
            Some(StorageError::RateLimited {
                retry_after_secs: secs(*wait_ms),
                limit: u64::try_from(*budget).unwrap_or(0),
                window_secs: secs(*window_ms),
            })
        }
        _ => None,
    }
}

impl Engine {
    /// This engine charging the next request's first script to `charge` (see the module note),
    /// or, when this replica holds a slice of the token's budget (`slices.rs`), taking the
    /// request from that slice and charging nothing in Redis.
    pub fn charged(&self, charge: Charge) -> Engine {
        let charge = match self.slices.admit(charge.queue, charge.token, charge.class, charge.now_ms) {
            Admission::Held => None,
            Admission::Claim(claim) => Some(Charge { claim, ..charge }),
        };
        Engine { charge, ..self.clone() }
    }

    /// `reply` of a script run with this engine's charge: a refusal is the error `rate_limited`,
    /// a grant beyond the request's own is kept as a slice.
    pub(super) fn settle(&self, reply: Value) -> StorageResult<Value> {
        let (granted, reply) = settle(reply)?;
        if let (Some(granted), Some(charge)) = (granted, &self.charge) {
            self.slices.granted(charge, granted);
        }
        Ok(reply)
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
            StorageError::RateLimited { retry_after_secs, limit, window_secs, .. } => {
                assert_eq!((retry_after_secs, limit, window_secs), (10, 6, 60));
            }
            other => panic!("{other:?}"),
        }
        let err = refusal(&reply(vec![word(), Value::Int(1), Value::Int(1000), Value::Int(1000)])).unwrap();
        assert!(matches!(err, StorageError::RateLimited { retry_after_secs: 1, window_secs: 1, .. }), "{err:?}");
    }

    #[test]
    fn a_grant_is_split_from_the_scripts_own_reply() {
        let word = || Value::BulkString(b"granted".to_vec());
        let id = || Value::BulkString(b"1-0".to_vec());
        assert_eq!(settle(reply(vec![word(), Value::Int(8), id()])).unwrap(), (Some(8), id()));
        assert_eq!(settle(reply(vec![word(), Value::Int(1)])).unwrap(), (Some(1), Value::Nil), "a nil reply");
        let inner = reply(vec![Value::BulkString(b"ok".to_vec()), Value::Int(3)]);
        assert_eq!(settle(reply(vec![word(), Value::Int(2), inner.clone()])).unwrap(), (Some(2), inner.clone()));
        assert_eq!(settle(inner.clone()).unwrap(), (None, inner), "uncharged");
        assert_eq!(settle(id()).unwrap(), (None, id()));
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
        let charge = Charge::new(QueueId(Uuid::nil()), Uuid::nil(), Class::Actions, 5);
        assert_eq!(charge.args(), [6, 10_000, 5, 1]);
    }
}
