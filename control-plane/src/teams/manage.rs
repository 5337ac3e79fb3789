//! Teams as their members manage them: the teams a member is in, a new team, its members, their
//! roles, removal and leaving, deleting a team. Invites live in `invites`, management keys in
//! `crate::keys`.
//!
//! A team always keeps at least one owner: demoting or removing its last owner is a 409. A
//! personal team belongs to its member alone: it takes no invites, and its member can neither
//! leave it nor lose its ownership (it is deleted with the account).

use super::store::{self, Membership};
use super::{Actor, Caller, RequestOrigin, TeamId, TeamRole};
use crate::audit::{self, AuditActor, Target};
use crate::members::{Member, MemberId};
use crate::state::ControlPlane;
use crate::timefmt;
use aqs_core::{ApiError, ApiResult};
use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgConnection;
use uuid::Uuid;

/// The longest team name, in characters.
pub const NAME_MAX_CHARS: usize = crate::text::NAME_MAX_CHARS;

/// A team as one member sees it: with that member's role.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct TeamSummary {
    #[schema(value_type = String, format = Uuid)]
    pub id: TeamId,
    pub name: String,
    /// The team sign-up made for this member alone.
    pub personal: bool,
    /// The member's role in it.
    pub role: TeamRole,
}

impl From<Membership> for TeamSummary {
    fn from(m: Membership) -> Self {
        Self { id: m.team, name: m.name, personal: m.personal, role: m.role }
    }
}

/// A member of a team.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct TeamMember {
    pub member_id: Uuid,
    pub email: String,
    pub role: TeamRole,
    #[serde(serialize_with = "timefmt::rfc3339")]
    pub joined_at: DateTime<Utc>,
}

#[derive(sqlx::FromRow)]
struct TeamMemberRow {
    member_id: Uuid,
    email: String,
    role: String,
    joined_at: DateTime<Utc>,
}

impl TryFrom<TeamMemberRow> for TeamMember {
    type Error = ApiError;

    fn try_from(row: TeamMemberRow) -> ApiResult<Self> {
        Ok(Self { member_id: row.member_id, email: row.email, role: stored_role(&row.role)?, joined_at: row.joined_at })
    }
}

/// A role read back from a CHECKed column.
pub(crate) fn stored_role(text: &str) -> ApiResult<TeamRole> {
    TeamRole::parse(text).ok_or_else(|| ApiError::Internal(anyhow::anyhow!("a stored role is unknown: {text:?}")))
}

/// The role a request names, or 400 naming `field`.
pub(crate) fn parse_role(field: &str, text: &str) -> ApiResult<TeamRole> {
    TeamRole::parse(text.trim())
        .ok_or_else(|| ApiError::field(field, format!("unknown role {text:?}; use owner, admin, developer or viewer")))
}

/// Every team `member` is in, with their role: the personal team first, then by name.
pub async fn list(cp: &ControlPlane, member: MemberId) -> ApiResult<Vec<TeamSummary>> {
    Ok(store::memberships(cp.db(), member).await?.into_iter().map(TeamSummary::from).collect())
}

/// A new team named `name` (1 to 64 characters, no control characters), with `member` its owner.
pub async fn create(cp: &ControlPlane, member: &Member, origin: RequestOrigin, name: String) -> ApiResult<TeamSummary> {
    let name = crate::text::checked_name(&name)?;
    let id = Uuid::now_v7();
    let mut tx = cp.db().begin().await?;
    sqlx::query("INSERT INTO teams (id, name, personal) VALUES ($1, $2, false)")
        .bind(id)
        .bind(&name)
        .execute(&mut *tx)
        .await?;
    sqlx::query("INSERT INTO team_members (team_id, member_id, role) VALUES ($1, $2, 'owner')")
        .bind(id)
        .bind(member.id.as_uuid())
        .execute(&mut *tx)
        .await?;
    let team = TeamId::from_stored(id);
    let actor = AuditActor::of(&Actor::Member { id: member.id, email: member.email.clone() });
    audit::record_as(&mut tx, Some(team), &actor, &origin, "team.created", Target::team(team)).await?;
    tx.commit().await?;
    Ok(TeamSummary { id: team, name, personal: false, role: TeamRole::Owner })
}

const MEMBER_COLUMNS: &str = "tm.member_id, m.email, tm.role, tm.joined_at";

/// The caller's team's members: owners first, then by email.
pub async fn members(cp: &ControlPlane, caller: &Caller) -> ApiResult<Vec<TeamMember>> {
    caller.require(TeamRole::Viewer)?;
    let rows = sqlx::query_as::<_, TeamMemberRow>(&format!(
        "SELECT {MEMBER_COLUMNS} FROM team_members tm JOIN members m ON m.id = tm.member_id
         WHERE tm.team_id = $1
         ORDER BY CASE tm.role WHEN 'owner' THEN 0 WHEN 'admin' THEN 1 WHEN 'developer' THEN 2 ELSE 3 END,
                  m.email, tm.member_id"
    ))
    .bind(caller.team.as_uuid())
    .fetch_all(cp.db())
    .await?;
    rows.into_iter().map(TeamMember::try_from).collect()
}

/// Gives `member` the role `role` (owners only). Demoting the team's last owner, or the owner of a
/// personal team, is a 409.
pub async fn change_role(cp: &ControlPlane, caller: &Caller, member: Uuid, role: TeamRole) -> ApiResult<TeamMember> {
    caller.require_to_change(TeamRole::Owner)?;
    let mut tx = cp.db().begin().await?;
    let roster = lock_roster(&mut tx, caller.team).await?;
    let current = roster.role_of(member).ok_or_else(no_such_member)?;
    if current == TeamRole::Owner && role != TeamRole::Owner {
        roster.keep_owner(member)?;
    }
    let row = sqlx::query_as::<_, TeamMemberRow>(&format!(
        "UPDATE team_members tm SET role = $3 FROM members m
         WHERE tm.team_id = $1 AND tm.member_id = $2 AND m.id = tm.member_id
         RETURNING {MEMBER_COLUMNS}"
    ))
    .bind(caller.team.as_uuid())
    .bind(member)
    .bind(role.as_str())
    .fetch_one(&mut *tx)
    .await?;
    if current != role {
        audit::record(&mut tx, caller, "member.role_changed", Target::new("member", member)).await?;
    }
    tx.commit().await?;
    TeamMember::try_from(row)
}

/// Removes `member` from the caller's team: an owner removes anyone, any member removes themself
/// (leaving). The last owner can neither leave nor be removed, nor can a personal team's member:
/// 409.
pub async fn remove(cp: &ControlPlane, caller: &Caller, member: Uuid) -> ApiResult<()> {
    let leaving = caller.member().is_some_and(|me| me.as_uuid() == member);
    caller.require_to_change(if leaving { TeamRole::Viewer } else { TeamRole::Owner })?;
    let mut tx = cp.db().begin().await?;
    let roster = lock_roster(&mut tx, caller.team).await?;
    let current = roster.role_of(member).ok_or_else(no_such_member)?;
    if current == TeamRole::Owner {
        roster.keep_owner(member)?;
    }
    sqlx::query("DELETE FROM team_members WHERE team_id = $1 AND member_id = $2")
        .bind(caller.team.as_uuid())
        .bind(member)
        .execute(&mut *tx)
        .await?;
    let action = if leaving { "member.left" } else { "member.removed" };
    audit::record(&mut tx, caller, action, Target::new("member", member)).await?;
    tx.commit().await?;
    Ok(())
}

/// Deletes the caller's team (owners only; never a personal team, which goes with its account).
/// A team that still has live queues, hosts or domains is a 409: they are deleted first, so that
/// nothing keeps serving for a team nobody can reach. Its keys are revoked, its invites withdrawn
/// and its members removed.
pub async fn delete_team(cp: &ControlPlane, caller: &Caller) -> ApiResult<()> {
    caller.require_to_change(TeamRole::Owner)?;
    let team = caller.team.as_uuid();
    let mut tx = cp.db().begin().await?;
    let personal: bool =
        sqlx::query_scalar("SELECT personal FROM teams WHERE id = $1 AND deleted_at IS NULL FOR UPDATE")
            .bind(team)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| ApiError::not_found("no team with this id that you are in"))?;
    if personal {
        return Err(ApiError::Conflict("a personal team is deleted with its account, not on its own".into()));
    }
    let owned: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM queues WHERE team_id = $1 AND deleted_at IS NULL)
             OR EXISTS (SELECT 1 FROM hosts WHERE team_id = $1)
             OR EXISTS (SELECT 1 FROM domains WHERE team_id = $1)",
    )
    .bind(team)
    .fetch_one(&mut *tx)
    .await?;
    if owned {
        return Err(ApiError::Conflict(
            "the team still has queues, hosts or domains: delete them before the team".into(),
        ));
    }
    sqlx::query("UPDATE management_keys SET revoked_at = now() WHERE team_id = $1 AND revoked_at IS NULL")
        .bind(team)
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "UPDATE invites SET revoked_at = now() WHERE team_id = $1 AND accepted_at IS NULL AND revoked_at IS NULL",
    )
    .bind(team)
    .execute(&mut *tx)
    .await?;
    sqlx::query("DELETE FROM team_members WHERE team_id = $1").bind(team).execute(&mut *tx).await?;
    sqlx::query("UPDATE teams SET deleted_at = now() WHERE id = $1").bind(team).execute(&mut *tx).await?;
    audit::record(&mut tx, caller, "team.deleted", Target::team(caller.team)).await?;
    tx.commit().await?;
    Ok(())
}

/// A team's members and roles, locked for the rest of the transaction, so that two changes at
/// once cannot each see another owner and together leave none.
struct Roster {
    team: TeamId,
    personal: bool,
    members: Vec<(Uuid, TeamRole)>,
}

impl Roster {
    fn role_of(&self, member: Uuid) -> Option<TeamRole> {
        self.members.iter().find(|(id, _)| *id == member).map(|(_, role)| *role)
    }

    /// 409 unless the team keeps an owner without `member` as one (and `member` is not the one
    /// member of a personal team).
    fn keep_owner(&self, member: Uuid) -> ApiResult<()> {
        if self.personal && member == self.team.as_uuid() {
            return Err(ApiError::Conflict(
                "a personal team always belongs to its member: create a team to share".into(),
            ));
        }
        let others = self.members.iter().filter(|(id, role)| *id != member && *role == TeamRole::Owner).count();
        if others == 0 {
            return Err(ApiError::Conflict(
                "a team always keeps at least one owner: make another member owner first".into(),
            ));
        }
        Ok(())
    }
}

async fn lock_roster(tx: &mut PgConnection, team: TeamId) -> ApiResult<Roster> {
    let personal: bool = sqlx::query_scalar("SELECT personal FROM teams WHERE id = $1 FOR UPDATE")
        .bind(team.as_uuid())
        .fetch_one(&mut *tx)
        .await?;
    let rows: Vec<(Uuid, String)> =
        sqlx::query_as("SELECT member_id, role FROM team_members WHERE team_id = $1 ORDER BY member_id FOR UPDATE")
            .bind(team.as_uuid())
            .fetch_all(&mut *tx)
            .await?;
    let members = rows.into_iter().map(|(id, role)| Ok((id, stored_role(&role)?))).collect::<ApiResult<_>>()?;
    Ok(Roster { team, personal, members })
}

fn no_such_member() -> ApiError {
    ApiError::not_found("no member with this id in the team")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_roster_keeps_an_owner() {
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let team = TeamId::from_stored(Uuid::now_v7());
        let roster = Roster { team, personal: false, members: vec![(a, TeamRole::Owner), (b, TeamRole::Admin)] };
        assert!(matches!(roster.keep_owner(a), Err(ApiError::Conflict(_))));
        let roster = Roster { team, personal: false, members: vec![(a, TeamRole::Owner), (b, TeamRole::Owner)] };
        assert!(roster.keep_owner(a).is_ok());
        let personal = Roster { team: TeamId::from_stored(a), personal: true, members: roster.members.clone() };
        assert!(matches!(personal.keep_owner(a), Err(ApiError::Conflict(_))));
    }
}
