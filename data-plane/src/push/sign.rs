//! Signing, the Standard Webhooks way: `webhook-signature: v1,<base64 HMAC-SHA256>` over
//! `"<webhook-id>.<webhook-timestamp>.<body>"`, keyed with the base64-decoded part of the queue's
//! `whsec_…` secret. During the 24 h after a rotation the replaced secret signs too, and the header
//! carries both signatures separated by a space, so a handler verifies with either secret.

use aqs_core::projection::PushRecord;
use aqs_core::push::signing_key;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::fmt;

type HmacSha256 = Hmac<Sha256>;

/// The keys of a push target, each already keyed into an HMAC (so a request hashes only its own
/// bytes). `Debug` never shows them.
#[derive(Clone)]
pub struct SigningKeys {
    current: HmacSha256,
    previous: Option<(HmacSha256, u64)>,
}

impl fmt::Debug for SigningKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningKeys(<redacted>)")
    }
}

impl SigningKeys {
    pub fn new(record: &PushRecord) -> Option<Self> {
        let current = keyed(&signing_key(record.secret.expose())?);
        let previous = record
            .previous_secret
            .as_ref()
            .and_then(|s| signing_key(s.expose()))
            .map(|key| (keyed(&key), record.previous_until_ms));
        Some(Self { current, previous })
    }

    /// The `webhook-signature` value for one request sent at `now_ms`.
    pub fn header(&self, id: &str, timestamp: u64, body: &[u8], now_ms: u64) -> String {
        let mut value = sign(self.current.clone(), id, timestamp, body);
        if let Some((key, until)) = &self.previous
            && now_ms < *until
        {
            value.push(' ');
            value.push_str(&sign(key.clone(), id, timestamp, body));
        }
        value
    }
}

fn keyed(key: &[u8]) -> HmacSha256 {
    HmacSha256::new_from_slice(key).expect("HMAC takes any key length")
}

/// `v1,<base64 HMAC-SHA256(key, "id.timestamp.body")>`.
pub fn signature(key: &[u8], id: &str, timestamp: u64, body: &[u8]) -> String {
    sign(keyed(key), id, timestamp, body)
}

fn sign(mut mac: HmacSha256, id: &str, timestamp: u64, body: &[u8]) -> String {
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aqs_core::projection::PushMode;
    use aqs_core::secret::Secret;

    /// The example of the Standard Webhooks specification.
    #[test]
    fn matches_the_standard_webhooks_example() {
        let key = signing_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            signature(&key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn a_rotated_secret_signs_alongside_until_its_deadline() {
        let record = PushRecord {
            queue: "q".into(),
            handler_url: "http://h/".into(),
            mode: PushMode::Message,
            messages_per_run: 1,
            wait_seconds: 0,
            timeout_seconds: 30,
            concurrency: 1,
            secret: Secret::new("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
            previous_secret: Some(Secret::new("whsec_AAAAAAAA")),
            previous_until_ms: 1000,
        };
        let keys = SigningKeys::new(&record).unwrap();
        assert_eq!(keys.header("id", 1, b"x", 999).split(' ').count(), 2);
        assert_eq!(keys.header("id", 1, b"x", 1000).split(' ').count(), 1);
        assert!(!format!("{keys:?}").contains("AAAA"));
    }
}
