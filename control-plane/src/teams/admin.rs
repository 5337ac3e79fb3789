//! Operators and teams: finding a team, suspending it with a reason and lifting the suspension,
//! and raising (or lowering) its limits. Each function takes an [`AuthOperator`], which only an
//! operator's session yields; each change writes its audit event in its own transaction.
//!
//! A suspension reaches the data plane through the `suspended` field of each of the team's live
//! queues' meta hashes (`aqs_core::projection`), written after the change commits
//! ([`project_suspension`]) and rewritten by the start-up re-sync. That projection re-reads the
//! team under its row lock, so two changes of one team cannot reach Redis in the wrong order: a
//! later change waits for the lock to commit, and then projects its own state.
//!
//! Also here, for `queues`: [`check_storage`], the team's `max_storage_bytes` held against the sum
//! of its queues' storage limits.

use super::{RequestOrigin, TeamId, TeamRole};
use crate::audit::{self, AuditActor, Target};
use crate::auth::AuthOperator;
use crate::projection;
use crate::state::ControlPlane;
use crate::text::refuse_control;
use crate::timefmt;
use aqs_core::ids::QueueId;
use aqs_core::limits::MIB;
use aqs_core::{ApiError, ApiResult};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};
use sqlx::PgConnection;
use uuid::Uuid;

/// The longest reason an operator may give, in characters (the column's CHECK).
pub const REASON_MAX_CHARS: usize = 500;
/// The bounds of `max_queues` (the column's CHECK).
pub const MAX_QUEUES_MIN: u32 = 1;
pub const MAX_QUEUES_MAX: u32 = 10_000;
/// The bounds of `max_storage_bytes`: 1 MiB to 1 TiB (the column's CHECK).
pub const MAX_STORAGE_MIN: u64 = MIB;
pub const MAX_STORAGE_MAX: u64 = 1024 * 1024 * MIB;
/// How many teams a search without an email lists, newest first.
const RECENT: i64 = 100;

/// A team as operators see it.
#[derive(Clone, Debug, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct AdminTeam {
    pub id: Uuid,
    pub name: String,
    /// A member's personal team (its id is theirs).
    pub personal: bool,
    /// The operator's reason while the team is suspended.
    pub suspended_reason: Option<String>,
    #[serde(serialize_with = "timefmt::rfc3339_opt")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub suspended_at: Option<DateTime<Utc>>,
    pub max_queues: i32,
    /// Stored bytes across the team's queues' limits; `null`: no bound but each queue's own.
    pub max_storage_bytes: Option<i64>,
    pub member_count: i64,
    /// Live queues.
    pub queue_count: i64,
    /// The sum of the live queues' storage limits.
    pub storage_limits_total: i64,
    #[serde(serialize_with = "timefmt::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: DateTime<Utc>,
}

/// One member of a team, for an operator.
#[derive(Clone, Debug, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct TeamMemberEntry {
    pub id: Uuid,
    pub email: String,
    #[schema(value_type = TeamRole)]
    pub role: String,
}

/// A team and its members.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct TeamDetail {
    #[serde(flatten)]
    pub team: AdminTeam,
    pub members: Vec<TeamMemberEntry>,
}

/// `PATCH /api/v1/admin/teams/{id}/limits`: either or both; `max_storage_bytes: null` removes the
/// team's storage bound.
#[derive(Clone, Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsChange {
    /// 1 to 10000 live queues.
    #[schema(minimum = 1, maximum = 10000)]
    pub max_queues: Option<u32>,
    /// 1 MiB to 1 TiB across the team's queues' storage limits, or `null` for no such bound.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<u64>, minimum = 1048576, maximum = 1099511627776_u64)]
    pub max_storage_bytes: Option<Option<u64>>,
}

/// A field that is present (`null` included) is `Some`; an absent one stays `None` (`default`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

const SUMMARY: &str = "SELECT t.id, t.name, t.personal, t.suspended_reason, t.suspended_at, t.max_queues,
        t.max_storage_bytes, t.created_at,
        (SELECT count(*) FROM team_members m WHERE m.team_id = t.id) AS member_count,
        (SELECT count(*) FROM queues q WHERE q.team_id = t.id AND q.deleted_at IS NULL) AS queue_count,
        (SELECT COALESCE(sum(q.storage_limit), 0)::bigint FROM queues q
          WHERE q.team_id = t.id AND q.deleted_at IS NULL) AS storage_limits_total
     FROM teams t WHERE t.deleted_at IS NULL";

/// The live teams of the member with `email` (personal first), or without one the newest teams.
pub async fn find(cp: &ControlPlane, _operator: &AuthOperator, email: Option<&str>) -> ApiResult<Vec<AdminTeam>> {
    let Some(email) = email.map(str::trim).filter(|e| !e.is_empty()) else {
        let recent = format!("{SUMMARY} ORDER BY t.created_at DESC, t.id LIMIT {RECENT}");
        return Ok(sqlx::query_as::<_, AdminTeam>(&recent).fetch_all(cp.db()).await?);
    };
    refuse_control("email", email)?;
    let of_member = format!(
        "{SUMMARY} AND t.id IN (SELECT tm.team_id FROM team_members tm JOIN members mb ON mb.id = tm.member_id
                                WHERE mb.email = $1 AND mb.deleted_at IS NULL)
         ORDER BY t.personal DESC, t.name, t.id"
    );
    Ok(sqlx::query_as::<_, AdminTeam>(&of_member).bind(email.to_lowercase()).fetch_all(cp.db()).await?)
}

/// One live team and its members (owners first).
pub async fn get(cp: &ControlPlane, _operator: &AuthOperator, team: &str) -> ApiResult<TeamDetail> {
    let team = summary(cp, parse_id(team)?).await?;
    let members = sqlx::query_as::<_, TeamMemberEntry>(
        "SELECT mb.id, mb.email, tm.role FROM team_members tm JOIN members mb ON mb.id = tm.member_id
         WHERE tm.team_id = $1
         ORDER BY array_position(ARRAY['owner', 'admin', 'developer', 'viewer'], tm.role), tm.joined_at, mb.id",
    )
    .bind(team.id)
    .fetch_all(cp.db())
    .await?;
    Ok(TeamDetail { team, members })
}

/// Suspends a team: from then on every queue token and management key of it answers 403
/// `team_suspended`, its members may read but change nothing, and its queues' push delivery
/// stops. 409 when it is suspended already (lift the suspension first to give another reason, so
/// `suspended_at` keeps saying since when).
pub async fn suspend(
    cp: &ControlPlane,
    operator: &AuthOperator,
    origin: &RequestOrigin,
    team: &str,
    reason: &str,
) -> ApiResult<AdminTeam> {
    let id = parse_id(team)?;
    let reason = check_reason(reason)?;
    let mut tx = cp.db().begin().await?;
    if let Some(current) = lock(&mut tx, id).await? {
        return Err(ApiError::Conflict(format!(
            "this team is suspended already ({current}); unsuspend it first to give another reason"
        )));
    }
    sqlx::query("UPDATE teams SET suspended_at = now(), suspended_reason = $2 WHERE id = $1")
        .bind(id)
        .bind(&reason)
        .execute(&mut *tx)
        .await?;
    let team = TeamId::from_stored(id);
    audit::record_as(&mut tx, Some(team), &actor(operator), origin, "team.suspended", Target::team(team)).await?;
    tx.commit().await?;
    tracing::info!(operator = %operator.id().as_uuid(), %team, "team suspended");
    project_suspension(cp, team).await?;
    summary(cp, id).await
}

/// Lifts a suspension; 409 when the team is not suspended.
pub async fn unsuspend(
    cp: &ControlPlane,
    operator: &AuthOperator,
    origin: &RequestOrigin,
    team: &str,
) -> ApiResult<AdminTeam> {
    let id = parse_id(team)?;
    let mut tx = cp.db().begin().await?;
    if lock(&mut tx, id).await?.is_none() {
        return Err(ApiError::Conflict("this team is not suspended".into()));
    }
    sqlx::query("UPDATE teams SET suspended_at = NULL, suspended_reason = NULL WHERE id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    let team = TeamId::from_stored(id);
    audit::record_as(&mut tx, Some(team), &actor(operator), origin, "team.unsuspended", Target::team(team)).await?;
    tx.commit().await?;
    tracing::info!(operator = %operator.id().as_uuid(), %team, "team unsuspended");
    project_suspension(cp, team).await?;
    summary(cp, id).await
}

/// Changes a team's limits. Lowering one below what the team has is allowed: what exists stays,
/// and only what would go further is refused (a new queue, a larger storage limit).
pub async fn set_limits(
    cp: &ControlPlane,
    operator: &AuthOperator,
    origin: &RequestOrigin,
    team: &str,
    change: LimitsChange,
) -> ApiResult<AdminTeam> {
    let id = parse_id(team)?;
    if change.max_queues.is_none() && change.max_storage_bytes.is_none() {
        return Err(ApiError::InvalidRequest("give max_queues, max_storage_bytes or both".into()));
    }
    if let Some(max) = change.max_queues
        && !(MAX_QUEUES_MIN..=MAX_QUEUES_MAX).contains(&max)
    {
        return Err(ApiError::field("max_queues", format!("give {MAX_QUEUES_MIN} to {MAX_QUEUES_MAX} queues")));
    }
    if let Some(Some(bytes)) = change.max_storage_bytes
        && !(MAX_STORAGE_MIN..=MAX_STORAGE_MAX).contains(&bytes)
    {
        return Err(ApiError::field(
            "max_storage_bytes",
            format!("give {MAX_STORAGE_MIN} (1 MiB) to {MAX_STORAGE_MAX} (1 TiB) bytes, or null for no bound"),
        ));
    }
    let mut tx = cp.db().begin().await?;
    lock(&mut tx, id).await?;
    sqlx::query(
        "UPDATE teams SET max_queues = COALESCE($2, max_queues),
                          max_storage_bytes = CASE WHEN $3 THEN $4 ELSE max_storage_bytes END
         WHERE id = $1",
    )
    .bind(id)
    .bind(change.max_queues.map(|max| max as i32))
    .bind(change.max_storage_bytes.is_some())
    .bind(change.max_storage_bytes.flatten().map(|bytes| bytes as i64))
    .execute(&mut *tx)
    .await?;
    let team = TeamId::from_stored(id);
    audit::record_as(&mut tx, Some(team), &actor(operator), origin, "team.limits_changed", Target::team(team)).await?;
    tx.commit().await?;
    tracing::info!(operator = %operator.id().as_uuid(), %team, ?change, "team limits changed");
    summary(cp, id).await
}

/// Writes the team's suspension as PostgreSQL has it now into each of its live queues' meta
/// hashes. The team's row stays locked while Redis is written, so these writes follow the order
/// in which the changes committed: a change committed after this read waits for the lock, and its
/// own projection runs after this one. A Redis failure is a 503 that the re-sync repairs.
pub async fn project_suspension(cp: &ControlPlane, team: TeamId) -> ApiResult<()> {
    let mut tx = cp.db().begin().await?;
    let reason: Option<Option<String>> =
        sqlx::query_scalar("SELECT suspended_reason FROM teams WHERE id = $1 FOR UPDATE")
            .bind(team.as_uuid())
            .fetch_optional(&mut *tx)
            .await?;
    let Some(reason) = reason else { return Ok(()) };
    let queues: Vec<Uuid> = sqlx::query_scalar("SELECT id FROM queues WHERE team_id = $1 AND deleted_at IS NULL")
        .bind(team.as_uuid())
        .fetch_all(&mut *tx)
        .await?;
    let queues: Vec<QueueId> = queues.into_iter().map(QueueId).collect();
    projection::put_suspension(&mut cp.redis(), cp.keys(), &queues, reason.as_deref())
        .await
        .map_err(projection::failed)?;
    tx.commit().await?;
    let written: Vec<String> = queues.iter().map(|id| cp.keys().queue(*id).meta()).collect();
    cp.engine().confirm_replicated(&written).await?;
    Ok(())
}

/// 400 on `storage_limit` when giving the queue `slug` (`None`: a new queue) the storage limit
/// `bytes` takes the sum of the team's live queues' limits past the team's `max_storage_bytes`,
/// and is more than the sum was. Run in the change's transaction: it locks the team's row, so two
/// changes of one team are checked one after the other.
pub(crate) async fn check_storage(
    tx: &mut PgConnection,
    team: TeamId,
    slug: Option<&str>,
    bytes: u64,
) -> ApiResult<()> {
    let row: Option<(Option<i64>, i64, i64)> = sqlx::query_as(
        "SELECT t.max_storage_bytes,
                (SELECT COALESCE(sum(q.storage_limit), 0)::bigint FROM queues q
                  WHERE q.team_id = t.id AND q.deleted_at IS NULL AND q.slug IS DISTINCT FROM $2),
                (SELECT COALESCE(sum(q.storage_limit), 0)::bigint FROM queues q
                  WHERE q.team_id = t.id AND q.deleted_at IS NULL AND q.slug = $2)
         FROM teams t WHERE t.id = $1 FOR UPDATE",
    )
    .bind(team.as_uuid())
    .bind(slug)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((Some(max), others, current)) = row else { return Ok(()) };
    let (max, others, current) = (max as u64, others as u64, current as u64);
    let total = others.saturating_add(bytes);
    if total <= max || total <= others + current {
        return Ok(());
    }
    let left = max.saturating_sub(others);
    Err(ApiError::field(
        "storage_limit",
        format!(
            "this team's queues may hold at most {max} bytes of storage limits in total; its other queues \
             have {others}, so this one may have at most {left} (ask us to raise the team's limit)"
        ),
    ))
}

/// The 403 every change of a suspended team answers.
pub(crate) fn suspended(reason: &str) -> ApiError {
    ApiError::TeamSuspended(format!("an operator suspended this team: {reason}"))
}

/// Locks a live team's row for a change; its suspension reason, if any. 404 when there is none.
async fn lock(tx: &mut PgConnection, id: Uuid) -> ApiResult<Option<String>> {
    let row: Option<Option<String>> =
        sqlx::query_scalar("SELECT suspended_reason FROM teams WHERE id = $1 AND deleted_at IS NULL FOR UPDATE")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
    row.ok_or_else(no_such_team)
}

async fn summary(cp: &ControlPlane, id: Uuid) -> ApiResult<AdminTeam> {
    sqlx::query_as::<_, AdminTeam>(&format!("{SUMMARY} AND t.id = $1"))
        .bind(id)
        .fetch_optional(cp.db())
        .await?
        .ok_or_else(no_such_team)
}

fn check_reason(reason: &str) -> ApiResult<String> {
    refuse_control("reason", reason)?;
    let reason = reason.trim();
    let chars = reason.chars().count();
    if chars == 0 || chars > REASON_MAX_CHARS {
        return Err(ApiError::field(
            "reason",
            format!("give the reason the team's members will see, 1 to {REASON_MAX_CHARS} characters"),
        ));
    }
    Ok(reason.to_owned())
}

fn actor(operator: &AuthOperator) -> AuditActor {
    AuditActor::operator(operator.id().as_uuid(), &operator.member().email)
}

fn parse_id(team: &str) -> ApiResult<Uuid> {
    Uuid::try_parse(team).map_err(|_| no_such_team())
}

fn no_such_team() -> ApiError {
    ApiError::not_found("no team with this id")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_trimmed_and_bounded() {
        assert_eq!(check_reason("  unpaid invoice ").unwrap(), "unpaid invoice");
        for bad in ["", "   ", "line\nbreak"] {
            assert!(check_reason(bad).unwrap_err().to_string().starts_with("reason"), "{bad:?}");
        }
        assert!(check_reason(&"x".repeat(REASON_MAX_CHARS)).is_ok());
        assert!(check_reason(&"é".repeat(REASON_MAX_CHARS + 1)).is_err());
    }

    #[test]
    fn limits_tell_an_absent_storage_bound_from_a_cleared_one() {
        let parse = |text: &str| serde_json::from_str::<LimitsChange>(text).unwrap().max_storage_bytes;
        assert_eq!(parse("{}"), None);
        assert_eq!(parse(r#"{"max_storage_bytes": null}"#), Some(None));
        assert_eq!(parse(r#"{"max_storage_bytes": 1048576}"#), Some(Some(1 << 20)));
    }
}
