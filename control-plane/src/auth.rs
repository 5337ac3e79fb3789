//! Signing up, logging in and proving who is calling: credential checks, the session a member
//! gets, changing the password, listing and ending sessions, and `AuthMember`, the extractor every
//! authenticated route takes.

use crate::audit::{self, AuditActor, Target};
use crate::client_addr::ClientAddr;
use crate::login_throttle::LoginAttempt;
use crate::members::{self, Member, MemberId, Role};
use crate::password;
use crate::sessions::{self, Origin, Session};
use crate::state::ControlPlane;
use crate::teams::{self, RequestOrigin, TeamId};
use crate::text::refuse_control;
use aqs_core::{ApiError, ApiResult};
use axum::extract::FromRequestParts;
use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub const PASSWORD_MIN_CHARS: usize = 8;
/// Long enough for any passphrase, short enough that nobody feeds argon2 megabytes.
pub const PASSWORD_MAX_CHARS: usize = 1024;
const EMAIL_MAX_CHARS: usize = 254;

#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    /// One `@`, a local part and a dotted domain, without spaces or control characters (the
    /// pattern is the check sign-up makes, so a client can make it before sending).
    #[schema(format = Email, max_length = 254,
        pattern = r"^[^@\s\x00-\x1f\x7f-\x9f]+@[^@.\s\x00-\x1f\x7f-\x9f]+(?:\.[^@.\s\x00-\x1f\x7f-\x9f]+)+$")]
    pub email: String,
    /// 8 to 1024 characters.
    #[schema(min_length = 8, max_length = 1024)]
    pub password: String,
}

/// A member and a fresh session for them.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct SignedIn {
    pub member: Member,
    /// The session JWT: send it as `Authorization: Bearer <session>`.
    pub session: String,
}

/// Creates a member. Emails in `AQS_OPERATOR_EMAILS` become operators.
pub async fn signup(cp: &ControlPlane, credentials: Credentials) -> ApiResult<SignedIn> {
    signup_from(cp, credentials, Origin::default()).await
}

/// [`signup`], its first session keeping where it came from (`origin`).
pub async fn signup_from(cp: &ControlPlane, credentials: Credentials, origin: Origin) -> ApiResult<SignedIn> {
    refuse_control("email", &credentials.email)?;
    let email = normalise_email(&credentials.email)?;
    check_password(&credentials.password)?;
    let hash = password::hash(cp.hashing(), credentials.password).await?;
    let role = if cp.is_operator_email(&email) { Role::Operator } else { Role::Member };
    // The member and their personal team (same id, they its owner) commit together.
    let mut tx = cp.db().begin().await?;
    let member = members::insert(&mut tx, &email, &hash, role).await?;
    teams::store::insert_personal(&mut tx, member.id).await?;
    tx.commit().await?;
    tracing::info!(member = %member.id.as_uuid(), ?role, "member signed up");
    signed_in(cp, member, &origin).await
}

/// Checks an email and password. Every failure is the same 401, so a caller cannot tell an unknown
/// email from a wrong password; only an email no member could have (a control character in it) is
/// a 400, as it is at sign-up. Failures from `client` are counted (`login_throttle`): past the
/// bounds every attempt, right password or not, is a 429 until the window passes.
/// The session keeps where the log-in came from (`origin`: a [`ClientAddr`] alone, or with the
/// user agent).
pub async fn login(cp: &ControlPlane, credentials: Credentials, origin: impl Into<Origin>) -> ApiResult<SignedIn> {
    login_requested(cp, credentials, origin.into(), None).await
}

/// [`login`] with the request's `x-request-id`, which the audit log keeps with the log-in's event
/// (`session.login`, or `session.login_failed`: in the member's personal team when the email is a
/// member's, else in no team and without the email typed).
pub async fn login_requested(
    cp: &ControlPlane,
    credentials: Credentials,
    origin: Origin,
    request_id: Option<String>,
) -> ApiResult<SignedIn> {
    let client = origin.client.unwrap_or(ClientAddr(None));
    let audit_origin = RequestOrigin { ip: client.shown(), user_agent: origin.user_agent.clone(), request_id };
    refuse_control("email", &credentials.email)?;
    let attempt = LoginAttempt::new(cp.keys(), &credentials.email, client);
    attempt.check(cp.redis()).await?;
    let wrong = || ApiError::Unauthorized("wrong email or password".into());
    let Ok(email) = normalise_email(&credentials.email) else {
        attempt.failed(cp.redis()).await?;
        record_login(cp, None, &audit_origin, "session.login_failed", None).await?;
        return Err(wrong());
    };
    let found = members::find_with_hash(cp.db(), &email).await?;
    let (member, hash) = match found {
        Some((member, hash)) => (Some(member), Some(hash)),
        None => (None, None),
    };
    let matches = password::verify(cp.hashing(), credentials.password, hash).await?;
    match member {
        Some(member) if matches => {
            attempt.succeeded(cp.redis()).await?;
            let (signed_in, sid) = start_session(cp, member, &origin).await?;
            record_login(cp, Some(&signed_in.member), &audit_origin, "session.login", Some(sid)).await?;
            Ok(signed_in)
        }
        member => {
            attempt.failed(cp.redis()).await?;
            record_login(cp, member.as_ref(), &audit_origin, "session.login_failed", None).await?;
            Err(wrong())
        }
    }
}

/// A log-in's audit event, in its own transaction: a member's in their personal team, an unknown
/// email's in no team, as `anonymous`, without the email (it may be a mistyped password).
async fn record_login(
    cp: &ControlPlane,
    member: Option<&Member>,
    origin: &RequestOrigin,
    action: &str,
    session: Option<Uuid>,
) -> ApiResult<()> {
    let (team, actor) = match member {
        Some(member) => (
            Some(TeamId::personal(member.id)),
            AuditActor { kind: "member", id: Some(member.id.as_uuid()), email: Some(member.email.clone()) },
        ),
        None => (None, AuditActor { kind: "anonymous", id: None, email: None }),
    };
    let target = Target { kind: "session", id: session.map(|id| id.to_string()) };
    let mut tx = cp.db().begin().await?;
    audit::record_as(&mut tx, team, &actor, origin, action, target).await?;
    tx.commit().await?;
    Ok(())
}

/// The member a session JWT belongs to: 401 when it is invalid, expired, logged out, or its
/// member is gone.
pub async fn verify_session(cp: &ControlPlane, session: &str) -> ApiResult<Member> {
    let (member, sid) = cp.sessions().verify(session).ok_or_else(invalid_session)?;
    sessions::live_member(cp.db(), member, sid).await?.ok_or_else(invalid_session)
}

/// Ends the session of this JWT (log out). A JWT that is no longer live has nothing to end: 401.
pub async fn logout(cp: &ControlPlane, session: &str) -> ApiResult<()> {
    let (member, sid) = cp.sessions().verify(session).ok_or_else(invalid_session)?;
    if !sessions::revoke(cp.db(), member, sid).await? {
        return Err(invalid_session());
    }
    Ok(())
}

/// Ends every session of `member`, this one included (log out everywhere); returns how many.
pub async fn logout_everywhere(cp: &ControlPlane, member: MemberId) -> ApiResult<u64> {
    let ended = sessions::revoke_all(cp.db(), member).await?;
    tracing::info!(member = %member.as_uuid(), ended, "member logged out everywhere");
    Ok(ended)
}

/// `POST /api/v1/auth/password`: the current password (proof that the person at the keyboard is
/// the member, not someone at an unlocked screen) and the new one.
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PasswordChange {
    pub current_password: String,
    /// 8 to 1024 characters.
    #[schema(min_length = 8, max_length = 1024)]
    pub new_password: String,
}

/// Changes the member's password and ends every one of their sessions (whoever knew the old
/// password may hold one); answers a fresh session for the caller. A wrong current password is a
/// 400 on `current_password` (not a 401: the caller's session is fine) and changes nothing.
/// The fresh session keeps where the request came from (`origin`), as a log-in's does.
pub async fn change_password(
    cp: &ControlPlane,
    member: MemberId,
    change: PasswordChange,
    origin: Origin,
) -> ApiResult<SignedIn> {
    check_new_password(&change.new_password)?;
    let hash = members::password_hash(cp.db(), member).await?.ok_or_else(invalid_session)?;
    if !password::verify(cp.hashing(), change.current_password, Some(hash)).await? {
        return Err(ApiError::field("current_password", "this is not your current password"));
    }
    let new_hash = password::hash(cp.hashing(), change.new_password).await?;
    let mut tx = cp.db().begin().await?;
    if !members::set_password_hash(&mut tx, member, &new_hash).await? {
        return Err(invalid_session());
    }
    let ended = sessions::revoke_all(&mut *tx, member).await?;
    tx.commit().await?;
    tracing::info!(member = %member.as_uuid(), ended, "password changed; every session ended");
    let found = members::find(cp.db(), member.as_uuid()).await?.ok_or_else(invalid_session)?;
    signed_in(cp, found, &origin).await
}

/// The live sessions of the member of this session JWT, the caller's marked `current`.
pub async fn sessions(cp: &ControlPlane, session: &str) -> ApiResult<Vec<Session>> {
    let (member, sid) = verify_with_id(cp, session).await?;
    sessions::list(cp.db(), member.id, sid).await
}

/// Ends one live session of `member` (404 when it is not theirs or has already ended).
pub async fn end_session(cp: &ControlPlane, member: MemberId, id: Uuid) -> ApiResult<()> {
    if !sessions::revoke(cp.db(), member.as_uuid(), id).await? {
        return Err(ApiError::not_found("no live session with this id"));
    }
    Ok(())
}

/// The member of a live session JWT and the session's id.
pub async fn verify_with_id(cp: &ControlPlane, session: &str) -> ApiResult<(Member, Uuid)> {
    let (member, sid) = cp.sessions().verify(session).ok_or_else(invalid_session)?;
    let member = sessions::live_member(cp.db(), member, sid).await?.ok_or_else(invalid_session)?;
    Ok((member, sid))
}

fn invalid_session() -> ApiError {
    ApiError::Unauthorized("the session is invalid or has expired; log in again".into())
}

async fn signed_in(cp: &ControlPlane, member: Member, origin: &Origin) -> ApiResult<SignedIn> {
    Ok(start_session(cp, member, origin).await?.0)
}

/// [`signed_in`], with the new session's id.
async fn start_session(cp: &ControlPlane, member: Member, origin: &Origin) -> ApiResult<(SignedIn, Uuid)> {
    let (sid, issued) = sessions::start(cp.db(), member.id, origin).await?;
    let session = cp.sessions().issue(member.id.as_uuid(), sid, issued)?;
    Ok((SignedIn { member, session }, sid))
}

/// Trims and lowercases an email and checks its shape: one `@`, a local part, and a dotted domain.
/// Deliverability is not our concern here, only that the field is plausibly an address.
pub(crate) fn normalise_email(email: &str) -> ApiResult<String> {
    let email = email.trim().to_lowercase();
    let invalid = || ApiError::field("email", "give a valid email address, such as ada@example.com");
    if email.is_empty() || email.chars().count() > EMAIL_MAX_CHARS || email.chars().any(char::is_whitespace) {
        return Err(invalid());
    }
    let (local, domain) = email.split_once('@').ok_or_else(invalid)?;
    let domain_ok = domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !domain.contains("..")
        && !domain.contains('@');
    if local.is_empty() || !domain_ok {
        return Err(invalid());
    }
    Ok(email)
}

fn check_password(password: &str) -> ApiResult<()> {
    check_password_field("password", password)
}

fn check_new_password(password: &str) -> ApiResult<()> {
    check_password_field("new_password", password)
}

fn check_password_field(field: &str, password: &str) -> ApiResult<()> {
    let chars = password.chars().count();
    if chars < PASSWORD_MIN_CHARS {
        return Err(ApiError::field(field, format!("use at least {PASSWORD_MIN_CHARS} characters")));
    }
    if chars > PASSWORD_MAX_CHARS {
        return Err(ApiError::field(field, format!("use at most {PASSWORD_MAX_CHARS} characters")));
    }
    Ok(())
}

/// The session JWT of `Authorization: Bearer <session JWT>`, unchecked; 401 when there is none.
pub fn bearer(headers: &HeaderMap) -> ApiResult<&str> {
    let header = headers.get(AUTHORIZATION).and_then(|value| value.to_str().ok());
    header
        .and_then(aqs_core::token::bearer)
        .ok_or_else(|| ApiError::Unauthorized("send Authorization: Bearer <session>".into()))
}

/// The member behind `Authorization: Bearer <session JWT>`; rejects with 401 otherwise.
pub struct AuthMember(pub Member);

impl AuthMember {
    pub fn id(&self) -> MemberId {
        self.0.id
    }
}

impl FromRequestParts<ControlPlane> for AuthMember {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, cp: &ControlPlane) -> Result<Self, Self::Rejection> {
        verify_session(cp, bearer(&parts.headers)?).await.map(AuthMember)
    }
}

/// An operator behind `Authorization: Bearer <session JWT>`. Everyone else, signed in or not, gets
/// a 404: operator routes do not reveal that they exist.
pub struct AuthOperator(Member);

impl AuthOperator {
    /// The operator proof for a member already authenticated some other way (the console's
    /// session cookie); `None` unless the member has the operator role.
    pub fn from_member(member: Member) -> Option<Self> {
        (member.role == Role::Operator).then_some(Self(member))
    }

    pub fn id(&self) -> MemberId {
        self.0.id
    }

    pub fn member(&self) -> &Member {
        &self.0
    }
}

impl FromRequestParts<ControlPlane> for AuthOperator {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, cp: &ControlPlane) -> Result<Self, Self::Rejection> {
        match AuthMember::from_request_parts(parts, cp).await {
            Ok(AuthMember(member)) if member.role == Role::Operator => Ok(Self(member)),
            Err(outage @ ApiError::ServiceUnavailable { .. }) => Err(outage),
            _ => Err(ApiError::not_found("no such route")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_normalised_and_checked() {
        assert_eq!(normalise_email("  Ada@Example.COM ").unwrap(), "ada@example.com");
        for bad in ["", "ada", "ada@", "@example.com", "ada@example", "a da@example.com", "a@b@c.com", "a@.com"] {
            assert!(normalise_email(bad).unwrap_err().to_string().starts_with("email"), "{bad:?}");
        }
    }

    #[test]
    fn passwords_need_eight_characters() {
        assert!(check_password("1234567").unwrap_err().to_string().starts_with("password"));
        assert!(check_password("12345678").is_ok());
    }
}
