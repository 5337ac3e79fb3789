//! Session tokens: HS256 JWTs signed with `AQS_SESSION_SECRET`, valid for 12 hours, with claims
//! `sub` (the member id), `sid` (the session's row in `sessions`), `iat` and `exp`. The signature
//! proves we issued it; the row (see `sessions`) says whether it has ended early.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub(crate) const SESSION_SECS: i64 = 12 * 3600;

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    sid: String,
    iat: i64,
    exp: i64,
}

pub(crate) struct SessionKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl SessionKeys {
    pub(crate) fn new(secret: &[u8]) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        // A session is a hard 12 hours; the default minute of leeway is for clock skew between
        // issuers and verifiers, and here both are us.
        validation.leeway = 0;
        Self { encoding: EncodingKey::from_secret(secret), decoding: DecodingKey::from_secret(secret), validation }
    }

    /// The JWT of session `sid` for `member`, issued at `iat` (Unix seconds); it expires at
    /// `iat + SESSION_SECS`.
    pub(crate) fn issue(&self, member: Uuid, sid: Uuid, iat: i64) -> anyhow::Result<String> {
        let claims = Claims { sub: member.to_string(), sid: sid.to_string(), iat, exp: iat + SESSION_SECS };
        Ok(jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)?)
    }

    /// The member id and session id of a valid, unexpired JWT signed by us; `None` otherwise
    /// (a JWT without a session id included: it can never have a row).
    pub(crate) fn verify(&self, token: &str) -> Option<(Uuid, Uuid)> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation).ok()?;
        Some((Uuid::try_parse(&data.claims.sub).ok()?, Uuid::try_parse(&data.claims.sid).ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_sessions_verify_and_others_do_not() {
        let keys = SessionKeys::new(b"0123456789abcdef0123456789abcdef");
        let (member, sid) = (Uuid::new_v4(), Uuid::new_v4());
        let token = keys.issue(member, sid, chrono::Utc::now().timestamp()).unwrap();
        assert_eq!(keys.verify(&token), Some((member, sid)));
        assert_eq!(SessionKeys::new(b"another secret, also long enough!").verify(&token), None);
        assert_eq!(keys.verify("garbage"), None);
    }
}
