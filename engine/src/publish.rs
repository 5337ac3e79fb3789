//! Publish: one message or a batch, stored atomically by `publish.lua`; a single plain message
//! (no idempotency key, no delay), most of the traffic, by the leaner `publish_one.lua`.

use super::budget::Drawn;
use super::reply::{Reply, Status};
use super::{Charge, Engine};
use crate::error::{StorageError, StorageResult};
use aqs_core::ids::{MessageId, QueueId};
use aqs_core::limits::MIB;
use aqs_core::time::utc_day;
use sha2::{Digest, Sha256};

/// A message as the API validated it, ready to store.
#[derive(Clone, Debug)]
pub struct NewMessage {
    pub body: Vec<u8>,
    pub content_type: String,
    /// The attributes object serialised as JSON (keys sorted), or empty for none.
    pub attributes: String,
    pub group_id: Option<String>,
    pub idempotency_key: Option<String>,
    pub delay_ms: u64,
}

impl NewMessage {
    /// A `text/plain` message of `body`, without attributes, group, key or delay.
    pub fn text(body: &str) -> Self {
        Self {
            body: body.as_bytes().to_vec(),
            content_type: "text/plain".into(),
            attributes: String::new(),
            group_id: None,
            idempotency_key: None,
            delay_ms: 0,
        }
    }

    /// SHA-256 over body, content type and attributes, each length-prefixed so that no two
    /// different payloads share a byte sequence.
    pub fn fingerprint(&self) -> String {
        let mut hash = Sha256::new();
        for part in [self.body.as_slice(), self.content_type.as_bytes(), self.attributes.as_bytes()] {
            hash.update((part.len() as u64).to_be_bytes());
            hash.update(part);
        }
        hex::encode(hash.finalize())
    }

    /// What the message counts against the storage limit: body plus attributes.
    pub fn stored_bytes(&self) -> u64 {
        (self.body.len() + self.attributes.len()) as u64
    }

    /// Over the included 1 MiB: `publish.lua` records it in the queue's `large` set (publish_one,
    /// the small-message hot path, never looks at that set).
    fn is_large(&self) -> bool {
        self.body.len() as u64 > MIB
    }

    fn is_plain(&self) -> bool {
        self.idempotency_key.is_none() && self.delay_ms == 0
    }

    /// Plain, and every other field at its default: all `publish.lua` needs is its id and body.
    fn is_bare(&self) -> bool {
        self.is_plain()
            && self.content_type == DEFAULT_CONTENT_TYPE
            && self.attributes.is_empty()
            && self.group_id.is_none()
    }
}

/// The content type an entry leaves out (common.lua's `complete` fills it back in).
pub(crate) const DEFAULT_CONTENT_TYPE: &str = "application/json";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Published {
    pub id: String,
    pub published_at_ms: u64,
    pub available_at_ms: u64,
    /// An earlier publish with the same idempotency key and payload.
    pub duplicate: bool,
}

#[derive(Debug, PartialEq, Eq)]
pub enum PublishOutcome {
    Stored(Vec<Published>),
    QueueMissing,
    Paused,
    StorageFull,
    /// Entry `index` (0-based) is larger than the queue's payload limit.
    TooLarge {
        index: usize,
    },
    /// Entry `index` reuses an idempotency key with a different payload.
    Conflict {
        index: usize,
    },
}

impl Engine {
    /// Stores `messages` (all or none) at `now_ms`, then wakes this process's long polls on
    /// `queue` (`wake.rs`): every publish, whoever asks for it, wakes them the same way.
    pub async fn publish(&self, queue: QueueId, messages: &[NewMessage], now_ms: u64) -> StorageResult<PublishOutcome> {
        let outcome = self.store(queue, messages, now_ms).await;
        // A publish whose reply was lost may have stored every message; a rate refusal stored none.
        let stored = match &outcome {
            Ok(PublishOutcome::Stored(published)) => published.iter().filter(|p| !p.duplicate).count(),
            Ok(_) | Err(StorageError::RateLimited { .. }) => 0,
            Err(_) => messages.len(),
        };
        if stored > 0 {
            self.waiters.published(queue, stored);
        }
        outcome
    }

    /// [`Engine::publish`] without the wake-up.
    async fn store(&self, queue: QueueId, messages: &[NewMessage], now_ms: u64) -> StorageResult<PublishOutcome> {
        if let [message] = messages
            && message.is_plain()
            && !message.is_large()
        {
            return self.publish_one(queue, message, now_ms).await;
        }
        let outcome = self.publish_many(queue, messages, now_ms, None, self.charge).await?;
        if outcome != PublishOutcome::StorageFull {
            return Ok(outcome);
        }
        // Refused for storage while this replica holds undrawn lease: give that back and ask again,
        // so the limit is judged on what is stored (budget.lua). The same request: not charged again.
        let _leasing = self.ledger.lock_leasing(queue).await;
        match self.give_back_for_publish(queue) {
            Some(kept) => {
                let outcome = self.publish_many(queue, messages, now_ms, Some(kept), None).await?;
                self.ledger.granted(queue, kept);
                Ok(outcome)
            }
            None => Ok(outcome),
        }
    }

    /// `publish.lua`; `my_lease`: this replica's lease after giving part of it back.
    async fn publish_many(
        &self,
        queue: QueueId,
        messages: &[NewMessage],
        now_ms: u64,
        my_lease: Option<i64>,
        charge: Option<Charge>,
    ) -> StorageResult<PublishOutcome> {
        // publish.lua takes only the keys it touches (see its header), not the standard ones.
        let q = self.keys.queue(queue);
        let mut inv = self.prepare(&self.scripts.publish);
        inv.queue = Some(queue);
        inv.key(q.meta()).key(q.stream()).key(q.delayed()).key(q.delayed_messages()).key(q.stats()).key(q.wake());
        inv.key(q.budget()).key(q.idempotency_index()).key(q.large()).key(q.minutes());
        if let Some(charge) = &charge {
            charge.open_args(&mut inv);
        }
        inv.arg(now_ms).arg(utc_day(now_ms)).arg(messages.len()).arg(q.idempotency_prefix().len());
        inv.arg(self.replica.as_ref()).arg(my_lease.map(|lease| lease.to_string()).unwrap_or_default());
        let mut key_index = 10;
        for message in messages {
            inv.arg(MessageId::new().to_string()).arg(message.body.as_slice());
            // A bare message is its id and body: publish.lua knows the rest (its header).
            if message.is_bare() {
                inv.arg(0);
                continue;
            }
            inv.arg(7)
                .arg(message.content_type.as_str())
                .arg(message.attributes.as_str())
                .arg(message.group_id.as_deref().unwrap_or(""));
            // The fingerprint hashes the whole body: computed only when a key needs it.
            match &message.idempotency_key {
                Some(key) => {
                    key_index += 1;
                    inv.key(q.idempotency(key)).arg(key_index).arg(message.fingerprint());
                }
                None => {
                    inv.arg(0).arg("");
                }
            }
            inv.arg(message.delay_ms).arg(message.stored_bytes());
        }
        if let Some(charge) = &charge {
            inv.key(charge.bucket(&self.keys, queue));
        }
        let mut reply = Reply::new(self.run(&inv).await?)?;
        let outcome = match reply.status("publish.lua")? {
            Status::Ok => {
                let mut stored = Vec::with_capacity(messages.len());
                while reply.remaining() > 0 {
                    stored.push(Published {
                        duplicate: reply.int()? == 1,
                        id: reply.text()?,
                        published_at_ms: reply.uint()?,
                        available_at_ms: reply.uint()?,
                    });
                }
                PublishOutcome::Stored(stored)
            }
            Status::Paused => PublishOutcome::Paused,
            Status::Storage => PublishOutcome::StorageFull,
            Status::TooLarge => PublishOutcome::TooLarge { index: reply.uint()? as usize },
            Status::Conflict => PublishOutcome::Conflict { index: reply.uint()? as usize },
            Status::NoQueue => PublishOutcome::QueueMissing,
        };
        Ok(outcome)
    }

    /// `publish_one.lua`: one plain message, its bytes drawn from this replica's storage lease and
    /// counted in the ledger. Its published time is the stream id's.
    async fn publish_one(&self, queue: QueueId, message: &NewMessage, now_ms: u64) -> StorageResult<PublishOutcome> {
        let (day, bytes) = (utc_day(now_ms), message.stored_bytes());
        match self.draw(queue, day, bytes, now_ms).await? {
            Drawn::Yes => {}
            Drawn::StorageFull => return Ok(PublishOutcome::StorageFull),
            Drawn::QueueMissing => return Ok(PublishOutcome::QueueMissing),
        }
        let outcome = self.publish_drawn(queue, message, now_ms).await;
        // Refused (a rate refusal too): nothing was stored. (After another error the draw stands:
        // the message may be stored though its reply was lost, and counting bytes that are not
        // there only errs on the safe side until the queue empties; see sweep.lua.)
        let refused = match &outcome {
            Ok(outcome) => !matches!(outcome, PublishOutcome::Stored(_)),
            Err(err) => matches!(err, StorageError::RateLimited { .. }),
        };
        if refused {
            self.ledger.undo_draw(queue, day, bytes);
        }
        outcome
    }

    async fn publish_drawn(&self, queue: QueueId, message: &NewMessage, now_ms: u64) -> StorageResult<PublishOutcome> {
        let q = self.keys.queue(queue);
        let id = MessageId::new().to_string();
        let script = &self.scripts.publish_one;
        // Sized up front: growing the command's buffers showed in profiles.
        let mut evalsha = redis::Cmd::with_capacity(20, message.body.len() + message.attributes.len() + 384);
        evalsha.arg("EVALSHA").arg(script.get_hash());
        match &self.charge {
            Some(charge) => {
                evalsha.arg(4).arg(q.meta()).arg(q.stream()).arg(q.wake()).arg(charge.bucket(&self.keys, queue));
                evalsha.arg("rl");
                for value in charge.args() {
                    evalsha.arg(value);
                }
            }
            None => {
                evalsha.arg(3).arg(q.meta()).arg(q.stream()).arg(q.wake());
            }
        }
        evalsha.arg(now_ms).arg(self.replica.as_ref()).arg(id.as_str()).arg(message.body.as_slice());
        if message.content_type != DEFAULT_CONTENT_TYPE {
            evalsha.arg("ct").arg(message.content_type.as_str());
        }
        if !message.attributes.is_empty() {
            evalsha.arg("a").arg(message.attributes.as_str());
        }
        if let Some(group) = &message.group_id {
            evalsha.arg("g").arg(group.as_str());
        }
        let outcome = match self.run_evalsha(script, queue, &evalsha).await? {
            redis::Value::BulkString(reply) => match reply.as_slice() {
                b"no_queue" => PublishOutcome::QueueMissing,
                b"paused" => PublishOutcome::Paused,
                b"too_large" => PublishOutcome::TooLarge { index: 0 },
                stream_id => {
                    let published_at_ms = stream_id_ms(stream_id).ok_or_else(|| {
                        anyhow::anyhow!("publish_one.lua returned {:?}", String::from_utf8_lossy(stream_id))
                    })?;
                    PublishOutcome::Stored(vec![Published {
                        id,
                        published_at_ms,
                        available_at_ms: published_at_ms,
                        duplicate: false,
                    }])
                }
            },
            other => return Err(anyhow::anyhow!("publish_one.lua returned {other:?}").into()),
        };
        Ok(outcome)
    }
}

/// The milliseconds part of a stream id (`<ms>-<seq>`).
fn stream_id_ms(stream_id: &[u8]) -> Option<u64> {
    let ms = stream_id.split(|b| *b == b'-').next()?;
    std::str::from_utf8(ms).ok()?.parse().ok()
}
