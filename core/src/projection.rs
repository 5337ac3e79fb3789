//! The records the control plane projects into Redis for the data plane, which never reads
//! PostgreSQL. PostgreSQL is the source of truth; these are rewritten on every change and
//! re-synced at start-up. Each record carries a version field `v` so a reader can tell formats
//! apart during a rolling upgrade.
//!
//! - `NS:{q:ID}:meta` (hash, `QueueMeta`): read by the Lua scripts on every call, so a pause or a
//!   settings change takes effect on the next request. The data plane keeps one field of its own
//!   there, `w` (until when a long poll may wait), so that publish reads it with the settings; the
//!   projection writes its fields with HSET and never deletes the hash while the queue lives.
//!   `suspended` (the operator's reason, present only while the queue's team is suspended) is
//!   written by the team's suspension alone, never by a settings write, so neither undoes the other.
//! - `NS:slug:<slug>` (string): the queue id.
//! - `NS:token:<sha256>` (hash, `TokenRecord`): on revocation it becomes a tombstone,
//!   `{revoked = 1}`, for a day (no record version: the data plane reads it as no token), so that
//!   the late projection write of the token's mint cannot make it valid again.
//! - `NS:queues` (set): ids of live queues.
//! - `NS:{q:ID}:push` (hash, `PushRecord`) and `NS:push` (set of those queue ids): the queue's push
//!   target, read by the data plane's dispatchers. It carries the signing secrets (the data plane
//!   has no PostgreSQL); `Secret` keeps them out of every `Debug` and log line.
//! - `NS:hosts` (hash, hostname → `HostRecord` JSON): the custom hosts that have a certificate,
//!   with their queue; `NS:hosts:changed` is published to after each change.

use crate::ids::QueueId;
use crate::secret::Secret;
use crate::token::{Scope, join_scopes, parse_scopes};
use std::collections::HashMap;

pub const RECORD_VERSION: &str = "1";

/// Field names of the queue meta hash; the Lua scripts use the same literals.
pub mod meta_field {
    pub const VERSION: &str = "v";
    pub const SLUG: &str = "slug";
    pub const PAUSED: &str = "paused";
    pub const VISIBILITY_MS: &str = "visibility_ms";
    pub const MAX_ATTEMPTS: &str = "max_attempts";
    pub const PAYLOAD_LIMIT: &str = "payload_limit";
    pub const STORAGE_LIMIT: &str = "storage_limit";
    /// The queue row's revision in PostgreSQL: a write never replaces a later one.
    pub const REVISION: &str = "rev";
    /// The queue revision of the last push change written (the control plane's `put_push.lua`).
    pub const PUSH_REVISION: &str = "push_rev";
    /// Written by the data plane's scripts, never by the projection.
    pub const WAITING_UNTIL: &str = "w";
    /// The operator's reason while the queue's team is suspended; absent otherwise. Written only
    /// by the suspension's projection (`QueueMeta::to_fields` leaves it out).
    pub const SUSPENDED: &str = "suspended";
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueMeta {
    pub id: QueueId,
    pub slug: String,
    pub paused: bool,
    pub visibility_ms: u64,
    pub max_attempts: u32,
    pub payload_limit: u64,
    pub storage_limit: u64,
    /// Counts the row's changes in PostgreSQL; 0 in a hash written before revisions existed.
    pub revision: u64,
    /// The operator's reason while the queue's team is suspended: every token of the queue is
    /// refused and push delivery stops. Read back, never written by [`QueueMeta::to_fields`].
    pub suspended: Option<String>,
}

impl QueueMeta {
    /// The fields a settings write sets: every one but `suspended`, which belongs to the team's
    /// suspension (a queue's settings change must not undo it, nor clear it).
    pub fn to_fields(&self) -> Vec<(&'static str, String)> {
        use meta_field::*;
        vec![
            (VERSION, RECORD_VERSION.to_owned()),
            (SLUG, self.slug.clone()),
            (PAUSED, u8::from(self.paused).to_string()),
            (VISIBILITY_MS, self.visibility_ms.to_string()),
            (MAX_ATTEMPTS, self.max_attempts.to_string()),
            (PAYLOAD_LIMIT, self.payload_limit.to_string()),
            (STORAGE_LIMIT, self.storage_limit.to_string()),
            (REVISION, self.revision.to_string()),
        ]
    }

    /// Reads a meta hash back; `None` when it is missing or of an unknown version.
    pub fn from_fields(id: QueueId, fields: &HashMap<String, String>) -> Option<Self> {
        use meta_field::*;
        if fields.get(VERSION).map(String::as_str) != Some(RECORD_VERSION) {
            return None;
        }
        let num = |name: &str| fields.get(name)?.parse::<u64>().ok();
        Some(Self {
            id,
            slug: fields.get(SLUG)?.clone(),
            paused: fields.get(PAUSED).map(String::as_str) == Some("1"),
            visibility_ms: num(VISIBILITY_MS)?,
            max_attempts: num(MAX_ATTEMPTS)? as u32,
            payload_limit: num(PAYLOAD_LIMIT)?,
            storage_limit: num(STORAGE_LIMIT)?,
            revision: num(REVISION).unwrap_or(0),
            suspended: fields.get(SUSPENDED).filter(|reason| !reason.is_empty()).cloned(),
        })
    }
}

/// What the data plane needs to know about a token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenRecord {
    pub token_id: uuid::Uuid,
    pub queue: QueueId,
    pub scopes: Vec<Scope>,
}

impl TokenRecord {
    pub fn to_fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("v", RECORD_VERSION.to_owned()),
            ("token_id", self.token_id.to_string()),
            ("queue", self.queue.to_string()),
            ("scopes", join_scopes(&self.scopes)),
        ]
    }

    pub fn from_fields(fields: &HashMap<String, String>) -> Option<Self> {
        if fields.get("v").map(String::as_str) != Some(RECORD_VERSION) {
            return None;
        }
        Some(Self {
            token_id: uuid::Uuid::try_parse(fields.get("token_id")?).ok()?,
            queue: QueueId::parse(fields.get("queue")?)?,
            scopes: parse_scopes(fields.get("scopes")?),
        })
    }

    pub fn allows(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }
}

/// How a queue's push target is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PushMode {
    /// One POST per message, `{id, queue, payload, attempts}` (`docs/push-delivery.md`).
    Message,
    /// One POST per batch, the Worker-trigger shape (`docs/push-delivery.md`).
    Batch,
}

impl PushMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Message => "message",
            Self::Batch => "batch",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "message" => Some(Self::Message),
            "batch" => Some(Self::Batch),
            _ => None,
        }
    }
}

/// A queue's push target as the data plane needs it (`NS:{q:ID}:push`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushRecord {
    /// The queue's slug: the `queue` field of every request.
    pub queue: String,
    pub handler_url: String,
    pub mode: PushMode,
    pub messages_per_run: u32,
    pub wait_seconds: u32,
    pub timeout_seconds: u32,
    pub concurrency: u32,
    /// The current signing secret, `whsec_<base64>`.
    pub secret: Secret,
    /// The secret a rotation replaced, still signing alongside until `previous_until_ms`.
    pub previous_secret: Option<Secret>,
    pub previous_until_ms: u64,
}

impl PushRecord {
    pub fn to_fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("v", RECORD_VERSION.to_owned()),
            ("queue", self.queue.clone()),
            ("url", self.handler_url.clone()),
            ("mode", self.mode.as_str().to_owned()),
            ("per_run", self.messages_per_run.to_string()),
            ("wait", self.wait_seconds.to_string()),
            ("timeout", self.timeout_seconds.to_string()),
            ("concurrency", self.concurrency.to_string()),
            ("secret", self.secret.expose().to_owned()),
            ("prev_secret", self.previous_secret.as_ref().map(|s| s.expose().to_owned()).unwrap_or_default()),
            ("prev_until", self.previous_until_ms.to_string()),
        ]
    }

    /// `None` when the record is missing, incomplete or of an unknown version.
    pub fn from_fields(fields: &HashMap<String, String>) -> Option<Self> {
        if fields.get("v").map(String::as_str) != Some(RECORD_VERSION) {
            return None;
        }
        let num = |name: &str| fields.get(name)?.parse::<u32>().ok();
        let previous = fields.get("prev_secret").filter(|s| !s.is_empty()).map(|s| Secret::new(s.clone()));
        Some(Self {
            queue: fields.get("queue")?.clone(),
            handler_url: fields.get("url")?.clone(),
            mode: PushMode::parse(fields.get("mode")?)?,
            messages_per_run: num("per_run")?,
            wait_seconds: num("wait")?,
            timeout_seconds: num("timeout")?,
            concurrency: num("concurrency")?,
            secret: Secret::new(fields.get("secret")?.clone()),
            previous_secret: previous,
            previous_until_ms: fields.get("prev_until").and_then(|t| t.parse().ok()).unwrap_or(0),
        })
    }
}

/// A custom host as the data plane serves it. Only hosts with a certificate are projected; the
/// data plane stops serving one whose certificate has expired.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HostRecord {
    pub v: String,
    pub id: uuid::Uuid,
    #[serde(with = "queue_id_text")]
    pub queue: QueueId,
    /// The certificate chain, PEM.
    pub cert_pem: String,
    /// The private key, PKCS#8 PEM sealed by `cert_key::CertKeyCipher`.
    pub key_encrypted: String,
    pub not_after_ms: u64,
}

impl HostRecord {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a host record serialises")
    }

    /// `None` for a malformed record or one of an unknown version.
    pub fn from_json(text: &str) -> Option<Self> {
        serde_json::from_str::<Self>(text).ok().filter(|r| r.v == RECORD_VERSION)
    }
}

mod queue_id_text {
    use crate::ids::QueueId;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(id: &QueueId, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(id)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<QueueId, D::Error> {
        let text = String::deserialize(d)?;
        QueueId::parse(&text).ok_or_else(|| serde::de::Error::custom("not a queue id"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_hash_fields() {
        let meta = QueueMeta {
            id: QueueId::new(),
            slug: "image-jobs".into(),
            paused: true,
            visibility_ms: 30_000,
            max_attempts: 5,
            payload_limit: 1 << 20,
            storage_limit: 1 << 30,
            revision: 7,
            suspended: None,
        };
        let mut fields: HashMap<String, String> =
            meta.to_fields().into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        assert_eq!(QueueMeta::from_fields(meta.id, &fields), Some(meta.clone()));
        // The suspension is read back, but a settings write does not carry it.
        fields.insert(meta_field::SUSPENDED.into(), "unpaid invoice".into());
        let suspended = QueueMeta::from_fields(meta.id, &fields).unwrap();
        assert_eq!(suspended.suspended.as_deref(), Some("unpaid invoice"));
        assert!(!suspended.to_fields().iter().any(|(k, _)| *k == meta_field::SUSPENDED));

        let token = TokenRecord { token_id: uuid::Uuid::new_v4(), queue: QueueId::new(), scopes: vec![Scope::Send] };
        let fields = token.to_fields().into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        assert_eq!(TokenRecord::from_fields(&fields), Some(token));

        let push = PushRecord {
            queue: "emails".into(),
            handler_url: "https://app.example.com/q".into(),
            mode: PushMode::Batch,
            messages_per_run: 10,
            wait_seconds: 5,
            timeout_seconds: 30,
            concurrency: 4,
            secret: Secret::new("whsec_a"),
            previous_secret: Some(Secret::new("whsec_b")),
            previous_until_ms: 42,
        };
        let fields = push.to_fields().into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        assert_eq!(PushRecord::from_fields(&fields), Some(push.clone()));
        assert!(!format!("{push:?}").contains("whsec_a"), "Debug hides the secrets");
    }
}
