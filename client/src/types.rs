//! The queue API's requests and answers, field for field as the server reads and writes them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One message to publish. Build it with [`NewMessage::text`], [`NewMessage::json`] or
/// [`NewMessage::bytes`], then the `with_…` options.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct NewMessage {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_base64: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_seconds: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

impl NewMessage {
    /// A text body, sent as `text/plain`.
    pub fn text(body: impl Into<String>) -> Self {
        Self { body: Some(body.into()), content_type: Some("text/plain".into()), ..Self::default() }
    }

    /// A body that is already JSON text, sent as `application/json` (the API's default).
    pub fn raw_json(body: impl Into<String>) -> Self {
        Self { body: Some(body.into()), ..Self::default() }
    }

    /// A value serialised as JSON.
    pub fn json<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Self> {
        Ok(Self {
            body: Some(serde_json::to_string(value)?),
            content_type: Some("application/json".into()),
            ..Self::default()
        })
    }

    /// Binary, sent as `application/octet-stream` in `body_base64`.
    pub fn bytes(body: &[u8]) -> Self {
        use base64::Engine as _;
        Self {
            body_base64: Some(base64::engine::general_purpose::STANDARD.encode(body)),
            content_type: Some("application/octet-stream".into()),
            ..Self::default()
        }
    }

    pub fn with_content_type(mut self, content_type: impl Into<String>) -> Self {
        self.content_type = Some(content_type.into());
        self
    }

    pub fn with_delay_seconds(mut self, seconds: u64) -> Self {
        self.delay_seconds = Some(seconds);
        self
    }

    pub fn with_idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    pub fn with_attributes(mut self, attributes: Map<String, Value>) -> Self {
        self.attributes = Some(attributes);
        self
    }

    pub fn with_group_id(mut self, group_id: impl Into<String>) -> Self {
        self.group_id = Some(group_id.into());
        self
    }
}

/// The answer to a publish, per message.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct Published {
    pub id: String,
    pub published_at: String,
    pub available_at: String,
    /// An earlier publish with the same idempotency key and payload stored it.
    pub duplicate: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConsumeRequest {
    pub max_messages: u32,
    pub max_wait_seconds: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visibility_seconds: Option<u32>,
}

/// A leased message, as consume answers it.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct Delivered {
    pub id: String,
    pub receipt: String,
    pub body_base64: String,
    pub content_type: String,
    pub attributes: Map<String, Value>,
    /// This delivery's number: 1 on the first.
    pub attempts: u32,
    pub group_id: Option<String>,
    pub published_at: String,
}

/// A receipt that ack or nack could not apply.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct Failure {
    pub receipt: String,
    pub error: String,
    pub message: String,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct Acked {
    pub acked: u32,
    pub failed: Vec<Failure>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct Nacked {
    pub nacked: u32,
    pub failed: Vec<Failure>,
}

/// What `extend` answers: a fresh receipt per extended lease, and the receipts it could not apply.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct ExtendAnswer {
    pub extended: Vec<Extended>,
    pub failed: Vec<Failure>,
}

/// One extended lease.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct Extended {
    /// The receipt as sent.
    pub receipt: String,
    /// A receipt valid past the new deadline; use it from now on (the old one still acks until it
    /// expires).
    pub new_receipt: String,
    /// The new lease deadline (RFC 3339).
    pub visible_at: String,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
pub struct Depth {
    pub ready: u64,
    pub in_flight: u64,
    pub delayed: u64,
    pub total: u64,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Stats {
    pub depth: Depth,
    pub stored_bytes: u64,
    pub oldest_message_at: Option<String>,
    pub oldest_message_age_seconds: Option<u64>,
    pub published_today: u64,
    pub delivered_today: u64,
    pub acked_today: u64,
    pub dead_letters: u64,
    pub storage_limit: u64,
    pub paused: bool,
}

/// A message read by peek, without a lease.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Peeked {
    pub id: String,
    pub body_base64: String,
    pub content_type: String,
    pub attributes: Map<String, Value>,
    pub attempts: u32,
    pub group_id: Option<String>,
    pub published_at: String,
    pub state: String,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct DeadLetter {
    pub id: String,
    pub reason: String,
    pub attempts: u32,
    pub dead_at: String,
    /// The first 256 bytes, as text (`body_preview_encoding` "utf8") or base64.
    pub body_preview: String,
    pub body_preview_encoding: String,
    pub body_bytes: u64,
    pub content_type: String,
    pub published_at: String,
    pub group_id: Option<String>,
}

/// Which dead letters a replay or purge takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    All,
    /// 1 to 100 message ids.
    Ids(Vec<String>),
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct Health {
    pub ok: bool,
    pub service: String,
}
