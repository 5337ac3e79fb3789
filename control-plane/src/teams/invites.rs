//! Invites: an owner invites someone by email with a role and gets a link,
//! `<public url>/invites/<secret>`, valid 7 days and for one use. Only the SHA-256 of the secret is
//! stored; the link is shown once.
//!
//! **Who may accept.** Any signed-in member holding the link, whatever their email: the link is
//! the credential (as a shared-document link is), the email only says whom the owner meant, and
//! members often sign up with another address than the one a colleague knows. The owner sees who
//! joined in the member list and the audit log (`member.joined`), and can remove them.
//!
//! A personal team takes no invites (it belongs to its member alone): create a team to share.

use super::manage::{TeamSummary, parse_role, stored_role};
use super::{Actor, Caller, RequestOrigin, TeamId, TeamRole};
use crate::audit::{self, AuditActor, Target};
use crate::auth::normalise_email;
use crate::members::Member;
use crate::state::ControlPlane;
use crate::text::refuse_control;
use crate::timefmt;
use aqs_core::token::TokenSecret;
use aqs_core::{ApiError, ApiResult};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The prefix of an invite's secret (same shape as a token's: 32 base62 characters and a
/// checksum, so a mistyped link is refused before any lookup).
pub const INVITE_PREFIX: &str = "aqi_";

/// How long an invite link is valid.
pub const VALID_DAYS: i64 = 7;

/// The most invites a team may have pending at once.
pub const MAX_PENDING: i64 = 100;

/// `POST /api/v1/teams/{id}/invites`.
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewInvite {
    /// Whom the invite is meant for (shown on the invite page).
    pub email: String,
    /// `owner`, `admin`, `developer` or `viewer`.
    #[schema(value_type = TeamRole)]
    pub role: String,
}

/// A pending invite, as its team's owners see it: never its secret.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Invite {
    pub id: Uuid,
    pub email: String,
    pub role: TeamRole,
    /// `null` once the inviting member's account is erased.
    pub invited_by_email: Option<String>,
    #[serde(serialize_with = "timefmt::rfc3339")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "timefmt::rfc3339")]
    pub expires_at: DateTime<Utc>,
}

/// An invite just made, with its link: the only time the link is shown.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct CreatedInvite {
    pub invite: Invite,
    /// `<public url>/invites/<secret>`.
    pub url: String,
}

/// What the holder of a link sees before accepting.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct InvitePreview {
    pub team_name: String,
    pub role: TeamRole,
    /// Whom the invite was meant for.
    pub email: String,
    #[serde(serialize_with = "timefmt::rfc3339")]
    pub expires_at: DateTime<Utc>,
}

#[derive(sqlx::FromRow)]
struct InviteRow {
    id: Uuid,
    email: String,
    role: String,
    invited_by_email: Option<String>,
    created_at: DateTime<Utc>,
    expires_at: DateTime<Utc>,
}

impl TryFrom<InviteRow> for Invite {
    type Error = ApiError;

    fn try_from(row: InviteRow) -> ApiResult<Self> {
        Ok(Self {
            id: row.id,
            email: row.email,
            role: stored_role(&row.role)?,
            invited_by_email: row.invited_by_email,
            created_at: row.created_at,
            expires_at: row.expires_at,
        })
    }
}

/// An erased member keeps their row, not their email (`account`): such an inviter shows as none.
const INVITE_COLUMNS: &str = "i.id, i.email, i.role,
    CASE WHEN m.deleted_at IS NULL THEN m.email END AS invited_by_email, i.created_at, i.expires_at";

/// Invites `input.email` to the caller's team with `input.role` (owners only; a member acting, not
/// a key). 409 for a personal team, for an email already in the team, and past
/// [`MAX_PENDING`] pending invites.
pub async fn create(cp: &ControlPlane, caller: &Caller, input: NewInvite) -> ApiResult<CreatedInvite> {
    caller.require_to_change(TeamRole::Owner)?;
    let inviter =
        caller.member().ok_or_else(|| ApiError::Forbidden("a member invites, not a management key".into()))?;
    refuse_control("email", &input.email)?;
    let email = normalise_email(&input.email)?;
    let role = parse_role("role", &input.role)?;
    let team = caller.team.as_uuid();

    let mut tx = cp.db().begin().await?;
    // Serialises invites of one team, so the pending count holds.
    let personal: bool = sqlx::query_scalar("SELECT personal FROM teams WHERE id = $1 FOR UPDATE")
        .bind(team)
        .fetch_one(&mut *tx)
        .await?;
    if personal {
        return Err(ApiError::Conflict("a personal team takes no invites: create a team to share".into()));
    }
    let already: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM team_members tm JOIN members m ON m.id = tm.member_id
                        WHERE tm.team_id = $1 AND lower(m.email) = $2)",
    )
    .bind(team)
    .bind(&email)
    .fetch_one(&mut *tx)
    .await?;
    if already {
        return Err(ApiError::Conflict(format!("{email} is already a member of this team")));
    }
    let pending: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM invites WHERE team_id = $1 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now()",
    )
    .bind(team)
    .fetch_one(&mut *tx)
    .await?;
    if pending >= MAX_PENDING {
        return Err(ApiError::Conflict(format!(
            "the team has {MAX_PENDING} pending invites: revoke some before inviting more"
        )));
    }

    let secret = TokenSecret::generate_with(INVITE_PREFIX);
    let id = Uuid::now_v7();
    let row = sqlx::query_as::<_, InviteRow>(&format!(
        "WITH i AS (
             INSERT INTO invites (id, team_id, email, role, secret_hash, invited_by, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(days => $7))
             RETURNING *)
         SELECT {INVITE_COLUMNS} FROM i JOIN members m ON m.id = i.invited_by"
    ))
    .bind(id)
    .bind(team)
    .bind(&email)
    .bind(role.as_str())
    .bind(secret.hash())
    .bind(inviter.as_uuid())
    .bind(VALID_DAYS as i32)
    .fetch_one(&mut *tx)
    .await?;
    audit::record(&mut tx, caller, "member.invited", Target::new("invite", id)).await?;
    tx.commit().await?;
    let url = format!("{}/invites/{}", cp.public_url(), secret.expose());
    Ok(CreatedInvite { invite: Invite::try_from(row)?, url })
}

/// The caller's team's pending invites (not accepted, revoked or expired), newest first (owners).
pub async fn pending(cp: &ControlPlane, caller: &Caller) -> ApiResult<Vec<Invite>> {
    caller.require(TeamRole::Owner)?;
    let rows = sqlx::query_as::<_, InviteRow>(&format!(
        "SELECT {INVITE_COLUMNS} FROM invites i JOIN members m ON m.id = i.invited_by
         WHERE i.team_id = $1 AND i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > now()
         ORDER BY i.created_at DESC, i.id DESC"
    ))
    .bind(caller.team.as_uuid())
    .fetch_all(cp.db())
    .await?;
    rows.into_iter().map(Invite::try_from).collect()
}

/// Withdraws a pending invite of the caller's team (owners); its link then answers 404. An
/// invite already accepted, revoked or unknown is a 404.
pub async fn revoke(cp: &ControlPlane, caller: &Caller, id: Uuid) -> ApiResult<()> {
    caller.require_to_change(TeamRole::Owner)?;
    let mut tx = cp.db().begin().await?;
    sqlx::query_scalar::<_, Uuid>(
        "UPDATE invites SET revoked_at = now()
         WHERE id = $1 AND team_id = $2 AND accepted_at IS NULL AND revoked_at IS NULL
         RETURNING id",
    )
    .bind(id)
    .bind(caller.team.as_uuid())
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(|| ApiError::not_found("no pending invite with this id in the team"))?;
    audit::record(&mut tx, caller, "invite.revoked", Target::new("invite", id)).await?;
    tx.commit().await?;
    Ok(())
}

/// The team and role behind a link, for its holder (no session needed). 404 for a link that is
/// unknown, used, revoked or expired, with a message saying which.
pub async fn preview(cp: &ControlPlane, secret: &str) -> ApiResult<InvitePreview> {
    let hash = secret_hash(secret)?;
    let row: Option<(String, String, String, DateTime<Utc>, bool)> = sqlx::query_as(
        "SELECT t.name, i.role, i.email, i.expires_at,
                i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > now()
         FROM invites i JOIN teams t ON t.id = i.team_id
         WHERE i.secret_hash = $1 AND t.deleted_at IS NULL",
    )
    .bind(&hash)
    .fetch_optional(cp.db())
    .await?;
    match row {
        Some((team_name, role, email, expires_at, true)) => {
            Ok(InvitePreview { team_name, role: stored_role(&role)?, email, expires_at })
        }
        _ => Err(why_not(cp, &hash).await),
    }
}

/// `member` joins the team of the invite behind `secret` with the invite's role, and the invite is
/// spent: in one transaction, so a link is used once however many accept at once. Any signed-in
/// member holding the link may accept (see the module's documentation). 404 for a link that is
/// unknown, used, revoked or expired; 409 when `member` is already in the team (the invite stays
/// unused).
pub async fn accept(cp: &ControlPlane, member: &Member, origin: RequestOrigin, secret: &str) -> ApiResult<TeamSummary> {
    let hash = secret_hash(secret)?;
    let mut tx = cp.db().begin().await?;
    let spent: Option<(Uuid, Uuid, String, String, bool)> = sqlx::query_as(
        "UPDATE invites i SET accepted_at = now(), accepted_by = $2
         FROM teams t
         WHERE i.secret_hash = $1 AND i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > now()
           AND t.id = i.team_id AND t.deleted_at IS NULL
         RETURNING i.id, i.team_id, i.role, t.name, t.personal",
    )
    .bind(&hash)
    .bind(member.id.as_uuid())
    .fetch_optional(&mut *tx)
    .await?;
    let Some((invite, team, role, name, personal)) = spent else {
        drop(tx);
        return Err(why_not(cp, &hash).await);
    };
    let joined =
        sqlx::query("INSERT INTO team_members (team_id, member_id, role) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
            .bind(team)
            .bind(member.id.as_uuid())
            .bind(&role)
            .execute(&mut *tx)
            .await?;
    if joined.rows_affected() == 0 {
        return Err(ApiError::Conflict("you are already a member of this team".into()));
    }
    let team = TeamId::from_stored(team);
    let actor = AuditActor::of(&Actor::Member { id: member.id, email: member.email.clone() });
    audit::record_as(&mut tx, Some(team), &actor, &origin, "member.joined", Target::new("invite", invite)).await?;
    tx.commit().await?;
    Ok(TeamSummary { id: team, name, personal, role: stored_role(&role)? })
}

/// The hash of a well-formed invite secret; anything else names no invite.
fn secret_hash(secret: &str) -> ApiResult<String> {
    TokenSecret::parse_with(INVITE_PREFIX, secret.trim()).map(|s| s.hash()).ok_or_else(unknown)
}

fn unknown() -> ApiError {
    ApiError::not_found("no invite at this link: check that it was copied whole")
}

/// Why the invite behind `hash` cannot be used: the 404 to answer.
async fn why_not(cp: &ControlPlane, hash: &str) -> ApiError {
    let state: Result<Option<(bool, bool, bool)>, _> = sqlx::query_as(
        "SELECT i.accepted_at IS NOT NULL, i.revoked_at IS NOT NULL OR t.deleted_at IS NOT NULL, i.expires_at <= now()
         FROM invites i JOIN teams t ON t.id = i.team_id WHERE i.secret_hash = $1",
    )
    .bind(hash)
    .fetch_optional(cp.db())
    .await;
    match state {
        Ok(Some((true, _, _))) => ApiError::not_found("this invite was already used: ask the team's owner for another"),
        Ok(Some((_, true, _))) => ApiError::not_found("this invite was withdrawn: ask the team's owner for another"),
        Ok(Some((_, _, true))) => ApiError::not_found("this invite expired: ask the team's owner for another"),
        Ok(_) => unknown(),
        Err(err) => err.into(),
    }
}
