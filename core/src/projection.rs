//! The records the control plane projects into Redis for the data plane, which never reads
//! PostgreSQL. PostgreSQL is the source of truth; these are rewritten on every change and
//! re-synced at start-up. Each record carries a version field `v` so a reader can tell formats
//! apart during a rolling upgrade.
//!
//! - `NS:{q:ID}:meta` (hash, `QueueMeta`): read by the Lua scripts on every call, so a pause or a
//!   settings change takes effect on the next request.
//! - `NS:slug:<slug>` (string): the queue id.
//! - `NS:token:<sha256>` (hash, `TokenRecord`): deleted on revocation.
//! - `NS:queues` (set): ids of live queues.

use crate::ids::QueueId;
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
}

impl QueueMeta {
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
        };
        let fields = meta.to_fields().into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        assert_eq!(QueueMeta::from_fields(meta.id, &fields), Some(meta));

        let token = TokenRecord { token_id: uuid::Uuid::new_v4(), queue: QueueId::new(), scopes: vec![Scope::Send] };
        let fields = token.to_fields().into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        assert_eq!(TokenRecord::from_fields(&fields), Some(token));
    }
}
