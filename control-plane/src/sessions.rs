//! Session rows: what makes a signed session JWT end before it expires. Every authenticated
//! request looks its session up together with its member, in the one indexed query that used to
//! load the member alone, so checking revocation costs nothing extra and a log-out is effective at
//! once on every process (there is no cache to go stale).
//!
//! Rows past their expiry serve nothing; each new session deletes up to [`SWEEP_BATCH`] of them
//! (anyone's), so the table never holds more than a batch per log-in of dead rows.

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
}

/// Records a new session for `member`; returns its id and when it was issued (Unix seconds).
pub(crate) async fn start(db: &PgPool, member: MemberId) -> ApiResult<(Uuid, i64)> {
    let id = Uuid::new_v4();
    let issued = Utc::now().timestamp();
    let expires = DateTime::<Utc>::from_timestamp(issued + SESSION_SECS, 0).unwrap_or_else(Utc::now);
    sqlx::query("INSERT INTO sessions (id, member_id, expires_at) VALUES ($1, $2, $3)")
        .bind(id)
        .bind(member.as_uuid())
        .bind(expires)
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
    let rows: Vec<(Uuid, DateTime<Utc>, DateTime<Utc>)> = sqlx::query_as(
        "SELECT id, created_at, expires_at FROM sessions
         WHERE member_id = $1 AND revoked_at IS NULL AND expires_at > now() ORDER BY created_at DESC, id",
    )
    .bind(member.as_uuid())
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, created_at, expires_at)| Session { id, created_at, expires_at, current: id == current })
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
