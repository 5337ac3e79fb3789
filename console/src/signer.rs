//! `Signer`: HMAC-SHA256 under the session secret, with a purpose label so that a tag made for one
//! use (a CSRF token) can never be replayed as another (a flash message).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

#[derive(Clone)]
pub(crate) struct Signer {
    key: Vec<u8>,
}

impl Signer {
    pub(crate) fn new(secret: &[u8]) -> Self {
        Self { key: secret.to_vec() }
    }

    fn mac(&self, purpose: &str, data: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes a key of any length");
        mac.update(b"aqs-console\0");
        mac.update(purpose.as_bytes());
        mac.update(b"\0");
        mac.update(data);
        mac
    }

    /// The tag of `data` for `purpose`, base64url without padding.
    pub(crate) fn tag(&self, purpose: &str, data: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(self.mac(purpose, data).finalize().into_bytes())
    }

    /// Checks a tag made by [`Signer::tag`] in constant time.
    pub(crate) fn verify(&self, purpose: &str, data: &[u8], tag: &str) -> bool {
        match URL_SAFE_NO_PAD.decode(tag) {
            Ok(bytes) => self.mac(purpose, data).verify_slice(&bytes).is_ok(),
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_bound_to_their_purpose_and_key() {
        let signer = Signer::new(b"0123456789abcdef0123456789abcdef");
        let tag = signer.tag("csrf", b"session");
        assert!(signer.verify("csrf", b"session", &tag));
        assert!(!signer.verify("flash", b"session", &tag));
        assert!(!signer.verify("csrf", b"other", &tag));
        assert!(!Signer::new(b"another key").verify("csrf", b"session", &tag));
        assert!(!signer.verify("csrf", b"session", "not base64 !"));
    }
}
