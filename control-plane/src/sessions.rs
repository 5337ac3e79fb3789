//! Session rows: what makes a signed session JWT end before it expires. Every authenticated
//! request looks its session up together with its member, in the one indexed query that used to
//! load the member alone, so checking revocation costs nothing extra and a log-out is effective at
//! once on every process (there is no cache to go stale).
//!
//! Rows past their expiry serve nothing; each new session deletes up to [`SWEEP_BATCH`] of them
//! (anyone's), so the table never holds more than a batch per log-in of dead rows.

use crate::client_addr::ClientAddr;
use crate::members::{Member, MemberId, MemberRow};
use crate::session::SESSION_SECS;
use aqs_core::ApiResult;
use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::{PgExecutor, PgPool};
use uuid::Uuid;

/// Expired rows deleted per new session: more than one, so the sweep outpaces expiry.
pub(crate) const SWEEP_BATCH: i64 = 100;

/// A live session as its member sees it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Session {
    pub id: Uuid,
    #[serde(serialize_with = "crate::timefmt::rfc3339")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::timefmt::rfc3339")]
    pub expires_at: DateTime<Utc>,
    /// True for the session that asked.
    pub current: bool,
    /// The `User-Agent` of the browser or client that logged in (none for sessions started before
    /// it was kept).
    pub user_agent: Option<String>,
    /// The client address it logged in from.
    pub address: Option<String>,
}

/// Where a log-in comes from: its client address and `User-Agent`, kept with the session so the
/// member can tell their sessions apart.
#[derive(Clone, Debug, Default)]
pub struct Origin {
    pub client: Option<ClientAddr>,
    pub user_agent: Option<String>,
}

/// The longest user agent kept, in characters.
const USER_AGENT_MAX_CHARS: usize = 512;

impl From<ClientAddr> for Origin {
    fn from(client: ClientAddr) -> Self {
        Self { client: Some(client), user_agent: None }
    }
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Origin {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self, Self::Rejection> {
        let client = ClientAddr::from_request_parts(parts, state).await?;
        let user_agent = parts
            .headers
            .get(axum::http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(|ua| ua.chars().filter(|c| !c.is_control()).take(USER_AGENT_MAX_CHARS).collect::<String>())
            .filter(|ua| !ua.trim().is_empty());
        Ok(Self { client: Some(client), user_agent })
    }
}

/// Records a new session for `member`; returns its id and when it was issued (Unix seconds).
pub(crate) async fn start(db: &PgPool, member: MemberId, origin: &Origin) -> ApiResult<(Uuid, i64)> {
    let id = Uuid::new_v4();
    let issued = Utc::now().timestamp();
    let expires = DateTime::<Utc>::from_timestamp(issued + SESSION_SECS, 0).unwrap_or_else(Utc::now);
    let address = origin.client.and_then(|c| c.shown());
    sqlx::query("INSERT INTO sessions (id, member_id, expires_at, user_agent, address) VALUES ($1, $2, $3, $4, $5)")
        .bind(id)
        .bind(member.as_uuid())
        .bind(expires)
        .bind(origin.user_agent.as_deref())
        .bind(address)
        .execute(db)
        .await?;
    sweep_expired(db).await?;
    Ok((id, issued))
}

/// Deletes up to [`SWEEP_BATCH`] expired sessions; rows another sweep holds are skipped, so
/// concurrent log-ins never wait on each other here.
pub(crate) async fn sweep_expired(db: &PgPool) -> ApiResult<u64> {
    let deleted = sqlx::query(
        "DELETE FROM sessions WHERE id IN (
             SELECT id FROM sessions WHERE expires_at <= now() LIMIT $1 FOR UPDATE SKIP LOCKED)",
    )
    .bind(SWEEP_BATCH)
    .execute(db)
    .await?
    .rows_affected();
    Ok(deleted)
}

/// The member's live sessions, newest first; `current` marks session `sid`.
pub(crate) async fn list(db: &PgPool, member: MemberId, current: Uuid) -> ApiResult<Vec<Session>> {
    type Row = (Uuid, DateTime<Utc>, DateTime<Utc>, Option<String>, Option<String>);
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT id, created_at, expires_at, user_agent, address FROM sessions
         WHERE member_id = $1 AND revoked_at IS NULL AND expires_at > now() ORDER BY created_at DESC, id",
    )
    .bind(member.as_uuid())
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, created_at, expires_at, user_agent, address)| Session {
            id,
            created_at,
            expires_at,
            current: id == current,
            user_agent,
            address,
        })
        .collect())
}

/// The member of session `sid`, if the session is theirs, unrevoked and unexpired.
pub(crate) async fn live_member(db: &PgPool, member: Uuid, sid: Uuid) -> ApiResult<Option<Member>> {
    Ok(sqlx::query_as::<_, MemberRow>(
        "SELECT m.id, m.email, m.role, m.created_at FROM sessions s JOIN members m ON m.id = s.member_id
         WHERE s.id = $1 AND s.member_id = $2 AND s.revoked_at IS NULL AND s.expires_at > now()
           AND m.deleted_at IS NULL",
    )
    .bind(sid)
    .bind(member)
    .fetch_optional(db)
    .await?
    .map(Member::from))
}

/// Ends session `sid` of `member`; false when it was not live (already ended or expired).
pub(crate) async fn revoke(db: &PgPool, member: Uuid, sid: Uuid) -> ApiResult<bool> {
    let ended = sqlx::query(
        "UPDATE sessions SET revoked_at = now()
         WHERE id = $1 AND member_id = $2 AND revoked_at IS NULL AND expires_at > now()",
    )
    .bind(sid)
    .bind(member)
    .execute(db)
    .await?
    .rows_affected();
    Ok(ended == 1)
}

/// Ends every session of `member`; returns how many were live.
pub(crate) async fn revoke_all<'e>(db: impl PgExecutor<'e>, member: MemberId) -> ApiResult<u64> {
    let ended = sqlx::query("UPDATE sessions SET revoked_at = now() WHERE member_id = $1 AND revoked_at IS NULL")
        .bind(member.as_uuid())
        .execute(db)
        .await?
        .rows_affected();
    Ok(ended)
}
