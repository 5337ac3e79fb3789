//! Replica acknowledgements (`AQS_REDIS_REPLICA_ACKS`): no write is answered until that many
//! replicas of the queue's primary have it, so a failover that promotes a replica loses nothing
//! that was acknowledged (a publish's message, a consume's leases, an ack's removal).
//!
//! Redis `WAIT n timeout` blocks the connection it is sent on until `n` replicas have every write
//! that connection sent before it. This process sends all of a primary's writes over one
//! multiplexed connection, so one `WAIT` covers every write whose reply came back before it was
//! sent: the writes of a primary share it (group commit). One `WAIT` per primary is in flight at a
//! time (a second one would only queue behind it on the same connection); the writes that finish
//! meanwhile wait together for the next. A write's own `WAIT` is always sent after its reply came
//! back, hence after Redis ran it.
//!
//! Fewer replicas than asked within the timeout is `503 replication_timeout`: the write happened on
//! the primary and may or may not survive a failover, so the client retries it (an idempotency key
//! makes the publish safe to retry; an ack or nack of the same receipt is idempotent in effect).
//! After a failover the new primary has no replicas until the old one comes back as one, so
//! writes answer 503 until then rather than being acknowledged with no copy anywhere else.

use crate::error::{StorageError, StorageResult};
use aqs_core::redis_conn::RedisConn;
use redis::cluster_routing::Route;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// What a `WAIT` answered: how many replicas confirmed, or why it could not be asked.
type Confirmed = Result<u32, String>;

pub struct ReplicaAcks {
    replicas: u32,
    timeout: Duration,
    /// One group per primary (per slot on a cluster: a `WAIT` is routed by slot).
    groups: Mutex<HashMap<Option<Route>, Arc<Group>>>,
}

#[derive(Default)]
struct Group {
    state: Mutex<GroupState>,
}

#[derive(Default)]
struct GroupState {
    /// A leader task is sending `WAIT`s for this group.
    leading: bool,
    /// Writes whose replies came back: the next `WAIT` covers them.
    waiting: Vec<oneshot::Sender<Confirmed>>,
}

impl ReplicaAcks {
    pub fn new(replicas: u32, timeout: Duration) -> Self {
        Self { replicas, timeout, groups: Mutex::default() }
    }

    /// Whether writes wait for replicas at all.
    pub fn enabled(&self) -> bool {
        self.replicas > 0
    }

    /// Returns once `self.replicas` replicas of the primary owning `key` have every write this
    /// process sent it so far; `replication_timeout` if fewer confirm in time.
    pub async fn confirm(&self, conn: &RedisConn, key: &str) -> StorageResult<()> {
        if !self.enabled() {
            return Ok(());
        }
        let group = self.group(conn.primary_of(key));
        let (sender, confirmed) = oneshot::channel();
        let lead = {
            let mut state = group.state.lock().expect("replica acks lock");
            state.waiting.push(sender);
            !std::mem::replace(&mut state.leading, true)
        };
        if lead {
            tokio::spawn(lead_group(group, conn.clone(), key.to_owned(), self.replicas, self.timeout));
        }
        match confirmed.await {
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

/// Sends one `WAIT` after another while writes wait, each answering every write that was waiting
/// when it was sent; ends when none is left.
async fn lead_group(group: Arc<Group>, mut conn: RedisConn, key: String, replicas: u32, timeout: Duration) {
    loop {
        let waiting = {
            let mut state = group.state.lock().expect("replica acks lock");
            if state.waiting.is_empty() {
                state.leading = false;
                return;
            }
            std::mem::take(&mut state.waiting)
        };
        let confirmed = conn.wait_for_replicas(&key, replicas, timeout).await.map_err(|err| err.to_string());
        for sender in waiting {
            // A request that went away (its client hung up) no longer needs its answer.
            let _gone = sender.send(confirmed.clone());
        }
    }
}
