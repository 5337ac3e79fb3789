//! Management keys (`acm_…`): a team's credential for automation on `/api/v1`, with a role that is
//! never `owner` (`docs/teams.md`). Only the SHA-256 of a key is stored; the secret is shown once.
//! Admins and owners create (a member, never another key), list and revoke them; a key's role is
//! never above its creator's.

use crate::audit::{self, Target};
use crate::state::ControlPlane;
use crate::teams::manage::{parse_role, stored_role};
use crate::teams::{Caller, TeamId, TeamRole};
use crate::timefmt;
use aqs_core::token::{KEY_PREFIX, TokenSecret};
use aqs_core::{ApiError, ApiResult};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A live key, as a request presenting it acts.
#[derive(Clone, Debug)]
pub struct KeyIdentity {
    pub id: Uuid,
    pub name: String,
    pub team: TeamId,
    pub role: TeamRole,
}

/// Whether a bearer credential is a management key (rather than a session JWT).
pub fn is_key(credential: &str) -> bool {
    credential.starts_with(KEY_PREFIX)
}

/// The live key behind `secret`, its last use recorded; 401 for a malformed, unknown or revoked
/// key (the same answer, so a caller learns nothing from it).
pub async fn authenticate(cp: &ControlPlane, secret: &str) -> ApiResult<KeyIdentity> {
    let invalid = || ApiError::Unauthorized("the management key is invalid or revoked".into());
    let secret = TokenSecret::parse_with(KEY_PREFIX, secret).ok_or_else(invalid)?;
    let row: Option<(Uuid, String, Uuid, String)> = sqlx::query_as(
        "UPDATE management_keys k SET last_used_at = now()
         FROM teams t
         WHERE k.secret_hash = $1 AND k.revoked_at IS NULL AND t.id = k.team_id AND t.deleted_at IS NULL
         RETURNING k.id, k.name, k.team_id, k.role",
    )
    .bind(secret.hash())
    .fetch_optional(cp.db())
    .await?;
    let (id, name, team, role) = row.ok_or_else(invalid)?;
    let role = crate::teams::manage::stored_role(&role)?;
    Ok(KeyIdentity { id, name, team: TeamId::from_stored(team), role })
}

/// The longest key name, in characters.
pub const NAME_MAX_CHARS: usize = crate::text::NAME_MAX_CHARS;

/// The most live (unrevoked) keys a team may hold.
pub const MAX_LIVE: i64 = 100;

/// `POST /api/v1/keys`.
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewKey {
    #[schema(min_length = 1, max_length = 64)]
    pub name: String,
    /// `admin`, `developer` or `viewer`: never `owner`, and not above the creator's own role.
    #[schema(value_type = TeamRole)]
    pub role: String,
}

/// A key as listed: never its secret.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct ManagementKey {
    pub id: Uuid,
    pub name: String,
    pub role: TeamRole,
    pub last_four: String,
    #[serde(serialize_with = "timefmt::rfc3339")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "timefmt::rfc3339_opt")]
    pub last_used_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "timefmt::rfc3339_opt")]
    pub revoked_at: Option<DateTime<Utc>>,
    /// `null` once the creating member's account is erased.
    pub created_by_email: Option<String>,
}

/// A key just created, with its secret: the only time the secret is shown.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct CreatedKey {
    pub key: ManagementKey,
    /// The key itself, `acm_…`: shown this once.
    pub secret: String,
}

#[derive(sqlx::FromRow)]
struct KeyRow {
    id: Uuid,
    name: String,
    role: String,
    last_four: String,
    created_at: DateTime<Utc>,
    last_used_at: Option<DateTime<Utc>>,
    revoked_at: Option<DateTime<Utc>>,
    created_by_email: Option<String>,
}

impl TryFrom<KeyRow> for ManagementKey {
    type Error = ApiError;

    fn try_from(row: KeyRow) -> ApiResult<Self> {
        Ok(Self {
            id: row.id,
            name: row.name,
            role: stored_role(&row.role)?,
            last_four: row.last_four,
            created_at: row.created_at,
            last_used_at: row.last_used_at,
            revoked_at: row.revoked_at,
            created_by_email: row.created_by_email,
        })
    }
}

/// An erased member keeps their row, not their email (`account`): such a creator shows as none.
const KEY_COLUMNS: &str = "k.id, k.name, k.role, k.last_four, k.created_at, k.last_used_at, k.revoked_at,
    CASE WHEN m.deleted_at IS NULL THEN m.email END AS created_by_email";

/// Creates a key for the caller's team (admins and owners; a member, not another key, so that
/// every key traces back to a person). Its role is never `owner` (400) nor above the creator's
/// own (403). 409 past [`MAX_LIVE`] live keys.
pub async fn create(cp: &ControlPlane, caller: &Caller, input: NewKey) -> ApiResult<CreatedKey> {
    caller.require_to_change(TeamRole::Admin)?;
    let creator = caller
        .member()
        .ok_or_else(|| ApiError::Forbidden("a member creates management keys, not another key".into()))?;
    let name = crate::text::checked_name(&input.name)?;
    let role = parse_role("role", &input.role)?;
    if role == TeamRole::Owner {
        return Err(ApiError::field("role", "a management key is never an owner: use admin, developer or viewer"));
    }
    if role > caller.role {
        return Err(ApiError::Forbidden(format!(
            "a key with the {role} role needs the {role} role or higher in the team; yours is {}",
            caller.role
        )));
    }
    let team = caller.team.as_uuid();
    let mut tx = cp.db().begin().await?;
    // Serialises key creation in one team, so the live count holds.
    sqlx::query("SELECT 1 FROM teams WHERE id = $1 FOR UPDATE").bind(team).execute(&mut *tx).await?;
    let live: i64 =
        sqlx::query_scalar("SELECT count(*) FROM management_keys WHERE team_id = $1 AND revoked_at IS NULL")
            .bind(team)
            .fetch_one(&mut *tx)
            .await?;
    if live >= MAX_LIVE {
        return Err(ApiError::Conflict(format!("the team has {MAX_LIVE} live keys: revoke some before creating more")));
    }
    let secret = TokenSecret::generate_with(KEY_PREFIX);
    let id = Uuid::now_v7();
    let row = sqlx::query_as::<_, KeyRow>(&format!(
        "WITH k AS (
             INSERT INTO management_keys (id, team_id, name, role, secret_hash, last_four, created_by)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             RETURNING *)
         SELECT {KEY_COLUMNS} FROM k JOIN members m ON m.id = k.created_by"
    ))
    .bind(id)
    .bind(team)
    .bind(&name)
    .bind(role.as_str())
    .bind(secret.hash())
    .bind(secret.last_four())
    .bind(creator.as_uuid())
    .fetch_one(&mut *tx)
    .await?;
    audit::record(&mut tx, caller, "key.created", Target::new("key", id)).await?;
    tx.commit().await?;
    Ok(CreatedKey { key: ManagementKey::try_from(row)?, secret: secret.expose().to_owned() })
}

/// The caller's team's keys, newest first, revoked ones included (admins and owners).
pub async fn list(cp: &ControlPlane, caller: &Caller) -> ApiResult<Vec<ManagementKey>> {
    caller.require(TeamRole::Admin)?;
    let rows = sqlx::query_as::<_, KeyRow>(&format!(
        "SELECT {KEY_COLUMNS} FROM management_keys k JOIN members m ON m.id = k.created_by
         WHERE k.team_id = $1 ORDER BY k.created_at DESC, k.id DESC"
    ))
    .bind(caller.team.as_uuid())
    .fetch_all(cp.db())
    .await?;
    rows.into_iter().map(ManagementKey::try_from).collect()
}

/// Revokes a key of the caller's team (admins and owners): its next request answers 401.
/// Revoking a revoked key again is a success without a second event; an unknown id is a 404.
pub async fn revoke(cp: &ControlPlane, caller: &Caller, id: Uuid) -> ApiResult<()> {
    caller.require_to_change(TeamRole::Admin)?;
    let mut tx = cp.db().begin().await?;
    let was_revoked: bool = sqlx::query_scalar(
        "SELECT revoked_at IS NOT NULL FROM management_keys WHERE id = $1 AND team_id = $2 FOR UPDATE",
    )
    .bind(id)
    .bind(caller.team.as_uuid())
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(|| ApiError::not_found("no management key with this id in the team"))?;
    if !was_revoked {
        sqlx::query("UPDATE management_keys SET revoked_at = now() WHERE id = $1").bind(id).execute(&mut *tx).await?;
        audit::record(&mut tx, caller, "key.revoked", Target::new("key", id)).await?;
    }
    tx.commit().await?;
    Ok(())
}
