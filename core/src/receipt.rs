//! Receipts: proof of one delivery lease. A receipt names the queue, the stream entry, the message,
//! the delivery number and when it expires, tagged with HMAC-SHA256 under a server secret, and is
//! sent as opaque base64url.
//!
//! The tag is checked here, before Redis is asked anything. The ack and nack scripts then check
//! that the delivery number is still the message's current one, so an old receipt can never
//! acknowledge a later delivery.

use crate::ids::{MessageId, QueueId};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::fmt;

const VERSION: u8 = 1;
const TAG_LEN: usize = 16;
const BODY_LEN: usize = 1 + 16 + 8 + 8 + 16 + 4 + 8;

/// A receipt stays valid for the lease plus five minutes, and never less than an hour.
pub fn expiry_ms(now_ms: u64, lease_ms: u64) -> u64 {
    now_ms + (lease_ms + 5 * 60_000).max(3_600_000)
}

/// A Redis stream entry id, `<ms>-<seq>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub fn parse(text: &str) -> Option<Self> {
        let (ms, seq) = text.split_once('-')?;
        Some(Self { ms: ms.parse().ok()?, seq: seq.parse().ok()? })
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    pub queue: QueueId,
    pub stream_id: StreamId,
    pub message: MessageId,
    pub delivery: u32,
    pub expires_at_ms: u64,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReceiptError {
    #[error("the receipt is not one this service issued")]
    Malformed,
    #[error("the receipt has expired")]
    Expired,
}

/// Signs and checks receipts with the server's receipt secret.
#[derive(Clone)]
pub struct ReceiptCodec {
    key: Hmac<Sha256>,
}

impl ReceiptCodec {
    pub fn new(secret: &[u8]) -> Self {
        Self { key: Hmac::new_from_slice(secret).expect("HMAC takes keys of any length") }
    }

    pub fn encode(&self, receipt: &Receipt) -> String {
        let mut bytes = Vec::with_capacity(BODY_LEN + TAG_LEN);
        bytes.push(VERSION);
        bytes.extend_from_slice(receipt.queue.0.as_bytes());
        bytes.extend_from_slice(&receipt.stream_id.ms.to_be_bytes());
        bytes.extend_from_slice(&receipt.stream_id.seq.to_be_bytes());
        bytes.extend_from_slice(&receipt.message.0);
        bytes.extend_from_slice(&receipt.delivery.to_be_bytes());
        bytes.extend_from_slice(&receipt.expires_at_ms.to_be_bytes());
        let tag = self.tag(&bytes);
        bytes.extend_from_slice(&tag);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    pub fn decode(&self, text: &str, now_ms: u64) -> Result<Receipt, ReceiptError> {
        let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| ReceiptError::Malformed)?;
        if bytes.len() != BODY_LEN + TAG_LEN || bytes[0] != VERSION {
            return Err(ReceiptError::Malformed);
        }
        let (body, tag) = bytes.split_at(BODY_LEN);
        let mut mac = self.key.clone();
        mac.update(body);
        mac.verify_truncated_left(tag).map_err(|_| ReceiptError::Malformed)?;
        let u64_at = |at: usize| u64::from_be_bytes(body[at..at + 8].try_into().expect("8 bytes"));
        let receipt = Receipt {
            queue: QueueId(uuid::Uuid::from_bytes(body[1..17].try_into().expect("16 bytes"))),
            stream_id: StreamId { ms: u64_at(17), seq: u64_at(25) },
            message: MessageId(body[33..49].try_into().expect("16 bytes")),
            delivery: u32::from_be_bytes(body[49..53].try_into().expect("4 bytes")),
            expires_at_ms: u64_at(53),
        };
        if receipt.expires_at_ms < now_ms {
            return Err(ReceiptError::Expired);
        }
        Ok(receipt)
    }

    fn tag(&self, body: &[u8]) -> [u8; TAG_LEN] {
        let mut mac = self.key.clone();
        mac.update(body);
        let full = mac.finalize().into_bytes();
        full[..TAG_LEN].try_into().expect("SHA-256 is longer than the tag")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Receipt {
        Receipt {
            queue: QueueId::new(),
            stream_id: StreamId { ms: 1_700_000_000_000, seq: 7 },
            message: MessageId::new(),
            delivery: 3,
            expires_at_ms: 2_000_000_000_000,
        }
    }

    #[test]
    fn round_trips() {
        let codec = ReceiptCodec::new(b"secret");
        let receipt = sample();
        let text = codec.encode(&receipt);
        assert_eq!(codec.decode(&text, 1_800_000_000_000), Ok(receipt));
    }

    #[test]
    fn rejects_tampering_other_keys_and_expiry() {
        let codec = ReceiptCodec::new(b"secret");
        let text = codec.encode(&sample());
        let mut bytes = URL_SAFE_NO_PAD.decode(&text).unwrap();
        bytes[50] ^= 1;
        assert_eq!(codec.decode(&URL_SAFE_NO_PAD.encode(&bytes), 0), Err(ReceiptError::Malformed));
        assert_eq!(ReceiptCodec::new(b"other").decode(&text, 0), Err(ReceiptError::Malformed));
        assert_eq!(codec.decode(&text, 2_000_000_000_001), Err(ReceiptError::Expired));
        assert_eq!(codec.decode("not a receipt", 0), Err(ReceiptError::Malformed));
    }

    #[test]
    fn expiry_is_lease_plus_five_minutes_but_at_least_an_hour() {
        assert_eq!(expiry_ms(0, 30_000), 3_600_000);
        assert_eq!(expiry_ms(0, 12 * 3_600_000), 12 * 3_600_000 + 300_000);
    }
}
