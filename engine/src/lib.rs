//! `aqs-engine`, the message engine: the one place that talks to Redis about messages, and the
//! one that wakes long polls after a write (`wake.rs`), whoever called it. It imports no plane: the
//! data plane is HTTP over it, the control plane and the console call it directly, and `aqs serve`
//! builds one per process and hands it to every role. Every operation is one Lua script
//! (`scripts/*.lua`, one per operation) run with one EVALSHA; purges and replays of a whole queue
//! run the same script in bounded chunks so Redis is never blocked for long. Every script but four
//! gets the standard queue keys and the `common.lua` prelude; publish, the hot path, stands alone
//! with the keys it touches (`publish_one.lua` for one plain message, `publish.lua` for the rest),
//! and the storage-lease scripts `lease.lua` and `flush.lua` take only the keys they use.
//!
//! # Structures (per queue, all under the hash tag `{q:ID}`, names from `aqs_core::keys`)
//!
//! - `s`: a stream with one consumer group `g` and one consumer `c`, read with `NOACK`: the group
//!   is only the cursor past which nothing was delivered. It holds every ready and leased message.
//!   Entries are version-1 records (`v`, `id`, `b`, `ct`, `a`, `g`, `pa`, `ik`, `n`, `sz`; see
//!   `scripts/common.lua`); a publish writes only what cannot be derived (`id`, `b`,
//!   and `ct`, `a`, `g`, `pa`, `ik` when they are not the default), and every script reads entries
//!   back whole through common.lua's `record`.
//! - `lease`: zset stream id → lease deadline (ms). Its members are exactly the leased entries.
//! - `tries`: hash stream id → deliveries since the entry was written, for a lease past its first
//!   (no field: the first). A queue an earlier version leased may still hold PEL records, whose
//!   counter stands until the lease is settled (`scripts/common.lua`, `tries_of`).
//! - `backoff`: zset stream id → due (ms): the leases a nack released (a subset of `lease`).
//! - `delayed` + `delayed:m`: messages published with a delay (zset message id → due, hash message
//!   id → cmsgpack'd record), promoted into the stream when due.
//! - `dlq` + `dlq:ix`: dead letters (stream, with reason `r`, attempts `at`, dead-at `da`) and
//!   message id → dlq stream id.
//! - `errors`: stream id → the last nack error. `stats`: `bytes` and per-UTC-day counters (single
//!   publishes are counted, and their bytes drawn, in process and added a few times a second:
//!   `ledger.rs`). `budget`: every replica's storage lease (`scripts/budget.lua`).
//! - `minutes`: the last hour per minute (published, delivered, acked, dead-lettered): one field
//!   per kind and minute, the key expiring an hour after its last count, old fields pruned by the
//!   sweeper (`scripts/minutes.lua`; `stats.rs` reads it).
//! - `meta`: the projected settings, plus `w`: until when (ms) a long poll may be waiting.
//! - `idem:<key>`: `id:fingerprint:published:available`, no TTL while the message is stored;
//!   `idem_ix`: every record's key with its expiry (+inf while stored), so that deleting the queue
//!   (`drop_queue.lua`) finds them, and the sweeper drops the expired ones from it.
//! - `large`: zset message id → body bytes of every stored message over 1 MiB (`large.rs`), so a
//!   payload-size downgrade can count what is still too large. publish.lua adds (publish_one.lua
//!   never sees such a message: the engine routes it to publish.lua); ack, purge and the DLQ purge
//!   remove, after one EXISTS per call; moves between stream, delayed and dlq leave it alone.
//! - `rl:{q:ID}:<token>:<class>` (outside the queue's key prefix, in its hash slot): a token's rate
//!   budget, charged by the first thing a charged script does (`rate.rs`, `scripts/rate.lua`).
//!
//! # The life of a message
//!
//! publish → (delayed → promoted) → stream, never delivered → consume: XREADGROUP NOACK moves the
//! cursor past it and the lease zset takes its deadline; the entries one consume read are a run,
//! named in their receipts → ack: XTRIM of a whole run at the stream's head, else XDEL, + ZREM,
//! bytes freed, the idempotency record gets a TTL of what remains of publish + 24 h. While `meta.w`
//! lies ahead, a publish PUBLISHes the number of messages it stored, and the publishing replica, on
//! the queue's wake channel; every other replica wakes that many of its long polls (`wake.rs`), not
//! all of them (the publishing one woke its own when the script returned). Without a waiter it
//! PUBLISHes nothing: a consume that finds nothing for a poll that will wait moves `w` up to the
//! poll's deadline in the same script, so no publish can fall between the empty answer and the
//! mark. An extend (a consumer's heartbeat, `extend.lua`) moves a current delivery's lease deadline
//! to now + the new lease, with ack's check of the receipt. A nack moves the lease deadline to
//! now + delay and marks it in `backoff`; a lease that runs out is simply due. The next consume
//! delivers due leases first (their tries go up by one); a due lease whose deliveries reached max
//! attempts is moved to the DLQ instead (reason: the nack's error, or "visibility timeout
//! expired"), by that consume or by the sweeper. `bury` dead-letters a current delivery at once
//! whatever its attempts (a push handler's non-retryable answer). `release` hands a delivery back
//! uncounted and due at once (a push dispatcher stopped before it sent it). Replay re-adds the
//! record to the stream with `n = 0` (attempts reset, same message id, new stream id).
//!
//! # Invariants
//!
//! - attempts of a delivery = entry `n` + its tries; a receipt names the stream id and
//!   that number, and ack/nack require both to be current, so an old receipt never touches a later
//!   delivery (`lease_lost`).
//! - A stream id is never reused and an entry is never rewritten in place (a redelivery keeps it, a
//!   replay writes a new id), so what a receipt says about its entry stays true: consume puts the
//!   entry's `n`, `sz` and whether it has an idempotency key into the (HMAC'd, version 2 or 3)
//!   receipt and ack checks the lease and its tries alone, reading the entry only to release an
//!   idempotency record or for a version 1 receipt. A lease implies its entry: every script that
//!   deletes a stream entry removes its lease in the same script.
//! - `lease` members = the leased entries; stream = never-delivered entries (after the group's
//!   last-delivered id) ∪ the leased ones. A message is in exactly one of: delayed, stream, dlq
//!   (each move writes the new place before deleting the old one, inside one script).
//! - `stats.bytes` + what replicas drew from their leases and have not flushed = Σ `sz` over
//!   delayed, stream and dlq (a crashed replica's expired lease counts whole: more, never less).
//!   A publish is admitted only if `stats.bytes` + every live lease + its bytes fit the storage
//!   limit (a single publish: if it fits its replica's lease); nothing is ever evicted or trimmed.
//! - Scripts never read the clock: `now_ms` comes from the calling replica (replicas are assumed
//!   NTP-synchronised; a skew of a few hundred ms only shifts lease and delay edges).
//! - A request charged to a token's rate budget (`rate.rs`) is checked by the first thing its
//!   script does: refused, it changes nothing. A request admitted from a slice of the budget that
//!   this replica claimed before (`slices.rs`) runs uncharged.

mod ack;
mod admin;
mod browse;
mod budget;
mod consume;
mod consumers;
mod dead_letters;
mod delete;
mod error;
mod extend;
mod large;
mod latency;
mod ledger;
mod lifecycle;
mod publish;
mod rate;
mod replication;
mod reply;
mod scratch;
mod scripts;
mod slices;
mod stats;
mod sweep;
mod wake;

pub use ack::NackResult;
pub use admin::{PURGE_CHUNK, PeekedMessage};
pub use browse::{BrowsedMessage, FIND_MAX_SCANNED, MessageKey, MessagePage, MessageRef, MessageState};
pub use consume::{ConsumeOutcome, Delivery};
pub use consumers::{CONSUMERS_TTL, ConsumerTally, MinuteTally};
pub use dead_letters::{DeadLetter, DeadLetterPage, PREVIEW_BYTES, REASON_FILTER_MAX, Selection};
pub use delete::Deleted;
pub use error::{StorageError, StorageResult};
pub use latency::{LATENCY_BUCKETS, Latency};
use ledger::Ledger;
pub use publish::{NewMessage, PublishOutcome, Published};
pub use rate::{Charge, Class};
pub use replication::ReplicaAcks;
pub use scripts::Scripts;
pub use stats::{DAILY_HISTORY_DAYS, DailyCount, MINUTE_HISTORY, MinuteCount, QueueStats};
pub use sweep::SweepOutcome;
pub use wake::{Waiter, Waiters};

use aqs_core::ids::{MessageId, QueueId};
use aqs_core::keys::Keys;
use aqs_core::redis_conn::RedisConn;
use redis::{Script, ScriptInvocation, Value};
use reply::{Reply, Status, unexpected};
use std::sync::Arc;
use std::time::Instant;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A script invocation that knows its script's name, for the script metrics. Derefs to the
/// `ScriptInvocation` it wraps, so keys and arguments are added as before.
pub(crate) struct Invocation<'a> {
    inv: ScriptInvocation<'a>,
    /// Named only when measured.
    script: &'a Script,
    /// The queue whose keys it touches: whose primary's replicas must have its writes.
    queue: Option<QueueId>,
}

impl<'a> std::ops::Deref for Invocation<'a> {
    type Target = ScriptInvocation<'a>;

    fn deref(&self) -> &Self::Target {
        &self.inv
    }
}

impl std::ops::DerefMut for Invocation<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.inv
    }
}

/// Runs the message scripts for any queue. Cheap to clone: every clone shares the process's
/// scripts, ledger, replica id, replica acks and long-poll waiters.
#[derive(Clone)]
pub struct Engine {
    conn: RedisConn,
    keys: Arc<Keys>,
    scripts: Arc<Scripts>,
    ledger: Arc<Ledger>,
    /// Names this process's storage leases (`budget.lua`) and wake-ups (`wake.rs`); new at every
    /// start.
    replica: Arc<str>,
    /// The request whose first script is charged to a token's rate budget (`charged`).
    charge: Option<Charge>,
    /// What this replica holds of busy tokens' message budgets (`slices.rs`).
    slices: Arc<slices::Slices>,
    /// How many replicas must have a write before it is answered (`replication.rs`).
    acks: Arc<ReplicaAcks>,
    /// This process's long polls, woken after every write that may give them something (`wake.rs`).
    waiters: Waiters,
}

impl Engine {
    pub fn new(conn: RedisConn, keys: Keys) -> Self {
        Self {
            conn,
            keys: Arc::new(keys),
            scripts: Arc::new(Scripts::new()),
            ledger: Arc::default(),
            replica: MessageId::new().to_string().into(),
            charge: None,
            slices: Arc::default(),
            acks: Arc::new(ReplicaAcks::off()),
            waiters: Waiters::default(),
        }
    }

    /// The engine a process runs: the configured namespace, and replica acks as configured.
    pub fn from_config(conn: RedisConn, config: &aqs_core::config::Config) -> Self {
        let timeout = std::time::Duration::from_millis(config.redis_replica_ack_timeout_ms);
        let engine = Self::new(conn, Keys::new(&config.redis_namespace));
        let options = aqs_core::redis_conn::RedisOptions::from_config(config);
        let markers = engine.keys.replica_mark_prefix(&engine.replica);
        engine.with_replica_acks(ReplicaAcks::new(config.redis_replica_acks, timeout, options, markers))
    }

    /// [`Engine::from_config`] with its scripts loaded ([`Engine::load_scripts`]).
    pub async fn loaded(conn: RedisConn, config: &aqs_core::config::Config) -> anyhow::Result<Self> {
        let engine = Self::from_config(conn, config);
        engine.load_scripts().await?;
        Ok(engine)
    }

    /// This engine with every acknowledged write waiting for `acks` (`AQS_REDIS_REPLICA_ACKS`).
    pub fn with_replica_acks(mut self, acks: ReplicaAcks) -> Self {
        self.acks = Arc::new(acks);
        self
    }

    /// Returns once the replicas `AQS_REDIS_REPLICA_ACKS` asks for have this process's writes to
    /// `key`'s primary: for writes made outside the scripts, such as the control plane's projection
    /// of settings and tokens, which share this engine's connection. The confirmation's deadline
    /// (`ReplicaAcks::confirm`) counts from this call, not from the writes: the projection is
    /// rebuilt from PostgreSQL after a failover anyway.
    pub async fn confirm_replicated(&self, keys: &[String]) -> StorageResult<()> {
        let since = Instant::now();
        for key in keys {
            self.acks.confirm(&self.conn, key, since).await?;
        }
        Ok(())
    }

    /// Loads every script (`SCRIPT LOAD`: a Lua error fails here, at start, not on a request) and
    /// names them to the script metrics. A process that must start while Redis is down skips this:
    /// the scripts then load on first use.
    pub async fn load_scripts(&self) -> anyhow::Result<()> {
        use anyhow::Context;
        let mut conn = self.conn();
        for (script, _) in self.scripts.named() {
            script.prepare_invoke().load_async(&mut conn).await.context("loading the engine's Lua scripts")?;
        }
        aqs_core::metrics::scripts_known(&Scripts::NAMES);
        Ok(())
    }

    /// This process's long polls: a poll registers here before its first consume attempt.
    pub fn waiters(&self) -> &Waiters {
        &self.waiters
    }

    /// Starts the wake-up subscriber (`wake.rs`): wake-ups other replicas publish reach this
    /// process's long polls. Ends when `shutdown` is cancelled.
    pub fn spawn_wake_subscriber(&self, shutdown: CancellationToken) -> JoinHandle<()> {
        wake::spawn_subscriber(self, shutdown)
    }

    /// This process among the replicas (storage leases, wake-ups).
    pub fn replica(&self) -> &str {
        &self.replica
    }

    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    pub fn scripts(&self) -> &Scripts {
        &self.scripts
    }

    pub fn conn(&self) -> RedisConn {
        self.conn.clone()
    }

    /// Starts an invocation of `script` (one of `self.scripts`) with no keys.
    fn prepare<'a>(&self, script: &'a Script) -> Invocation<'a> {
        Invocation { inv: script.prepare_invoke(), script, queue: None }
    }

    /// Starts an invocation of `script` with the standard queue keys (`QueueKeys::standard`),
    /// charged to this engine's [`Charge`] if it has one. A charged call takes no further keys.
    fn invocation<'a>(&self, script: &'a Script, queue: QueueId) -> Invocation<'a> {
        self.invocation_charged(script, queue, self.charge)
    }

    /// [`Engine::invocation`] charged to `charge` (`None`: the later calls of one request).
    fn invocation_charged<'a>(&self, script: &'a Script, queue: QueueId, charge: Option<Charge>) -> Invocation<'a> {
        let q = self.keys.queue(queue);
        let mut inv = self.prepare(script);
        inv.queue = Some(queue);
        for key in q.standard() {
            inv.key(key);
        }
        if let Some(charge) = charge {
            inv.key(charge.bucket(&self.keys, queue));
            charge.open_args(&mut inv);
        }
        inv
    }

    /// Runs a script whose reply opens with `ok`, or `no_queue` (`None`); any other status is an
    /// internal error.
    async fn run_found(&self, inv: &Invocation<'_>, script: &str) -> StorageResult<Option<Reply>> {
        let mut reply = Reply::new(self.run(inv).await?)?;
        match reply.status(script)? {
            Status::Ok => Ok(Some(reply)),
            Status::NoQueue => Ok(None),
            other => Err(unexpected(script, other)),
        }
    }

    /// EVALSHA (falling back to EVAL after a Redis restart emptied the script cache). A charged
    /// script's refusal (`rate.lua`) is the error `rate_limited`.
    async fn run(&self, inv: &Invocation<'_>) -> StorageResult<Value> {
        let mut conn = self.conn.clone();
        let sent = Instant::now();
        let started = aqs_core::metrics::enabled().then_some(sent);
        let result: redis::RedisResult<Value> = inv.inv.invoke_async(&mut conn).await;
        if let Some(started) = started {
            aqs_core::metrics::script_ran(self.scripts.name_of(inv.script), started.elapsed(), result.is_ok());
        }
        let value = self.settle(result?)?;
        if let Some(queue) = inv.queue {
            self.replicated(inv.script, queue, sent).await?;
        }
        Ok(value)
    }

    /// Returns once the replicas `AQS_REDIS_REPLICA_ACKS` asks for have what `script` (sent to
    /// Redis at `sent`) wrote to `queue`, when it is a write a client is answered for
    /// (`Scripts::acknowledged`).
    async fn replicated(&self, script: &Script, queue: QueueId, sent: Instant) -> StorageResult<()> {
        if !self.acks.enabled() || !self.scripts.acknowledged(script) {
            return Ok(());
        }
        self.acks.confirm(&self.conn, &self.keys.queue(queue).meta(), sent).await
    }

    /// An EVALSHA of `script` that the caller built itself: the single publish skips
    /// `ScriptInvocation`, which copies every key and argument once more. Loads the script and
    /// retries after a Redis restart emptied the script cache, as `run` does.
    async fn run_evalsha(&self, script: &Script, queue: QueueId, evalsha: &redis::Cmd) -> StorageResult<Value> {
        let mut conn = self.conn.clone();
        let sent = Instant::now();
        let started = aqs_core::metrics::enabled().then_some(sent);
        let result: redis::RedisResult<Value> = match evalsha.query_async(&mut conn).await {
            Err(err) if err.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
                match script.load_async(&mut conn).await {
                    Ok(_) => evalsha.query_async(&mut conn).await,
                    Err(err) => Err(err),
                }
            }
            reply => reply,
        };
        if let Some(started) = started {
            aqs_core::metrics::script_ran(self.scripts.name_of(script), started.elapsed(), result.is_ok());
        }
        let value = self.settle(result?)?;
        self.replicated(script, queue, sent).await?;
        Ok(value)
    }
}
