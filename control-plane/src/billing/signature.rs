//! `Stripe-Signature` checking for webhooks: `t=<unix seconds>,v1=<hex>,v1=<hex>,…`. Every `v1`
//! entry is tried (Stripe sends several while a signing secret is being rolled; async-stripe's
//! own check looks only at the last), each compared in constant time, and the timestamp must be
//! within the tolerance of now. `v0` entries (Stripe's test scheme) never count.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// How far from now a signed timestamp may be, in seconds (Stripe's default).
pub const TOLERANCE_SECS: i64 = 300;

#[derive(Debug, PartialEq, Eq)]
pub enum SignatureError {
    /// No header, no `t=`, or no `v1=` entry.
    Malformed,
    /// No `v1` entry matches the payload.
    Mismatch,
    /// The timestamp is more than the tolerance away from now.
    Stale,
}

impl SignatureError {
    pub fn message(&self) -> &'static str {
        match self {
            Self::Malformed => "Stripe-Signature: expected t=<timestamp> and at least one v1=<signature>",
            Self::Mismatch => "Stripe-Signature: no v1 signature matches the payload",
            Self::Stale => "Stripe-Signature: the timestamp is more than 300 seconds from now",
        }
    }
}

/// Checks `header` against `payload` signed with `secret` at `now` (unix seconds).
pub fn verify(header: &str, payload: &[u8], secret: &str, now: i64) -> Result<(), SignatureError> {
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => timestamp = Some(value.parse::<i64>().map_err(|_| SignatureError::Malformed)?),
            Some(("v1", value)) => signatures.push(value),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed)?;
    if signatures.is_empty() {
        return Err(SignatureError::Malformed);
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).map_err(|_| SignatureError::Mismatch)?;
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(payload);
    // Every entry is checked (no early exit on the first mismatch): verify_slice is constant-time.
    let matched = signatures
        .iter()
        .filter_map(|sig| hex::decode(sig).ok())
        .fold(false, |found, sig| mac.clone().verify_slice(&sig).is_ok() | found);
    if !matched {
        return Err(SignatureError::Mismatch);
    }
    if (now - timestamp).abs() > TOLERANCE_SECS {
        return Err(SignatureError::Stale);
    }
    Ok(())
}

/// The `v1` signature of `payload` at `timestamp`: what Stripe sends (and what tests sign with).
pub fn sign(payload: &[u8], secret: &str, timestamp: i64) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(payload);
    hex::encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec_test";
    const NOW: i64 = 1_700_000_000;

    #[test]
    fn a_good_signature_passes() {
        let header = format!("t={NOW},v1={}", sign(b"{}", SECRET, NOW));
        assert_eq!(verify(&header, b"{}", SECRET, NOW + 10), Ok(()));
    }

    #[test]
    fn any_of_several_v1_entries_may_match() {
        let good = sign(b"{}", SECRET, NOW);
        let other = sign(b"{}", "whsec_old", NOW);
        let header = format!("t={NOW},v1={good},v1={other}");
        assert_eq!(verify(&header, b"{}", SECRET, NOW), Ok(()));
        let header = format!("t={NOW},v1={other},v1={good}");
        assert_eq!(verify(&header, b"{}", SECRET, NOW), Ok(()));
    }

    #[test]
    fn a_wrong_payload_secret_or_v0_only_fails() {
        let header = format!("t={NOW},v1={}", sign(b"{}", SECRET, NOW));
        assert_eq!(verify(&header, b"{\"x\":1}", SECRET, NOW), Err(SignatureError::Mismatch));
        assert_eq!(verify(&header, b"{}", "whsec_other", NOW), Err(SignatureError::Mismatch));
        let v0 = format!("t={NOW},v0={}", sign(b"{}", SECRET, NOW));
        assert_eq!(verify(&v0, b"{}", SECRET, NOW), Err(SignatureError::Malformed));
        assert_eq!(verify("", b"{}", SECRET, NOW), Err(SignatureError::Malformed));
        assert_eq!(verify("t=abc,v1=00", b"{}", SECRET, NOW), Err(SignatureError::Malformed));
    }

    #[test]
    fn a_timestamp_over_300_seconds_old_fails() {
        let header = format!("t={NOW},v1={}", sign(b"{}", SECRET, NOW));
        assert_eq!(verify(&header, b"{}", SECRET, NOW + 300), Ok(()));
        assert_eq!(verify(&header, b"{}", SECRET, NOW + 301), Err(SignatureError::Stale));
    }
}
