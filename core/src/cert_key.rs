//! `CertKeyCipher`: encrypts a custom host's certificate private key at rest (PostgreSQL and the
//! Redis projection) with AES-256-GCM under `AQS_CERT_ENCRYPTION_KEY`. The stored form is base64
//! of a random 96-bit nonce followed by the ciphertext and its tag.

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use anyhow::{Context, bail};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};

const NONCE_LEN: usize = 12;

#[derive(Clone)]
pub struct CertKeyCipher {
    cipher: Aes256Gcm,
}

impl std::fmt::Debug for CertKeyCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CertKeyCipher(<redacted>)")
    }
}

impl CertKeyCipher {
    /// The key as the setting holds it: base64 of exactly 32 bytes, its `=` padding optional
    /// (a shell reading `NAME=value` lines may drop the last `=`).
    pub fn from_base64(key: &str) -> anyhow::Result<Self> {
        let bytes = STANDARD_NO_PAD.decode(key.trim().trim_end_matches('=')).context("not base64")?;
        if bytes.len() != 32 {
            bail!("must be base64 of 32 bytes, not {}", bytes.len());
        }
        let cipher = Aes256Gcm::new_from_slice(&bytes).context("AES-256 key")?;
        Ok(Self { cipher })
    }

    pub fn encrypt(&self, plaintext: &[u8]) -> String {
        let nonce: [u8; NONCE_LEN] = rand::random();
        let sealed = self.cipher.encrypt(Nonce::from_slice(&nonce), plaintext).expect("AES-GCM encryption cannot fail");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        STANDARD.encode(out)
    }

    /// Fails on a value sealed under another key or altered.
    pub fn decrypt(&self, sealed: &str) -> anyhow::Result<Vec<u8>> {
        let bytes = STANDARD.decode(sealed).context("not base64")?;
        if bytes.len() <= NONCE_LEN {
            bail!("too short");
        }
        let (nonce, body) = bytes.split_at(NONCE_LEN);
        self.cipher
            .decrypt(Nonce::from_slice(nonce), body)
            .map_err(|_| anyhow::anyhow!("does not decrypt under AQS_CERT_ENCRYPTION_KEY"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_round_trips_and_another_key_cannot_open_it() {
        let cipher = CertKeyCipher::from_base64(&STANDARD.encode([7u8; 32])).unwrap();
        let unpadded = STANDARD.encode([7u8; 32]).trim_end_matches('=').to_owned();
        assert!(CertKeyCipher::from_base64(&unpadded).unwrap().decrypt(&cipher.encrypt(b"k")).is_ok());
        let sealed = cipher.encrypt(b"-----BEGIN PRIVATE KEY-----");
        assert!(!sealed.contains("PRIVATE"));
        assert_eq!(cipher.decrypt(&sealed).unwrap(), b"-----BEGIN PRIVATE KEY-----");
        let other = CertKeyCipher::from_base64(&STANDARD.encode([8u8; 32])).unwrap();
        assert!(other.decrypt(&sealed).is_err());
        assert!(CertKeyCipher::from_base64(&STANDARD.encode([1u8; 16])).is_err());
    }
}
