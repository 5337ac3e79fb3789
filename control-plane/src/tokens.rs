//! Queue tokens: mint (the secret is returned once and only its SHA-256 is stored), list (never a
//! secret) and revoke. Like every tenant function, each takes the authenticated team first, and
//! a token of another team's queue is "not found".
//!
//! Listings show revoked tokens too, with `revoked_at` set, so a team can see what was cut off.

use crate::audit::{self, Target};
use crate::projection::{self, ProjectedToken};
use crate::queues;
use crate::slug::Slug;
use crate::state::ControlPlane;
use crate::teams::{Caller, TeamId, TeamRole};
use crate::timefmt;
use aqs_core::ids::QueueId;
use aqs_core::projection::TokenRecord;
use aqs_core::token::{Scope, TokenSecret};
use aqs_core::{ApiError, ApiResult};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize, Serializer};
use sqlx::PgConnection;
use std::collections::HashMap;
use uuid::Uuid;

pub const NAME_MAX_CHARS: usize = crate::text::NAME_MAX_CHARS;

/// `POST /api/v1/queues/{slug}/tokens`.
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    #[schema(min_length = 1, max_length = 64)]
    pub name: String,
    /// Any non-empty subset of `send`, `consume`, `manage`.
    #[schema(value_type = Vec<Scope>, min_items = 1)]
    pub scopes: Vec<String>,
}

/// A token as listed: never its secret.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Token {
    pub id: Uuid,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub last_four: String,
    #[serde(serialize_with = "timefmt::rfc3339")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "timefmt::rfc3339_opt")]
    pub last_used_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "timefmt::rfc3339_opt")]
    pub revoked_at: Option<DateTime<Utc>>,
}

/// A token just minted, with its secret: the only time the secret is ever shown.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct CreatedToken {
    #[serde(flatten)]
    pub token: Token,
    /// The token itself, `acq_…`: shown this once.
    #[serde(serialize_with = "expose_secret")]
    #[schema(value_type = String)]
    pub secret: TokenSecret,
}

fn expose_secret<S: Serializer>(secret: &TokenSecret, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(secret.expose())
}

impl CreatedToken {
    pub(crate) fn projected(&self, queue: QueueId) -> ProjectedToken {
        ProjectedToken {
            hash: self.secret.hash(),
            record: TokenRecord { token_id: self.token.id, queue, scopes: self.token.scopes.clone() },
        }
    }
}

const COLUMNS: &str = "id, name, scopes, last_four, created_at, revoked_at";

#[derive(sqlx::FromRow)]
struct TokenRow {
    id: Uuid,
    name: String,
    scopes: Vec<String>,
    last_four: String,
    created_at: DateTime<Utc>,
    revoked_at: Option<DateTime<Utc>>,
}

impl From<TokenRow> for Token {
    fn from(row: TokenRow) -> Self {
        Self {
            id: row.id,
            name: row.name,
            // The CHECK constraint in migrations/ admits only known scope names.
            scopes: row.scopes.iter().filter_map(|s| Scope::parse(s)).collect(),
            last_four: row.last_four,
            created_at: row.created_at,
            // Recorded by the data plane in Redis; `list` fills it in.
            last_used_at: None,
            revoked_at: row.revoked_at,
        }
    }
}

/// Mints a token for the team's queue `slug`. A developer mints tokens without `manage`; one
/// with `manage` (which changes the queue's settings) needs an admin.
pub async fn mint(cp: &ControlPlane, caller: &Caller, slug: &Slug, input: NewToken) -> ApiResult<CreatedToken> {
    let team = caller.team;
    let name = crate::text::checked_name(&input.name)?;
    let scopes = check_scopes(&input.scopes)?;
    if scopes.contains(&Scope::Manage) {
        caller.require(TeamRole::Admin)?;
    }
    let mut tx = cp.db().begin().await?;
    // FOR SHARE holds off a concurrent delete of the queue until this token is committed, so the
    // delete then sees (and revokes) it; a queue deleted first is not found here.
    let queue: Uuid =
        sqlx::query_scalar("SELECT id FROM queues WHERE team_id = $1 AND slug = $2 AND deleted_at IS NULL FOR SHARE")
            .bind(team.as_uuid())
            .bind(slug.as_str())
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(queues::not_found)?;
    let token = insert(&mut tx, QueueId(queue), &name, &scopes).await?;
    audit::record(&mut tx, caller, "token.minted", Target::new("token", token.token.id)).await?;
    tx.commit().await?;

    let projected = token.projected(QueueId(queue));
    projection::put_token(&mut cp.redis(), cp.keys(), &projected).await.map_err(projection::failed)?;
    cp.engine().confirm_replicated(&[cp.keys().token(&projected.hash)]).await?;
    Ok(token)
}

/// Inserts a token for `queue` inside the caller's transaction.
pub(crate) async fn insert(
    tx: &mut PgConnection,
    queue: QueueId,
    name: &str,
    scopes: &[Scope],
) -> ApiResult<CreatedToken> {
    let secret = TokenSecret::generate();
    let names: Vec<&str> = scopes.iter().map(|s| s.as_str()).collect();
    let row = sqlx::query_as::<_, TokenRow>(&format!(
        "INSERT INTO tokens (id, queue_id, name, scopes, secret_hash, last_four) VALUES ($1, $2, $3, $4, $5, $6)
         RETURNING {COLUMNS}"
    ))
    .bind(Uuid::new_v4())
    .bind(queue.0)
    .bind(name)
    .bind(&names)
    .bind(secret.hash())
    .bind(secret.last_four())
    .fetch_one(tx)
    .await?;
    Ok(CreatedToken { token: row.into(), secret })
}

/// The queue's tokens, oldest first, revoked ones included, with the last use the data plane
/// recorded.
pub async fn list(cp: &ControlPlane, team: TeamId, slug: &Slug) -> ApiResult<Vec<Token>> {
    let queue = queues::find(cp.db(), team, slug).await?.into_queue(cp.public_url());
    let rows = sqlx::query_as::<_, TokenRow>(&format!(
        "SELECT {COLUMNS} FROM tokens WHERE queue_id = $1 ORDER BY created_at, id"
    ))
    .bind(queue.id.0)
    .fetch_all(cp.db())
    .await?;
    let used = last_used(cp, queue.id).await;
    Ok(rows
        .into_iter()
        .map(Token::from)
        .map(|mut token| {
            token.last_used_at = used.get(&token.id).copied();
            token
        })
        .collect())
}

/// token id → last use, as the data plane recorded it. Only a display hint: when Redis is
/// unreachable the listing still answers, without them.
async fn last_used(cp: &ControlPlane, queue: QueueId) -> HashMap<Uuid, DateTime<Utc>> {
    match cp.engine().token_last_uses(queue).await {
        Ok(used) => {
            used.into_iter().filter_map(|(id, ms)| Some((id, DateTime::from_timestamp_millis(ms as i64)?))).collect()
        }
        Err(err) => {
            tracing::warn!(error = %err, %queue, "cannot read token last-use times; listing without them");
            HashMap::new()
        }
    }
}

/// Revokes a token of the team's queue; revoking a revoked token again is a no-op success (and
/// records nothing: nothing changed). A token with `manage` needs an admin to revoke it, as to
/// mint it.
pub async fn revoke(cp: &ControlPlane, caller: &Caller, slug: &Slug, token_id: &str) -> ApiResult<()> {
    let team = caller.team;
    let not_found = || ApiError::not_found("no token with this id on this queue");
    let id = Uuid::try_parse(token_id).map_err(|_| not_found())?;
    let mut tx = cp.db().begin().await?;
    let (hash, scopes, revoked): (String, Vec<String>, bool) = sqlx::query_as(
        "SELECT t.secret_hash, t.scopes, t.revoked_at IS NOT NULL
         FROM tokens t JOIN queues q ON q.id = t.queue_id
         WHERE q.team_id = $1 AND q.slug = $2 AND q.deleted_at IS NULL AND t.id = $3
         FOR UPDATE OF t",
    )
    .bind(team.as_uuid())
    .bind(slug.as_str())
    .bind(id)
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(not_found)?;
    if scopes.iter().any(|scope| scope == Scope::Manage.as_str()) {
        caller.require(TeamRole::Admin)?;
    }
    if !revoked {
        sqlx::query("UPDATE tokens SET revoked_at = now() WHERE id = $1").bind(id).execute(&mut *tx).await?;
        audit::record(&mut tx, caller, "token.revoked", Target::new("token", id)).await?;
    }
    tx.commit().await?;
    projection::remove_token(&mut cp.redis(), cp.keys(), &hash).await.map_err(projection::failed)?;
    Ok(cp.engine().confirm_replicated(&[cp.keys().token(&hash)]).await?)
}

/// Revokes every token of a queue being deleted, returning all their hashes (revoked earlier or
/// now) so every record can be removed from Redis.
pub(crate) async fn revoke_all(tx: &mut PgConnection, queue: Uuid) -> ApiResult<Vec<String>> {
    Ok(sqlx::query_scalar(
        "UPDATE tokens SET revoked_at = COALESCE(revoked_at, now()) WHERE queue_id = $1 RETURNING secret_hash",
    )
    .bind(queue)
    .fetch_all(tx)
    .await?)
}

/// Parses scope names into a sorted set; unknown names and an empty list are rejected.
fn check_scopes(names: &[String]) -> ApiResult<Vec<Scope>> {
    let mut scopes = names
        .iter()
        .map(|name| {
            Scope::parse(name.trim()).ok_or_else(|| {
                ApiError::field("scopes", format!("unknown scope {name:?}; use send, consume or manage"))
            })
        })
        .collect::<ApiResult<Vec<_>>>()?;
    if scopes.is_empty() {
        return Err(ApiError::field("scopes", "give at least one of send, consume, manage"));
    }
    scopes.sort();
    scopes.dedup();
    Ok(scopes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_are_a_sorted_non_empty_set_of_known_names() {
        let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(check_scopes(&names(&["manage", "send", "send"])).unwrap(), vec![Scope::Send, Scope::Manage]);
        assert!(check_scopes(&[]).unwrap_err().to_string().starts_with("scopes"));
        assert!(check_scopes(&names(&["send", "admin"])).unwrap_err().to_string().contains("admin"));
    }
}
