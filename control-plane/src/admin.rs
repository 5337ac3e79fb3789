//! Operator functions: which callback URL prefixes a team may point push handlers at. Each takes
//! an [`AuthOperator`], which only an operator's session yields (everyone else gets 404 from the
//! routes, which do not reveal that they exist).
//!
//! Removing a prefix also stops push on every queue of the team whose handler URL no longer lies
//! under a remaining prefix: an authorisation withdrawn is withdrawn now, not at the next change.

use crate::audit::{self, AuditActor, Target};
use crate::auth::AuthOperator;
use crate::members::{self, Member};
use crate::push;
use crate::push_url;
use crate::state::ControlPlane;
use crate::teams::{RequestOrigin, TeamId};
use crate::text::refuse_control;
use crate::timefmt;
use aqs_core::ids::QueueId;
use aqs_core::{ApiError, ApiResult};
use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

#[derive(Clone, Debug, Serialize, sqlx::FromRow, utoipa::ToSchema)]
pub struct CallbackUrl {
    pub id: Uuid,
    pub team_id: Uuid,
    pub prefix: String,
    #[serde(serialize_with = "timefmt::rfc3339")]
    pub created_at: DateTime<Utc>,
}

/// The member with this email, for an operator who knows the email but not the id (their
/// personal team has the same id).
pub async fn find_member(cp: &ControlPlane, _operator: &AuthOperator, email: &str) -> ApiResult<Member> {
    refuse_control("email", email)?;
    members::find_with_hash(cp.db(), email.trim())
        .await?
        .map(|(member, _)| member)
        .ok_or_else(|| ApiError::not_found("no member with this email"))
}

/// Removes every callback URL prefix of a team whose account is being deleted.
pub(crate) async fn remove_callback_urls(tx: &mut sqlx::PgConnection, team: Uuid) -> ApiResult<()> {
    sqlx::query("DELETE FROM callback_urls WHERE team_id = $1").bind(team).execute(&mut *tx).await?;
    Ok(())
}

pub async fn list_callback_urls(
    cp: &ControlPlane,
    _operator: &AuthOperator,
    team: &str,
) -> ApiResult<Vec<CallbackUrl>> {
    let team = existing_team(cp, team).await?;
    Ok(sqlx::query_as::<_, CallbackUrl>(
        "SELECT id, team_id, prefix, created_at FROM callback_urls WHERE team_id = $1 ORDER BY created_at, prefix",
    )
    .bind(team)
    .fetch_all(cp.db())
    .await?)
}

/// The operator as the audit log keeps them.
fn actor(operator: &AuthOperator) -> AuditActor {
    AuditActor::operator(operator.id().as_uuid(), &operator.member().email)
}

/// Authorises `prefix` (an http or https URL, normalised) for the team; 409 when it already is.
/// Recorded in the team's audit log as `callback_url.added`.
pub async fn add_callback_url(
    cp: &ControlPlane,
    operator: &AuthOperator,
    origin: &RequestOrigin,
    team: &str,
    prefix: &str,
) -> ApiResult<CallbackUrl> {
    let team = existing_team(cp, team).await?;
    let prefix = push_url::parse_prefix(prefix)?;
    let mut tx = cp.db().begin().await?;
    let added = sqlx::query_as::<_, CallbackUrl>(
        "INSERT INTO callback_urls (id, team_id, prefix) VALUES ($1, $2, $3)
         RETURNING id, team_id, prefix, created_at",
    )
    .bind(Uuid::new_v4())
    .bind(team)
    .bind(&prefix)
    .fetch_one(&mut *tx)
    .await?;
    let target = Target::new("callback_url", added.id);
    audit::record_as(&mut tx, Some(TeamId::from_stored(team)), &actor(operator), origin, "callback_url.added", target)
        .await?;
    tx.commit().await?;
    tracing::info!(operator = %operator.id().as_uuid(), %team, %prefix, "callback URL authorised");
    Ok(added)
}

/// Withdraws a prefix, and stops push on the team's queues it no longer covers. Answers with the
/// slugs of those queues. Recorded in the team's audit log as `callback_url.removed`.
pub async fn remove_callback_url(
    cp: &ControlPlane,
    operator: &AuthOperator,
    origin: &RequestOrigin,
    team: &str,
    id: &str,
) -> ApiResult<Vec<String>> {
    let team = existing_team(cp, team).await?;
    let not_found = || ApiError::not_found("no callback URL with this id for this team");
    let id = Uuid::try_parse(id).map_err(|_| not_found())?;
    let mut tx = cp.db().begin().await?;
    let prefix: String =
        sqlx::query_scalar("DELETE FROM callback_urls WHERE id = $1 AND team_id = $2 RETURNING prefix")
            .bind(id)
            .bind(team)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(not_found)?;
    let target = Target::new("callback_url", id);
    audit::record_as(
        &mut tx,
        Some(TeamId::from_stored(team)),
        &actor(operator),
        origin,
        "callback_url.removed",
        target,
    )
    .await?;
    tx.commit().await?;
    tracing::info!(operator = %operator.id().as_uuid(), %team, %prefix, "callback URL withdrawn");
    stop_unauthorised(cp, team).await
}

/// Stops push on each of the team's queues whose handler URL no remaining prefix covers.
async fn stop_unauthorised(cp: &ControlPlane, team: Uuid) -> ApiResult<Vec<String>> {
    let prefixes = push::prefixes_of(cp, team).await?;
    let targets: Vec<(Uuid, String, String)> = sqlx::query_as(
        "SELECT p.queue_id, q.slug, p.handler_url FROM push_targets p JOIN queues q ON q.id = p.queue_id
         WHERE q.team_id = $1 AND q.deleted_at IS NULL",
    )
    .bind(team)
    .fetch_all(cp.db())
    .await?;
    let mut stopped = Vec::new();
    for (queue, slug, handler_url) in targets {
        let covered =
            url::Url::parse(&handler_url).is_ok_and(|url| prefixes.iter().any(|p| push_url::is_under(&url, p)));
        if covered {
            continue;
        }
        // Stopped or deleted meanwhile: nothing left to stop.
        match push::remove_target(cp, QueueId(queue), None).await {
            Ok(true) => {}
            Ok(false) | Err(ApiError::NotFound(_)) => continue,
            Err(err) => return Err(err),
        }
        tracing::info!(queue = %QueueId(queue), %slug, "push stopped: its callback URL is no longer authorised");
        stopped.push(slug);
    }
    Ok(stopped)
}

async fn existing_team(cp: &ControlPlane, team: &str) -> ApiResult<Uuid> {
    let not_found = || ApiError::not_found("no team with this id");
    let id = Uuid::try_parse(team).map_err(|_| not_found())?;
    let live: Option<Uuid> = sqlx::query_scalar("SELECT id FROM teams WHERE id = $1 AND deleted_at IS NULL")
        .bind(id)
        .fetch_optional(cp.db())
        .await?;
    live.ok_or_else(not_found)
}
