//! Typed ids. A queue id names the queue inside Redis keys (its hash tag); a message id is what
//! users see: 32 lowercase hex characters, stable across redeliveries, the dead-letter queue and
//! replay.

use serde::{Deserialize, Serialize};
use std::fmt;
use uuid::Uuid;

/// A queue's internal id: a random UUID, written as 32 hex characters in Redis keys so that tests
/// and environments sharing one Redis never collide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct QueueId(pub Uuid);

impl QueueId {
    pub fn new() -> Self {
        Self(Uuid::new_v4())
    }

    pub fn parse(text: &str) -> Option<Self> {
        Uuid::try_parse(text).ok().map(Self)
    }
}

impl Default for QueueId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for QueueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.simple())
    }
}

/// A message id: 128 random bits as 32 lowercase hex characters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MessageId(pub [u8; 16]);

impl MessageId {
    pub fn new() -> Self {
        Self(rand::random())
    }

    pub fn parse(text: &str) -> Option<Self> {
        if text.len() != 32 || !text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return None;
        }
        let mut bytes = [0u8; 16];
        hex::decode_to_slice(text, &mut bytes).ok()?;
        Some(Self(bytes))
    }
}

impl Default for MessageId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Into a stack buffer: `hex::encode` builds its String a char at a time, on every publish.
        let mut text = [0u8; 32];
        hex::encode_to_slice(self.0, &mut text).map_err(|_| fmt::Error)?;
        f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_ids_are_32_lowercase_hex_and_round_trip() {
        let id = MessageId::new();
        let text = id.to_string();
        assert_eq!(text.len(), 32);
        assert!(text.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        assert_eq!(MessageId::parse(&text), Some(id));
        assert_eq!(MessageId::parse(&text.to_uppercase()), None);
        assert_eq!(MessageId::parse("abc"), None);
    }

    #[test]
    fn queue_ids_print_without_dashes() {
        let id = QueueId::new();
        assert_eq!(id.to_string().len(), 32);
        assert_eq!(QueueId::parse(&id.to_string()), Some(id));
    }
}
