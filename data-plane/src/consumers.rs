//! Who consumes each queue, tallied in memory by this process and written to the queue's
//! `consumers` hash every [`FLUSH_EVERY`] (`aqs_engine::consumers`), for the console's Consumers
//! tab: so "why is nothing consumed?" has an answer (no consumer at all, one polling and finding
//! nothing, one receiving but never acknowledging).
//!
//! The consume and ack routes add to the tallies after their work is done: a mutex held for a map
//! update, no Redis call and no script on the request's path. A consumer is one token from one
//! client address with one user agent. Each keeps its last [`WINDOW_MINUTES`] minutes; one idle for
//! that long is dropped and its field deleted. At most [`CAPACITY`] consumers are tallied per
//! process: past it a new one is not counted (hostile clients cannot grow the map).

use crate::state::DataPlane;
use aqs_core::ids::QueueId;
use aqs_engine::{ConsumerTally, MinuteTally};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// How often the tallies are written to Redis.
pub const FLUSH_EVERY: Duration = Duration::from_secs(3);
/// Minutes kept per consumer.
pub const WINDOW_MINUTES: u64 = 10;
/// Consumers tallied per process at most.
pub const CAPACITY: usize = 10_000;
/// The longest user agent kept, in characters.
const AGENT_MAX_CHARS: usize = 200;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Who {
    queue: QueueId,
    token: Uuid,
    address: String,
    user_agent: String,
}

struct Tally {
    last_seen_ms: u64,
    minutes: Vec<MinuteTally>,
    /// Changed since the last flush.
    dirty: bool,
}

/// One queue's changes since the last flush: the tallies to write (keyed for their hash field) and
/// the keys of the consumers gone idle.
type Changes = (Vec<(String, ConsumerTally)>, Vec<String>);

/// This process's tallies.
#[derive(Default)]
pub struct Consumers {
    tallies: Mutex<HashMap<Who, Tally>>,
}

/// What one request did, for [`Consumers::record`].
#[derive(Clone, Copy, Debug, Default)]
pub struct Traffic {
    pub requests: u64,
    pub messages: u64,
    pub acked: u64,
}

impl Consumers {
    /// Adds one request of `token` on `queue` from `address` with `user_agent` at `now_ms`.
    pub fn record(&self, queue: QueueId, token: Uuid, address: &str, user_agent: &str, traffic: Traffic, now_ms: u64) {
        let who = Who {
            queue,
            token,
            address: address.to_owned(),
            user_agent: user_agent.chars().take(AGENT_MAX_CHARS).collect(),
        };
        let minute = now_ms / 60_000;
        let mut tallies = self.tallies.lock().expect("consumers lock");
        if !tallies.contains_key(&who) && tallies.len() >= CAPACITY {
            return;
        }
        let tally = tallies.entry(who).or_insert(Tally { last_seen_ms: now_ms, minutes: Vec::new(), dirty: true });
        tally.last_seen_ms = tally.last_seen_ms.max(now_ms);
        tally.dirty = true;
        if tally.minutes.last().is_none_or(|m| m.minute != minute) {
            tally.minutes.push(MinuteTally { minute, ..MinuteTally::default() });
            tally.minutes.retain(|m| m.minute + WINDOW_MINUTES > minute);
        }
        if let Some(m) = tally.minutes.last_mut() {
            m.requests += traffic.requests;
            m.messages += traffic.messages;
            m.acked += traffic.acked;
        }
    }

    /// How many consumers are tallied.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.tallies.lock().expect("consumers lock").len()
    }

    /// Per queue: the tallies changed since the last call (keyed for their hash field), and the
    /// keys of those idle past the window, which this call forgets.
    fn take_changes(&self, now_ms: u64) -> HashMap<QueueId, Changes> {
        let mut out: HashMap<QueueId, Changes> = HashMap::new();
        let mut tallies = self.tallies.lock().expect("consumers lock");
        let idle_after = WINDOW_MINUTES * 60_000;
        tallies.retain(|who, tally| {
            let key = field_key(who);
            if now_ms.saturating_sub(tally.last_seen_ms) >= idle_after {
                out.entry(who.queue).or_default().1.push(key);
                return false;
            }
            if tally.dirty {
                tally.dirty = false;
                let written = ConsumerTally {
                    token_id: who.token,
                    address: who.address.clone(),
                    user_agent: who.user_agent.clone(),
                    last_seen_ms: tally.last_seen_ms,
                    minutes: tally.minutes.clone(),
                };
                out.entry(who.queue).or_default().0.push((key, written));
            }
            true
        });
        out
    }
}

/// The consumer's part of its hash field: the token, the address and a digest of the user agent.
fn field_key(who: &Who) -> String {
    let digest = Sha256::digest(who.user_agent.as_bytes());
    format!("{}|{}|{}", who.token, who.address, hex::encode(&digest[..8]))
}

/// Writes the tallies every [`FLUSH_EVERY`]; a failed write is logged and its tallies written on
/// the next change.
pub fn spawn(state: DataPlane, shutdown: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(FLUSH_EVERY);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            flush(&state).await;
        }
    })
}

/// Writes what changed since the last flush.
pub async fn flush(state: &DataPlane) {
    let changes = state.consumers.take_changes(aqs_core::time::now_ms());
    for (queue, (tallies, gone)) in changes {
        if let Err(err) = state.engine.write_consumer_tallies(queue, &tallies, &gone).await {
            tracing::debug!(error = %err, %queue, "could not write the consumers' tallies");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_add_up_per_minute_and_idle_consumers_go() {
        let consumers = Consumers::default();
        let (queue, token) = (QueueId::new(), Uuid::new_v4());
        let t0 = 1_700_000_000_000 / 60_000 * 60_000;
        let consume = Traffic { requests: 1, messages: 3, acked: 0 };
        consumers.record(queue, token, "203.0.113.9", "curl/8", consume, t0);
        consumers.record(queue, token, "203.0.113.9", "curl/8", consume, t0 + 1_000);
        consumers.record(
            queue,
            token,
            "203.0.113.9",
            "curl/8",
            Traffic { acked: 5, ..Traffic::default() },
            t0 + 61_000,
        );
        let changes = consumers.take_changes(t0 + 62_000);
        let (tallies, gone) = &changes[&queue];
        assert!(gone.is_empty());
        let minutes = &tallies[0].1.minutes;
        assert_eq!((minutes[0].requests, minutes[0].messages, minutes[1].acked), (2, 6, 5));
        assert!(consumers.take_changes(t0 + 63_000).is_empty(), "nothing new, nothing written");
        let later = consumers.take_changes(t0 + 61_000 + WINDOW_MINUTES * 60_000);
        assert_eq!(later[&queue].1.len(), 1, "an idle consumer's field is deleted");
        assert_eq!(consumers.len(), 0);
    }
}
