//! Replica acknowledgements (`AQS_REDIS_REPLICA_ACKS`): no write is answered until that many
//! replicas of the queue's primary have it, so a failover that promotes a replica loses nothing
//! that was acknowledged (a publish's message, a consume's leases, an ack's removal).
//!
//! Redis `WAIT n timeout` answers once `n` replicas have every write the connection it is sent on
//! made, and blocks that connection until then: a `WAIT` on the connection carrying this
//! process's traffic would hold every other request's command behind it for a replica's round
//! trip. So `WAIT`s go on a connection of their own, opened on first use, and each covers the
//! process's writes through a marker:
//!
//! 1. the marker (a key of this process in the same hash slot as the writes) is set on the `WAIT`
//!    connection once the writes' replies came back, so Redis ran it after them, and Redis
//!    replicates in the order it ran;
//! 2. `WAIT` on that connection then covers the marker, hence the writes;
//! 3. meanwhile the marker is read back and deleted (`GETDEL`, a write) through the connection that
//!    carried the writes: it must find it, which proves that connection reaches the same primary,
//!    writable, and not a server the other one has left (during a failover the two could briefly
//!    follow different primaries);
//! 4. the round answers within twice `AQS_REDIS_REPLICA_ACK_TIMEOUT_MS` of the moment the write
//!    was sent ([`CONFIRM_WITHIN_TIMEOUTS`]), or the write is not confirmed, whatever it says. Steps 1 to 3 prove
//!    where the connections lead *now*, not where the writes went: both connections follow a
//!    failover (the cluster client by `MOVED` and by retrying a command its dead node never
//!    answered, the Sentinel client by asking the Sentinels again). A write the old primary took
//!    just before it died, whose round then reached the new primary once the old one had come back
//!    as its replica, passed steps 1 to 3 while the write was gone: the cluster failover test lost
//!    one acknowledged publish that way on a loaded machine. A promotion cannot happen sooner than
//!    the old primary's failure is detected (`cluster-node-timeout`, Sentinel's
//!    `down-after-milliseconds`, both far above twice the timeout in any sane deployment), so a
//!    round that ends in time ran on the primary that took the writes.
//!
//! The writes of a primary share rounds (group commit): a write that finishes while
//! [`ROUNDS_IN_FLIGHT`] rounds of its primary are under way waits with the others that finish
//! meanwhile for the next round; otherwise its round starts at once, on a `WAIT` connection of its
//! own (a `WAIT` holds its connection), rather than after the round under way.
//!
//! Fewer replicas than asked within the timeout is `503 replication_timeout`: the write happened on
//! the primary and may or may not survive a failover, so the client retries it (an idempotency key
//! makes the publish safe to retry; an ack or nack of the same receipt is idempotent in effect).
//! After a failover the new primary has no replicas until the old one comes back as one, so
//! writes answer 503 until then rather than being acknowledged with no copy anywhere else.

use crate::error::{StorageError, StorageResult};
use aqs_core::redis_conn::{self, RedisConn, RedisOptions};
use redis::cluster_routing::{Route, SlotAddr};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// What a round answered: how many replicas confirmed, or why it could not be asked.
type Confirmed = Result<u32, String>;

/// How long a marker outlives a round that could not delete it (its process died mid-round).
const MARKER_TTL_MS: u64 = 60_000;

/// A write is confirmed only if its round answers within this many replica-ack timeouts of the
/// write being sent to Redis: one for a round already under way when it finished, one for its own
/// (the module's step 4).
const CONFIRM_WITHIN_TIMEOUTS: u32 = 2;

/// How long opening a `WAIT` connection may take before the round's writes answer 503.
const OPEN_TIMEOUT: Duration = Duration::from_secs(5);

/// Rounds of one primary under way at once, each on its own `WAIT` connection. With one, a write
/// finishing just after a round began waited for the rest of it and then the whole next one; in
/// the bench (2026-12-05) two gave batched publish 0.93–0.96× its rate without acks, one
/// 0.79–0.93× and four 0.87–0.94×, with single publish no better.
const ROUNDS_IN_FLIGHT: usize = 2;

pub struct ReplicaAcks {
    replicas: u32,
    timeout: Duration,
    marks: Arc<Marks>,
    /// One group per primary (per slot on a cluster: a `WAIT` is routed by slot).
    groups: Mutex<HashMap<Option<Route>, Arc<Group>>>,
}

/// The connections the `WAIT`s block, and the markers they wait for.
struct Marks {
    /// Where Redis is: the same servers the writes go to.
    options: RedisOptions,
    /// One per lane of rounds in flight, opened on its first round; dropped after an error, to be
    /// opened again by the next.
    conns: [tokio::sync::Mutex<Option<RedisConn>>; ROUNDS_IN_FLIGHT],
    /// `<namespace>:replica-mark:<process>:`, the markers' names before their hash tag.
    prefix: String,
    /// Each marker's value, new for every round.
    next: AtomicU64,
}

#[derive(Default)]
struct Group {
    state: Mutex<GroupState>,
}

#[derive(Default)]
struct GroupState {
    /// Which lanes have a leader task running rounds for this group.
    leading: [bool; ROUNDS_IN_FLIGHT],
    /// Writes whose replies came back: the next round covers them.
    waiting: Vec<oneshot::Sender<Confirmed>>,
}

impl ReplicaAcks {
    /// Acks of `replicas` replicas within `timeout`; markers named `<marker_prefix><lane>:{tag}`, one
    /// prefix per process.
    pub fn new(replicas: u32, timeout: Duration, options: RedisOptions, marker_prefix: String) -> Self {
        let marks = Marks { options, conns: Default::default(), prefix: marker_prefix, next: AtomicU64::new(1) };
        Self { replicas, timeout, marks: Arc::new(marks), groups: Mutex::default() }
    }

    /// No replica acks (the default): writes are answered as soon as the primary ran them.
    pub fn off() -> Self {
        Self::new(0, Duration::from_secs(1), RedisOptions::default(), String::new())
    }

    /// Whether writes wait for replicas at all.
    pub fn enabled(&self) -> bool {
        self.replicas > 0
    }

    /// Returns once `self.replicas` replicas of the primary owning `key` have every write this
    /// process sent it through `conn` so far, the last of them at `sent`; `replication_timeout`
    /// if fewer confirm in time, or if the confirmation comes too late to be about the primary
    /// that took the writes (the module's step 4).
    pub async fn confirm(&self, conn: &RedisConn, key: &str, sent: std::time::Instant) -> StorageResult<()> {
        if !self.enabled() {
            return Ok(());
        }
        let group = self.group(conn.primary_of(key));
        let (sender, confirmed) = oneshot::channel();
        let free_lane = {
            let mut state = group.state.lock().expect("replica acks lock");
            state.waiting.push(sender);
            let free = state.leading.iter().position(|busy| !busy);
            if let Some(lane) = free {
                state.leading[lane] = true;
            }
            free
        };
        if let Some(lane) = free_lane {
            let round = Round {
                writes: conn.clone(),
                marks: self.marks.clone(),
                lane,
                key: key.to_owned(),
                replicas: self.replicas,
                timeout: self.timeout,
            };
            tokio::spawn(lead_group(group, round));
        }
        // Checked when the round answers, not raced against a timer: a round ends by itself (its
        // `WAIT` has the timeout), so no timer per write is needed.
        let confirmed = confirmed.await;
        let within = self.timeout * CONFIRM_WITHIN_TIMEOUTS;
        match confirmed {
            Ok(Ok(n)) if n >= self.replicas && sent.elapsed() > within => Err(StorageError::NotReplicated(format!(
                "the write was confirmed by {n} replica(s) only {} ms after it was sent, later than {} ms: the \
                 confirmation may come from a primary a failover promoted meanwhile, so the write may or may not be \
                 stored: retry it (with the same idempotency key for a publish)",
                sent.elapsed().as_millis(),
                within.as_millis()
            ))),
            Ok(Ok(n)) if n >= self.replicas => Ok(()),
            Ok(Ok(n)) => Err(StorageError::NotReplicated(format!(
                "the write was not confirmed by {} replica(s) within {} ms ({n} confirmed); it may or may not \
                 be stored: retry it (with the same idempotency key for a publish)",
                self.replicas,
                self.timeout.as_millis()
            ))),
            Ok(Err(cause)) => {
                tracing::warn!(error = %cause, "cannot ask Redis whether replicas have the write");
                Err(StorageError::Unavailable { cause })
            }
            Err(_) => Err(StorageError::Unavailable { cause: "the replica-ack group ended without an answer".into() }),
        }
    }

    fn group(&self, primary: Option<Route>) -> Arc<Group> {
        self.groups.lock().expect("replica acks lock").entry(primary).or_default().clone()
    }
}

/// Runs one round after another on `round`'s lane while writes wait, each answering every write
/// that was waiting when it began; ends when none is left.
async fn lead_group(group: Arc<Group>, mut round: Round) {
    loop {
        let waiting = {
            let mut state = group.state.lock().expect("replica acks lock");
            if state.waiting.is_empty() {
                state.leading[round.lane] = false;
                return;
            }
            std::mem::take(&mut state.waiting)
        };
        let confirmed = round.run().await;
        for sender in waiting {
            // A request that went away (its client hung up) no longer needs its answer.
            let _gone = sender.send(confirmed.clone());
        }
    }
}

impl Marks {
    /// `lane`'s `WAIT` connection, opened now if there is none. A clone: rounds of other primaries
    /// (a cluster's) run on the same lane at the same time, each on its own node's connection.
    async fn connection(&self, lane: usize) -> Result<RedisConn, String> {
        let mut slot = self.conns[lane].lock().await;
        if let Some(conn) = slot.as_ref() {
            return Ok(conn.clone());
        }
        // Bounded: a Redis still loading its data set would keep `open` waiting.
        let opening = tokio::time::timeout(OPEN_TIMEOUT, redis_conn::open(&self.options));
        let conn = opening
            .await
            .map_err(|_| "no connection for replica acks within 5 s".to_owned())?
            .map_err(|err| format!("{err:#}"))?;
        Ok(slot.insert(conn).clone())
    }
}

/// What a group's rounds need: the connection that carried the writes and a key of their primary.
struct Round {
    writes: RedisConn,
    marks: Arc<Marks>,
    /// Which of the `WAIT` connections this group's leader uses.
    lane: usize,
    key: String,
    replicas: u32,
    timeout: Duration,
}

impl Round {
    /// One marker set, waited for and read back (the module's steps 1 to 3).
    async fn run(&mut self) -> Confirmed {
        let marker = marker_for(&self.marks.prefix, self.lane, &self.key)?;
        let value = self.marks.next.fetch_add(1, Ordering::Relaxed);
        let mut waits = self.marks.connection(self.lane).await?;
        let result = self.mark_and_wait(&mut waits, &marker, value).await;
        if result.is_err() {
            // The next round opens a fresh connection rather than trusting one that failed.
            *self.marks.conns[self.lane].lock().await = None;
        }
        result
    }

    async fn mark_and_wait(&mut self, waits: &mut RedisConn, marker: &str, value: u64) -> Confirmed {
        let set = redis::cmd("SET").arg(marker).arg(value).arg("PX").arg(MARKER_TTL_MS).clone();
        set.query_async::<()>(waits).await.map_err(|err| err.to_string())?;
        let read_back = redis::cmd("GETDEL").arg(marker).clone();
        let (confirmed, found) = tokio::join!(
            waits.wait_for_replicas(marker, self.replicas, self.timeout),
            read_back.query_async::<Option<u64>>(&mut self.writes)
        );
        let found = found.map_err(|err| format!("reading the replica-ack marker back: {err}"))?;
        if found != Some(value) {
            return Err(format!(
                "the connection carrying the writes does not reach the primary that took the replica-ack marker \
                 (found {found:?}, set {value}); a failover is under way"
            ));
        }
        confirmed.map_err(|err| err.to_string())
    }
}

/// The marker for writes to `key` waited for on `lane`: `prefix`, the lane (rounds on other lanes
/// set their own markers meanwhile) and the part of `key` Redis Cluster hashes (its hash tag, else
/// the whole key) as the marker's hash tag, so both live in one slot, on one primary.
fn marker_for(prefix: &str, lane: usize, key: &str) -> Result<String, String> {
    let hashed = hash_tag(key).unwrap_or(key);
    let marker = format!("{prefix}{lane}:{{{hashed}}}");
    if Route::with_key(&marker, SlotAddr::Master) != Route::with_key(key, SlotAddr::Master) {
        // Only a key without a hash tag that holds braces gets here; none of ours does.
        return Err(format!("no replica-ack marker shares the slot of {key:?}"));
    }
    Ok(marker)
}

/// What Redis Cluster hashes of a key that has a hash tag: the text between its first `{` and
/// the next `}`, when not empty.
fn hash_tag(key: &str) -> Option<&str> {
    let open = key.find('{')? + 1;
    let len = key[open..].find('}')?;
    Some(&key[open..open + len]).filter(|tag| !tag.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use aqs_core::ids::QueueId;
    use aqs_core::keys::Keys;

    #[test]
    fn a_marker_shares_the_slot_of_every_key_written_with_replica_acks() {
        let keys = Keys::new("aqs");
        let queue = keys.queue(QueueId::new());
        for key in [queue.meta(), keys.token("ab12"), keys.queues(), keys.slug("image-jobs")] {
            let marker = marker_for("aqs:replica-mark:p1:", 2, &key).unwrap();
            assert!(marker.starts_with("aqs:replica-mark:p1:2:{"), "{marker}");
        }
        assert_eq!(
            marker_for("m:", 0, &queue.meta()).unwrap(),
            format!("m:0:{{{}}}", hash_tag(&queue.meta()).unwrap())
        );
        assert_eq!(marker_for("m:", 3, "plain").unwrap(), "m:3:{plain}");
        // A key Redis hashes whole although it holds a brace has no marker, rather than a wrong one.
        assert!(marker_for("m:", 0, "a}b").is_err());
        assert_eq!(hash_tag("x{}y{z}"), None);
    }
}
