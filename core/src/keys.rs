//! Every Redis key AQS uses is built here, and nowhere else.
//!
//! All keys start with a namespace (`aqs` by default; tests and side-by-side environments use
//! their own). Every key of one queue carries the hash tag `{q:<queue id>}`, so that in Redis
//! Cluster a queue lives on one shard and each of its scripts runs there atomically.
//!
//! | key | type | holds |
//! | --- | --- | --- |
//! | `NS:{q:ID}:meta` | hash | projected queue settings (see `projection`), until when a long poll may wait |
//! | `NS:{q:ID}:s` | stream, group `g` | ready and leased messages |
//! | `NS:{q:ID}:lease` | zset | stream id → lease deadline (ms) |
//! | `NS:{q:ID}:backoff` | zset | stream id → due (ms): leases released by a nack |
//! | `NS:{q:ID}:tries` | hash | stream id → deliveries since the entry was written, for leases past their first |
//! | `NS:{q:ID}:errors` | hash | stream id → last nack error |
//! | `NS:{q:ID}:delayed` | zset + `NS:{q:ID}:delayed:m` hash | messages held by a publish delay |
//! | `NS:{q:ID}:dlq` | stream | dead letters with reason, attempts, dead-at |
//! | `NS:{q:ID}:dlq:ix` | hash | message id → dead-letter stream id |
//! | `NS:{q:ID}:idem:<key>` | string | idempotency record |
//! | `NS:{q:ID}:idem_ix` | zset | idempotency key → when its record expires (ms; +inf while its message is stored) |
//! | `NS:{q:ID}:stats` | hash | stored bytes and per-UTC-day counters, publish → ack histogram, largest oldest-message age |
//! | `NS:{q:ID}:minutes` | hash | the last hour per minute: `<kind><minute>` → count (kind `p`, `d`, `a`, `x`), `lh<k>:<minute>` publish → ack histogram, `o<minute>` oldest-message age; expires two hours after the last count |
//! | `NS:{q:ID}:large` | zset | message id → body bytes, only for stored messages over 1 MiB (payload add-on downgrades) |
//! | `NS:{q:ID}:budget` | hash | replica id → its storage lease, `bytes:expires_ms` |
//! | `NS:{q:ID}:wake` | channel | published to when a message becomes ready and a long poll may wait |
//! | `NS:{q:ID}:tokens_used` | hash | token id → last use (ms) |
//! | `NS:{q:ID}:push` | hash | the queue's push target (projection, `PushRecord`) |
//! | `NS:{q:ID}:push:log` | list | the last 20 push delivery outcomes, newest first (`DeliveryRecord`) |
//! | `NS:deleted:{q:ID}` | string | a deleted queue's tombstone, for a day: late projection writes skip it |
//! | `NS:rl:{q:ID}:<token id>:<class>` | string | a token's rate budget of one class (the engine's `rate.lua`), gone once full again (≤ 1 min idle) |
//! | `NS:slug:<slug>` | string | slug → queue id (projection) |
//! | `NS:token:<sha256>` | hash | token → queue and scopes (projection); `revoked` for a day after revocation |
//! | `NS:queues` | set | ids of every live queue (projection; the sweeper walks it) |
//! | `NS:push` | set | ids of the queues with a push target (projection; dispatchers walk it) |
//! | `NS:hosts` | hash | custom hostname → `HostRecord` JSON: its queue and certificate (projection; global, no queue tag) |
//! | `NS:hosts:changed` | channel | published to after every change of `NS:hosts`; data-plane replicas reload it |
//! | `NS:acme:<token>` | string | an ACME HTTP-01 key authorization, for an hour (answered on any replica) |

use crate::ids::QueueId;

/// Builds key names for one namespace.
#[derive(Clone, Debug)]
pub struct Keys {
    ns: String,
}

impl Keys {
    pub fn new(namespace: &str) -> Self {
        Self { ns: namespace.to_owned() }
    }

    pub fn namespace(&self) -> &str {
        &self.ns
    }

    pub fn queue(&self, id: QueueId) -> QueueKeys {
        // Built by hand, not format!: this runs on every request.
        let mut uuid = uuid::Uuid::encode_buffer();
        let id = id.0.simple().encode_lower(&mut uuid);
        let mut prefix = String::with_capacity(self.ns.len() + 5 + id.len());
        prefix.push_str(&self.ns);
        prefix.push_str(":{q:");
        prefix.push_str(id);
        prefix.push('}');
        QueueKeys { prefix }
    }

    /// A deleted queue's tombstone: in the queue's hash slot (a script reads it with the meta),
    /// outside its key pattern (deleting the queue's keys leaves it).
    pub fn deleted_queue(&self, id: QueueId) -> String {
        format!("{}:deleted:{{q:{id}}}", self.ns)
    }

    /// A token's rate budget for one class of requests (`m`, `r`, `a`: the engine's
    /// `rate.rs`). In the queue's hash slot, so the queue's scripts can charge it; outside
    /// its key pattern, as deleting the queue cannot name it: it expires on its own once idle.
    pub fn rate_bucket(&self, id: QueueId, token: uuid::Uuid, class: &str) -> String {
        format!("{}:rl:{{q:{id}}}:{}:{class}", self.ns, token.simple())
    }

    /// A console form's one-time id (`form_id`) once submitted: "" while its action runs, then
    /// where its result is shown. Per member, with an expiry.
    pub fn console_form(&self, member: &str, form_id: &str) -> String {
        format!("{}:console:form:{member}:{form_id}", self.ns)
    }

    /// A secret waiting to be shown once on the page a console form redirects to.
    pub fn console_secret(&self, member: &str, id: &str) -> String {
        format!("{}:console:secret:{member}:{id}", self.ns)
    }

    pub fn slug(&self, slug: &str) -> String {
        format!("{}:slug:{slug}", self.ns)
    }

    pub fn token(&self, token_hash: &str) -> String {
        format!("{}:token:{token_hash}", self.ns)
    }

    /// The pattern matching every token record, for the start-up re-sync.
    pub fn token_pattern(&self) -> String {
        format!("{}:token:*", self.ns)
    }

    /// The pattern matching every slug record, for the start-up re-sync.
    pub fn slug_pattern(&self) -> String {
        format!("{}:slug:*", self.ns)
    }

    /// The start of the names of `replica`'s replica-ack markers; each marker adds the hash tag of
    /// the writes it covers (`aqs_engine::replication`).
    pub fn replica_mark_prefix(&self, replica: &str) -> String {
        format!("{}:replica-mark:{replica}:", self.ns)
    }

    pub fn queues(&self) -> String {
        format!("{}:queues", self.ns)
    }

    /// The set of queue ids that have a push target: every data-plane replica runs a dispatcher
    /// for each.
    pub fn push_queues(&self) -> String {
        format!("{}:push", self.ns)
    }

    /// Pattern matching every queue's push record, for the start-up re-sync.
    pub fn push_pattern(&self) -> String {
        format!("{}:{{q:*}}:push", self.ns)
    }

    /// Every custom host the data plane serves (`projection::HostRecord`, keyed by hostname).
    /// Hosts are global, like tokens: never under a queue's hash tag.
    pub fn hosts(&self) -> String {
        format!("{}:hosts", self.ns)
    }

    /// Published to after every change of `hosts()`.
    pub fn hosts_changed(&self) -> String {
        format!("{}:hosts:changed", self.ns)
    }

    /// The key authorization of a pending ACME HTTP-01 challenge.
    pub fn acme_challenge(&self, token: &str) -> String {
        format!("{}:acme:{token}", self.ns)
    }

    /// Pattern for the wake-up channels of every queue.
    pub fn wake_pattern(&self) -> String {
        format!("{}:{{q:*}}:wake", self.ns)
    }
}

/// The keys of one queue, all under its hash tag.
#[derive(Clone, Debug)]
pub struct QueueKeys {
    prefix: String,
}

impl QueueKeys {
    // Concatenation, not format!: several keys are built on every publish.
    fn key(&self, suffix: &str) -> String {
        let mut key = String::with_capacity(self.prefix.len() + 1 + suffix.len());
        key.push_str(&self.prefix);
        key.push(':');
        key.push_str(suffix);
        key
    }

    pub fn meta(&self) -> String {
        self.key("meta")
    }
    pub fn stream(&self) -> String {
        self.key("s")
    }
    pub fn lease(&self) -> String {
        self.key("lease")
    }
    pub fn delayed(&self) -> String {
        self.key("delayed")
    }
    pub fn delayed_messages(&self) -> String {
        self.key("delayed:m")
    }
    /// Leases a nack released, with the time they fall due (a subset of `lease`).
    pub fn backoff(&self) -> String {
        self.key("backoff")
    }
    /// Deliveries of a leased entry since it was written, kept only once it is delivered again
    /// (a lease without a field here is on its first).
    pub fn tries(&self) -> String {
        self.key("tries")
    }
    /// The last nack error of a leased message.
    pub fn errors(&self) -> String {
        self.key("errors")
    }
    pub fn dead_letters(&self) -> String {
        self.key("dlq")
    }
    /// Message id → its entry in the dead-letter stream (replay and purge by id).
    pub fn dead_letter_index(&self) -> String {
        self.key("dlq:ix")
    }
    pub fn idempotency(&self, key: &str) -> String {
        self.key(&format!("idem:{key}"))
    }
    /// Prefix of idempotency keys: scripts append the user's key to it.
    pub fn idempotency_prefix(&self) -> String {
        self.key("idem:")
    }
    /// Every idempotency record of the queue with its expiry, so that deleting the queue finds
    /// them without a keyspace scan. Outside `idem:` so that no user key can name it.
    pub fn idempotency_index(&self) -> String {
        self.key("idem_ix")
    }
    pub fn stats(&self) -> String {
        self.key("stats")
    }
    /// The last hour's counters per minute (the engine's `minutes.lua`), with an expiry.
    pub fn minutes(&self) -> String {
        self.key("minutes")
    }
    /// Stored messages whose body is over 1 MiB (message id → body bytes), so a downgrade of the
    /// payload size can count what is still too large without reading any message.
    pub fn large(&self) -> String {
        self.key("large")
    }
    /// The replicas' storage budget leases (the engine's `budget.lua`).
    pub fn budget(&self) -> String {
        self.key("budget")
    }
    pub fn wake(&self) -> String {
        self.key("wake")
    }
    /// token id → last use (ms), written by the data plane at most once a minute per token and
    /// read by the control plane when it lists tokens.
    pub fn token_last_used(&self) -> String {
        self.key("tokens_used")
    }
    /// Who consumed lately (the data plane's per-process tallies, one field per replica and
    /// consumer, `engine/src/consumers.rs`), with an expiry: the console's Consumers tab.
    pub fn consumers(&self) -> String {
        self.key("consumers")
    }
    /// The queue's push target (`projection::PushRecord`), written by the control plane.
    pub fn push(&self) -> String {
        self.key("push")
    }
    /// The last push delivery outcomes (`push::DeliveryRecord` JSON), newest first, capped.
    pub fn push_log(&self) -> String {
        self.key("push:log")
    }
    /// The standard keys of every queue script but the publish and storage-lease ones, in the
    /// order `common.lua` reads them (`KEYS[1]` … `KEYS[16]`).
    pub fn standard(&self) -> [String; 16] {
        [
            self.meta(),
            self.stream(),
            self.lease(),
            self.backoff(),
            self.delayed(),
            self.delayed_messages(),
            self.dead_letters(),
            self.dead_letter_index(),
            self.errors(),
            self.stats(),
            self.wake(),
            self.idempotency_prefix(),
            self.idempotency_index(),
            self.large(),
            self.minutes(),
            self.tries(),
        ]
    }

    /// Every key that holds this queue's state, but for its idempotency records (`idem_ix` lists
    /// them): the one inventory of the queue's keys. Deleting the queue (`drop_queue.lua`) unlinks
    /// exactly these; a key added to a queue belongs here.
    pub fn stored(&self) -> [String; 19] {
        [
            self.meta(),
            self.stream(),
            self.lease(),
            self.backoff(),
            self.delayed(),
            self.delayed_messages(),
            self.dead_letters(),
            self.dead_letter_index(),
            self.errors(),
            self.stats(),
            self.idempotency_index(),
            self.large(),
            self.minutes(),
            self.budget(),
            self.token_last_used(),
            self.consumers(),
            self.push(),
            self.push_log(),
            self.tries(),
        ]
    }

    /// Pattern matching every key of this queue (tests check that a deleted queue left none).
    pub fn pattern(&self) -> String {
        format!("{}:*", self.prefix)
    }
}

/// The queue id inside a wake channel name, `NS:{q:ID}:wake`.
pub fn queue_of_wake_channel(channel: &str) -> Option<QueueId> {
    queue_of_key(channel)
}

/// The queue id in the hash tag of one of its keys, `NS:{q:ID}:…`.
pub fn queue_of_key(key: &str) -> Option<QueueId> {
    let start = key.find("{q:")? + 3;
    let end = start + key[start..].find('}')?;
    QueueId::parse(&key[start..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_keys_share_one_hash_tag() {
        let id = QueueId::new();
        let keys = Keys::new("aqs").queue(id);
        let tag = format!("{{q:{id}}}");
        let named = [keys.wake(), keys.idempotency_prefix(), keys.idempotency("k")];
        for key in keys.stored().into_iter().chain(keys.standard()).chain(named) {
            assert!(key.starts_with(&format!("aqs:{tag}:")), "{key}");
        }
        assert_eq!(queue_of_wake_channel(&keys.wake()), Some(id));
        // Read with the meta in one script: the same tag (slot), outside the queue's key pattern.
        let tombstone = Keys::new("aqs").deleted_queue(id);
        assert!(
            tombstone.contains(&tag) && !tombstone.starts_with(keys.pattern().trim_end_matches('*')),
            "{tombstone}"
        );
        let bucket = Keys::new("aqs").rate_bucket(id, uuid::Uuid::nil(), "m");
        assert!(bucket.contains(&tag) && !bucket.starts_with(keys.pattern().trim_end_matches('*')), "{bucket}");
    }
}
