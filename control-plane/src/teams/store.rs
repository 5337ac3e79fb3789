//! Team rows and memberships in PostgreSQL: the membership a request is checked against, the
//! caller's teams, the personal team sign-up makes, suspension and limits.

use super::{TeamId, TeamRole};
use crate::members::MemberId;
use aqs_core::{ApiError, ApiResult};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

/// A member's place in one team.
#[derive(Clone, Debug)]
pub struct Membership {
    pub team: TeamId,
    pub name: String,
    pub personal: bool,
    pub role: TeamRole,
    /// The operator's reason, while suspended.
    pub suspended: Option<String>,
}

#[derive(sqlx::FromRow)]
struct MembershipRow {
    id: Uuid,
    name: String,
    personal: bool,
    role: String,
    suspended_reason: Option<String>,
}

impl TryFrom<MembershipRow> for Membership {
    type Error = ApiError;

    fn try_from(row: MembershipRow) -> ApiResult<Self> {
        let role = super::manage::stored_role(&row.role)?;
        Ok(Self { team: TeamId(row.id), name: row.name, personal: row.personal, role, suspended: row.suspended_reason })
    }
}

const MEMBERSHIP: &str = "SELECT t.id, t.name, t.personal, m.role, t.suspended_reason
     FROM team_members m JOIN teams t ON t.id = m.team_id
     WHERE m.member_id = $1 AND t.deleted_at IS NULL";

/// `member`'s membership of the live team `team`, if they are in it.
pub async fn membership(db: &PgPool, team: Uuid, member: MemberId) -> ApiResult<Option<Membership>> {
    let row = sqlx::query_as::<_, MembershipRow>(&format!("{MEMBERSHIP} AND t.id = $2"))
        .bind(member.as_uuid())
        .bind(team)
        .fetch_optional(db)
        .await?;
    row.map(Membership::try_from).transpose()
}

/// Every live team `member` is in: the personal team first, then by name.
pub async fn memberships(db: &PgPool, member: MemberId) -> ApiResult<Vec<Membership>> {
    let rows = sqlx::query_as::<_, MembershipRow>(&format!("{MEMBERSHIP} ORDER BY t.personal DESC, t.name, t.id"))
        .bind(member.as_uuid())
        .fetch_all(db)
        .await?;
    rows.into_iter().map(Membership::try_from).collect()
}

/// The operator's reason while `team` is suspended.
pub async fn suspension(db: &PgPool, team: TeamId) -> ApiResult<Option<String>> {
    Ok(sqlx::query_scalar("SELECT suspended_reason FROM teams WHERE id = $1")
        .bind(team.0)
        .fetch_optional(db)
        .await?
        .flatten())
}

/// How many live queues `team` may have (`teams.max_queues`; an operator may raise it).
pub async fn max_queues(db: &PgPool, team: TeamId) -> ApiResult<i64> {
    let max: Option<i32> = sqlx::query_scalar("SELECT max_queues FROM teams WHERE id = $1 AND deleted_at IS NULL")
        .bind(team.0)
        .fetch_optional(db)
        .await?;
    Ok(max.map_or(0, i64::from))
}

/// What a personal team is called: not the member's email, which an erased account must not leave
/// behind.
pub const PERSONAL_NAME: &str = "Personal";

/// The personal team of a member just inserted, with them as its owner (in sign-up's transaction).
pub async fn insert_personal(tx: &mut PgConnection, member: MemberId) -> ApiResult<()> {
    sqlx::query("INSERT INTO teams (id, name, personal) VALUES ($1, $2, true)")
        .bind(member.as_uuid())
        .bind(PERSONAL_NAME)
        .execute(&mut *tx)
        .await?;
    sqlx::query("INSERT INTO team_members (team_id, member_id, role) VALUES ($1, $1, 'owner')")
        .bind(member.as_uuid())
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// The email Stripe's customer for `team` is made with: its first owner's.
pub async fn billing_email(db: &PgPool, team: TeamId) -> ApiResult<Option<String>> {
    Ok(sqlx::query_scalar(
        "SELECT m.email FROM team_members tm JOIN members m ON m.id = tm.member_id
         WHERE tm.team_id = $1 AND tm.role = 'owner' AND m.deleted_at IS NULL
         ORDER BY tm.joined_at, m.id LIMIT 1",
    )
    .bind(team.0)
    .fetch_optional(db)
    .await?)
}

/// An erased member's traces in teams: their personal team is deleted, they leave every team, and
/// the audit log keeps their id but no longer their email (in the account's closing transaction).
pub async fn close_personal(tx: &mut PgConnection, member: MemberId) -> ApiResult<()> {
    sqlx::query("UPDATE teams SET deleted_at = now() WHERE id = $1 AND deleted_at IS NULL")
        .bind(member.as_uuid())
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM team_members WHERE member_id = $1").bind(member.as_uuid()).execute(&mut *tx).await?;
    sqlx::query("UPDATE audit_events SET actor_email = NULL WHERE actor_id = $1")
        .bind(member.as_uuid())
        .execute(&mut *tx)
        .await?;
    Ok(())
}
