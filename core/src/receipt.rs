//! Receipts: proof of one delivery lease. A receipt names the queue, the stream entry, the message,
//! the delivery number and when it expires, tagged with HMAC-SHA256 under a server secret, and is
//! sent as opaque base64url.
//!
//! The tag is checked here, before Redis is asked anything. The ack and nack scripts then check
//! that the delivery number is still the message's current one, so an old receipt can never
//! acknowledge a later delivery.
//!
//! Version 2 adds an [`AckHint`]: what the ack script would otherwise read from the stream entry
//! (the entry's delivery base `n`, its accounted bytes, whether it has an idempotency key). It is
//! under the same tag, so it is as trustworthy as the rest; a stream entry is never rewritten in
//! place (a new delivery base means a new stream id), so the hint stays true for the entry's life.
//! Version 1 receipts (no hint) are still accepted: the ack script then reads the entry.
//!
//! Version 3 adds the delivery's [`Run`] to the hint, when it has one: the entries one consume
//! read together. An ack of a whole run at the stream's head trims it in one command instead of
//! deleting each entry (`engine/src/scripts/ack.lua`).

use crate::ids::{MessageId, QueueId};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::fmt;

const VERSION: u8 = 1;
const VERSION_HINTED: u8 = 2;
const VERSION_RUN: u8 = 3;
const TAG_LEN: usize = 16;
const BODY_LEN: usize = 1 + 16 + 8 + 8 + 16 + 4 + 8;
/// Version 2: the version 1 body, then the hint: base (4), bytes (8), flags (1).
const HINTED_BODY_LEN: usize = BODY_LEN + 4 + 8 + 1;
/// Version 3: the version 2 body, then the run: first stream id (8 + 8), length (4).
const RUN_BODY_LEN: usize = HINTED_BODY_LEN + 8 + 8 + 4;
const FLAG_IDEMPOTENCY_KEY: u8 = 1;

/// A receipt stays valid for the lease plus five minutes, and never less than an hour.
pub fn expiry_ms(now_ms: u64, lease_ms: u64) -> u64 {
    now_ms + (lease_ms + 5 * 60_000).max(3_600_000)
}

/// A Redis stream entry id, `<ms>-<seq>`, ordered as Redis orders them (by `ms`, then `seq`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

/// Facts about the stream entry a receipt names, fixed for the entry's life, carried in a
/// version 2 receipt so that acknowledging needs no read of the entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckHint {
    /// The entry's delivery base `n` (attempts = n + the PEL delivery counter).
    pub base: u32,
    /// The entry's accounted bytes `sz`.
    pub stored_bytes: u64,
    /// The entry carries an idempotency key (its record gets a TTL on ack).
    pub idempotency_key: bool,
    /// The run of this delivery, for a first delivery read with others (version 3).
    pub run: Option<Run>,
}

/// Entries one consume read together (`consume.lua`'s run): consecutive in the stream, with no
/// other entry between them then or ever, since stream ids only grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Run {
    pub first: StreamId,
    pub len: u32,
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

    /// A version 3 receipt when `hint` names a run, version 2 when it does not, else version 1
    /// (which this version no longer hands out, but still accepts from before: `decode_with_hint`).
    pub fn encode_with(&self, receipt: &Receipt, hint: Option<AckHint>) -> String {
        let mut bytes = Vec::with_capacity(RUN_BODY_LEN + TAG_LEN);
        bytes.push(match hint {
            None => VERSION,
            Some(AckHint { run: None, .. }) => VERSION_HINTED,
            Some(_) => VERSION_RUN,
        });
        bytes.extend_from_slice(receipt.queue.0.as_bytes());
        bytes.extend_from_slice(&receipt.stream_id.ms.to_be_bytes());
        bytes.extend_from_slice(&receipt.stream_id.seq.to_be_bytes());
        bytes.extend_from_slice(&receipt.message.0);
        bytes.extend_from_slice(&receipt.delivery.to_be_bytes());
        bytes.extend_from_slice(&receipt.expires_at_ms.to_be_bytes());
        if let Some(hint) = hint {
            bytes.extend_from_slice(&hint.base.to_be_bytes());
            bytes.extend_from_slice(&hint.stored_bytes.to_be_bytes());
            bytes.push(if hint.idempotency_key { FLAG_IDEMPOTENCY_KEY } else { 0 });
            if let Some(run) = hint.run {
                bytes.extend_from_slice(&run.first.ms.to_be_bytes());
                bytes.extend_from_slice(&run.first.seq.to_be_bytes());
                bytes.extend_from_slice(&run.len.to_be_bytes());
            }
        }
        let tag = self.tag(&bytes);
        bytes.extend_from_slice(&tag);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// Decodes any version; the hint is `None` for a version 1 receipt.
    pub fn decode_with_hint(&self, text: &str, now_ms: u64) -> Result<(Receipt, Option<AckHint>), ReceiptError> {
        let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| ReceiptError::Malformed)?;
        let body_len = match bytes.first() {
            Some(&VERSION) => BODY_LEN,
            Some(&VERSION_HINTED) => HINTED_BODY_LEN,
            Some(&VERSION_RUN) => RUN_BODY_LEN,
            _ => return Err(ReceiptError::Malformed),
        };
        if bytes.len() != body_len + TAG_LEN {
            return Err(ReceiptError::Malformed);
        }
        let (body, tag) = bytes.split_at(body_len);
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
        let hint = (body_len >= HINTED_BODY_LEN).then(|| AckHint {
            base: u32::from_be_bytes(body[61..65].try_into().expect("4 bytes")),
            stored_bytes: u64_at(65),
            idempotency_key: body[73] & FLAG_IDEMPOTENCY_KEY != 0,
            run: (body_len == RUN_BODY_LEN).then(|| Run {
                first: StreamId { ms: u64_at(74), seq: u64_at(82) },
                len: u32::from_be_bytes(body[90..94].try_into().expect("4 bytes")),
            }),
        });
        if receipt.expires_at_ms < now_ms {
            return Err(ReceiptError::Expired);
        }
        Ok((receipt, hint))
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

    impl ReceiptCodec {
        fn encode(&self, receipt: &Receipt) -> String {
            self.encode_with(receipt, None)
        }

        fn decode(&self, text: &str, now_ms: u64) -> Result<Receipt, ReceiptError> {
            self.decode_with_hint(text, now_ms).map(|(receipt, _)| receipt)
        }
    }

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
    fn hinted_receipts_round_trip_and_are_tagged() {
        let codec = ReceiptCodec::new(b"secret");
        let receipt = sample();
        let hint = AckHint { base: 2, stored_bytes: 1234, idempotency_key: true, run: None };
        let text = codec.encode_with(&receipt, Some(hint));
        assert_eq!(codec.decode_with_hint(&text, 0), Ok((receipt.clone(), Some(hint))));
        assert_eq!(codec.decode(&text, 0), Ok(receipt.clone()));
        // A version 1 receipt decodes without a hint.
        assert_eq!(codec.decode_with_hint(&codec.encode(&receipt), 0), Ok((receipt, None)));
        // The hint is under the tag: flipping any of its bytes is refused.
        for at in [62, 70, 73] {
            let mut bytes = URL_SAFE_NO_PAD.decode(&text).unwrap();
            bytes[at] ^= 1;
            assert_eq!(codec.decode_with_hint(&URL_SAFE_NO_PAD.encode(&bytes), 0), Err(ReceiptError::Malformed));
        }
        // Nor can a version 2 receipt pass as version 1 or the reverse.
        let mut bytes = URL_SAFE_NO_PAD.decode(&text).unwrap();
        bytes[0] = VERSION;
        assert_eq!(codec.decode(&URL_SAFE_NO_PAD.encode(&bytes), 0), Err(ReceiptError::Malformed));
    }

    #[test]
    fn a_run_round_trips_under_the_tag_in_a_version_3_receipt() {
        let codec = ReceiptCodec::new(b"secret");
        let receipt = sample();
        let run = Run { first: StreamId { ms: 1_700_000_000_000, seq: 3 }, len: 100 };
        let hint = AckHint { base: 0, stored_bytes: 10, idempotency_key: false, run: Some(run) };
        let text = codec.encode_with(&receipt, Some(hint));
        assert_eq!(URL_SAFE_NO_PAD.decode(&text).unwrap()[0], VERSION_RUN);
        assert_eq!(codec.decode_with_hint(&text, 0), Ok((receipt.clone(), Some(hint))));
        // The run is under the tag: its first id and its length cannot be moved.
        for at in [81, 89, 93] {
            let mut bytes = URL_SAFE_NO_PAD.decode(&text).unwrap();
            bytes[at] ^= 1;
            assert_eq!(codec.decode_with_hint(&URL_SAFE_NO_PAD.encode(&bytes), 0), Err(ReceiptError::Malformed));
        }
        // Nor can it pass as a version 2 receipt (whose hint would then have no run).
        let mut bytes = URL_SAFE_NO_PAD.decode(&text).unwrap();
        bytes[0] = VERSION_HINTED;
        assert_eq!(codec.decode_with_hint(&URL_SAFE_NO_PAD.encode(&bytes), 0), Err(ReceiptError::Malformed));
    }

    #[test]
    fn expiry_is_lease_plus_five_minutes_but_at_least_an_hour() {
        assert_eq!(expiry_ms(0, 30_000), 3_600_000);
        assert_eq!(expiry_ms(0, 12 * 3_600_000), 12 * 3_600_000 + 300_000);
    }
}
