//! Queue tokens: `acq_` + 32 random base62 characters + a 6-character base62 CRC-32 checksum, so a
//! leaked token can be recognised (by a secret scanner, by us) without a database. Only the
//! SHA-256 of a token is stored; the secret is shown once.

use sha2::{Digest, Sha256};
use std::fmt;

pub const PREFIX: &str = "acq_";
/// Management keys (`docs/teams.md`) have the same shape with this prefix.
pub const KEY_PREFIX: &str = "acm_";
const BODY_LEN: usize = 32;
const CHECK_LEN: usize = 6;
pub const TOKEN_LEN: usize = PREFIX.len() + BODY_LEN + CHECK_LEN;
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// What a token may do. A token has one or more.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Send,
    Consume,
    Manage,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Send, Scope::Consume, Scope::Manage];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Send => "send",
            Scope::Consume => "consume",
            Scope::Manage => "manage",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A token's secret text. Never printed by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenSecret(String);

impl TokenSecret {
    pub fn generate() -> Self {
        Self::generate_with(PREFIX)
    }

    /// A new secret with another prefix of the same length ([`KEY_PREFIX`]).
    pub fn generate_with(prefix: &str) -> Self {
        let body: String = (0..BODY_LEN).map(|_| BASE62[rand::random_range(0..62usize)] as char).collect();
        let check = checksum(&body);
        Self(format!("{prefix}{body}{check}"))
    }

    /// Accepts only well-formed tokens with a valid checksum: a typo fails before any lookup.
    pub fn parse(text: &str) -> Option<Self> {
        Self::parse_with(PREFIX, text)
    }

    /// [`TokenSecret::parse`] for secrets made by [`TokenSecret::generate_with`] `prefix`.
    pub fn parse_with(prefix: &str, text: &str) -> Option<Self> {
        let rest = text.strip_prefix(prefix)?;
        if rest.len() != BODY_LEN + CHECK_LEN || !rest.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return None;
        }
        let (body, check) = rest.split_at(BODY_LEN);
        (checksum(body) == check).then(|| Self(text.to_owned()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Hex SHA-256 of the whole token: the only form that is stored.
    pub fn hash(&self) -> String {
        hex::encode(Sha256::digest(self.0.as_bytes()))
    }

    /// The last four characters, kept for display.
    pub fn last_four(&self) -> String {
        self.0[self.0.len() - 4..].to_owned()
    }
}

impl fmt::Debug for TokenSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TokenSecret(…{})", self.last_four())
    }
}

fn checksum(body: &str) -> String {
    let mut n = crc32fast::hash(body.as_bytes()) as u64;
    let mut out = [b'0'; CHECK_LEN];
    for slot in out.iter_mut().rev() {
        *slot = BASE62[(n % 62) as usize];
        n /= 62;
    }
    String::from_utf8(out.to_vec()).expect("base62 is ascii")
}

/// Parses a comma-separated scope list as stored in the projection (`send,consume`).
pub fn parse_scopes(text: &str) -> Vec<Scope> {
    text.split(',').filter_map(Scope::parse).collect()
}

pub fn join_scopes(scopes: &[Scope]) -> String {
    scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(",")
}

/// The credentials of an `Authorization: Bearer <credentials>` header value, for sessions and
/// queue tokens alike. The scheme name is case-insensitive (RFC 9110, section 11.1: `BEARER` and
/// `bearer` are `Bearer`); `None` without the scheme or without credentials.
pub fn bearer(header: &str) -> Option<&str> {
    let (scheme, credentials) = header.trim_start().split_once(' ')?;
    let credentials = credentials.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !credentials.is_empty()).then_some(credentials)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_parse_and_have_the_documented_shape() {
        let token = TokenSecret::generate();
        assert_eq!(token.expose().len(), TOKEN_LEN);
        assert!(token.expose().starts_with("acq_"));
        assert_eq!(TokenSecret::parse(token.expose()), Some(token.clone()));
        assert_eq!(token.hash().len(), 64);
        assert!(!format!("{token:?}").contains(&token.expose()[4..20]));
    }

    #[test]
    fn a_typo_breaks_the_checksum() {
        let token = TokenSecret::generate();
        let mut chars: Vec<char> = token.expose().chars().collect();
        chars[10] = if chars[10] == 'a' { 'b' } else { 'a' };
        let typo: String = chars.into_iter().collect();
        assert_eq!(TokenSecret::parse(&typo), None);
        assert_eq!(TokenSecret::parse("acq_short"), None);
        assert_eq!(TokenSecret::parse("Bearer"), None);
    }

    #[test]
    fn scopes_round_trip() {
        assert_eq!(parse_scopes("send,manage"), vec![Scope::Send, Scope::Manage]);
        assert_eq!(join_scopes(&[Scope::Consume, Scope::Send]), "consume,send");
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        for header in ["Bearer abc", "bearer abc", "BEARER abc", "BeArEr   abc ", " Bearer abc"] {
            assert_eq!(bearer(header), Some("abc"), "{header:?}");
        }
        for header in ["Basic abc", "Bearer", "Bearer ", "Bearerabc", "abc", ""] {
            assert_eq!(bearer(header), None, "{header:?}");
        }
    }
}
