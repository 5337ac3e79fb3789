//! Management keys (`acm_…`): a team's credential for automation on `/api/v1`, with a role that is
//! never `owner` (`docs/teams.md`). Only the SHA-256 of a key is stored; the secret is shown once.

use crate::state::ControlPlane;
use crate::teams::{TeamId, TeamRole};
use aqs_core::token::{KEY_PREFIX, TokenSecret};
use aqs_core::{ApiError, ApiResult};
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
    let role = TeamRole::parse(&role)
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("management_keys holds an unknown role {role:?}")))?;
    Ok(KeyIdentity { id, name, team: TeamId::from_stored(team), role })
}
