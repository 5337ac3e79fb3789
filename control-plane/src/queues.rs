//! Queues: create, list, read, change, pause, resume and delete a team's queues. Every function
//! takes the authenticated team first and only ever sees that team's queues: another team's
//! queue is "not found", never "forbidden", so its existence is not revealed.

use crate::audit::{self, Target};
use crate::billing::add_ons::{self, SizeChange};
use crate::billing::outbox;
use crate::projection;
pub use crate::queue_settings::{NewQueue, QueueChanges};
use crate::slug::{self, Slug};
use crate::state::ControlPlane;
use crate::teams::{Caller, TeamId, TeamRole, admin};
use crate::timefmt;
use crate::tokens::{self, CreatedToken};
use aqs_core::ids::QueueId;
use aqs_core::projection::QueueMeta;
use aqs_core::token::Scope;
use aqs_core::{ApiError, ApiResult};
use chrono::{DateTime, Utc};
use serde::{Serialize, Serializer};
use sqlx::PgPool;

pub(crate) mod store;
pub(crate) use store::{COLUMNS, QueueRow};

/// The name of the token every new queue starts with.
pub const FIRST_TOKEN_NAME: &str = "default";

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Queue {
    #[serde(serialize_with = "as_display")]
    #[schema(value_type = String)]
    pub id: QueueId,
    pub name: String,
    #[schema(value_type = String)]
    pub slug: Slug,
    /// The base of the queue's data-plane API: `<public url>/queue/v1/<slug>`.
    pub address: String,
    pub visibility_timeout_seconds: u32,
    pub max_attempts: u32,
    pub payload_size: u64,
    pub storage_limit: u64,
    pub paused: bool,
    #[serde(serialize_with = "timefmt::rfc3339")]
    pub created_at: DateTime<Utc>,
    /// Bumped by every change; orders the projection's writes (`QueueMeta::revision`).
    #[serde(skip)]
    pub revision: u64,
}

fn as_display<S: Serializer>(id: &QueueId, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(id)
}

impl Queue {
    /// The settings the data plane reads, as projected into Redis.
    pub fn meta(&self) -> QueueMeta {
        QueueMeta {
            id: self.id,
            slug: self.slug.to_string(),
            paused: self.paused,
            visibility_ms: u64::from(self.visibility_timeout_seconds) * 1000,
            max_attempts: self.max_attempts,
            payload_limit: self.payload_size,
            storage_limit: self.storage_limit,
            revision: self.revision,
            // Written by the team's suspension alone (`teams::admin`), never with the settings.
            suspended: None,
        }
    }
}

/// Creates a queue and its first token (every scope); the token's secret is in the answer only.
pub async fn create(cp: &ControlPlane, caller: &Caller, input: NewQueue) -> ApiResult<(Queue, CreatedToken)> {
    let team = caller.team;
    let settings = input.check()?;
    if cp.billing().is_some() && settings.payload_size > aqs_core::limits::MIB {
        // A paid size is bought on an existing queue (PATCH), where payment is checked.
        return Err(ApiError::field(
            "payload_size",
            "new queues start at 1 MiB; choose a paid add-on size in the queue's settings",
        ));
    }
    let base = slug::derive(&settings.name).ok_or_else(|| {
        ApiError::field("name", "include at least one letter a-z or digit; the queue's address is made from them")
    })?;
    let mut tx = cp.db().begin().await?;
    // Locking the team's row serialises its creates, so two concurrent requests cannot both
    // count nine queues and make eleven, and a create cannot slip past the team's deletion.
    // The lock also orders this create with a suspension: one committed meanwhile is seen here,
    // and a later one's projection finds this queue (`teams::admin::project_suspension`).
    let (max, suspended): (i32, Option<String>) = sqlx::query_as(
        "SELECT max_queues, suspended_reason FROM teams WHERE id = $1 AND deleted_at IS NULL FOR UPDATE",
    )
    .bind(team.as_uuid())
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(|| ApiError::Unauthorized("this team no longer exists".into()))?;
    if let Some(reason) = suspended {
        return Err(admin::suspended(&reason));
    }
    let live: i64 = sqlx::query_scalar("SELECT count(*) FROM queues WHERE team_id = $1 AND deleted_at IS NULL")
        .bind(team.as_uuid())
        .fetch_one(&mut *tx)
        .await?;
    if live >= i64::from(max) {
        return Err(ApiError::QueueLimitReached(format!(
            "this team may have at most {max} queues; delete one to create another, or ask us to raise the limit"
        )));
    }
    admin::check_storage(&mut tx, team, None, settings.storage_limit).await?;
    let queue = store::insert_with_free_slug(&mut tx, team, &settings, &base)
        .await?
        .ok_or_else(|| ApiError::Conflict("could not find a free address for this name; choose another name".into()))?
        .into_queue(cp.public_url());
    let token = tokens::insert(&mut tx, queue.id, FIRST_TOKEN_NAME, &Scope::ALL).await?;
    audit::record(&mut tx, caller, "queue.created", Target::new("queue", queue.id)).await?;
    tx.commit().await?;
    tracing::info!(queue = %queue.id, slug = %queue.slug, "queue created");

    let projected = token.projected(queue.id);
    projection::create_queue(&mut cp.redis(), cp.keys(), &queue.meta(), &projected)
        .await
        .map_err(projection::failed)?;
    let keys = cp.keys();
    let written = [keys.queue(queue.id).meta(), keys.slug(queue.slug.as_str()), keys.token(&projected.hash)];
    cp.engine().confirm_replicated(&written).await?;
    Ok((queue, token))
}

/// Whether a live queue, any team's, holds `slug`: a new queue whose name makes that slug is
/// given it with a random suffix instead (slugs are unique, names are not). Only says what the
/// suffixing itself would reveal.
pub async fn slug_taken(cp: &ControlPlane, slug: &str) -> ApiResult<bool> {
    Ok(sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM queues WHERE slug = $1 AND deleted_at IS NULL)")
        .bind(slug)
        .fetch_one(cp.db())
        .await?)
}

pub async fn list(cp: &ControlPlane, team: TeamId) -> ApiResult<Vec<Queue>> {
    let rows = store::list(cp.db(), team).await?;
    Ok(rows.into_iter().map(|row| row.into_queue(cp.public_url())).collect())
}

pub async fn get(cp: &ControlPlane, team: TeamId, slug: &Slug) -> ApiResult<Queue> {
    find(cp.db(), team, slug).await.map(|row| row.into_queue(cp.public_url()))
}

/// The team's live queue with this slug, or 404.
pub(crate) async fn find(db: &PgPool, team: TeamId, slug: &Slug) -> ApiResult<QueueRow> {
    store::find(db, team, slug).await?.ok_or_else(not_found)
}

pub(crate) fn not_found() -> ApiError {
    ApiError::not_found("no queue with this slug")
}

/// Changes any of name, visibility timeout, attempts, payload size and storage limit. The slug,
/// and with it the address, stays as it was.
///
/// A larger payload size is a paid add-on (`billing::add_ons`): with billing on, the queue takes
/// it once Stripe has the item, which is tried before this returns; if Stripe cannot be reached
/// the answer still shows the old size and the billing outbox applies the new one later. Raising
/// the size to a paid one while billing is on needs the owner (it changes the bill); the change
/// records `billing.add_on_changed` beside `queue.updated` when it changes what the team buys.
pub async fn update(cp: &ControlPlane, caller: &Caller, slug: &Slug, changes: QueueChanges) -> ApiResult<Queue> {
    let team = caller.team;
    let mut changes = changes.check()?;
    // Billing decides (asking the data plane and Stripe) before the transaction opens; its rows
    // and the queue's size are then written in one transaction, so neither changes alone.
    let mut size_change = None;
    if let Some(requested) = changes.payload_size {
        let current = find(cp.db(), team, slug).await?;
        let current = current.into_queue(cp.public_url());
        if cp.billing().is_some() && requested > current.payload_size && requested > aqs_core::limits::MIB {
            caller.require(TeamRole::Owner)?;
        }
        let change = add_ons::prepare(cp, team, current.id, current.payload_size, requested).await?;
        changes.payload_size = change.size_now();
        size_change = Some(change);
    }
    let mut tx = cp.db().begin().await?;
    if let Some(change) = &size_change {
        change.record(&mut tx).await?;
    }
    if let Some(bytes) = changes.storage_limit {
        admin::check_storage(&mut tx, team, Some(slug.as_str()), bytes).await?;
    }
    let queue = store::update(&mut tx, team, slug, changes).await?.ok_or_else(not_found)?.into_queue(cp.public_url());
    audit::record(&mut tx, caller, "queue.updated", Target::new("queue", queue.id)).await?;
    if size_change.as_ref().is_some_and(SizeChange::bills) {
        audit::record(&mut tx, caller, "billing.add_on_changed", Target::new("queue", queue.id)).await?;
    }
    tx.commit().await?;
    if let Some(change) = &size_change {
        change.committed(cp);
    }
    let queue = project_update(cp, queue).await?;
    if !size_change.as_ref().is_some_and(SizeChange::awaits_stripe) {
        return Ok(queue);
    }
    // A failure is logged and the outbox retries; the answer then shows the size still unpaid.
    if outbox::sync_now(cp, team).await.is_err() {
        return Ok(queue);
    }
    get(cp, team, slug).await
}

/// Pausing stops publishes and deliveries; the data plane reads `paused` from the meta hash.
pub async fn pause(cp: &ControlPlane, caller: &Caller, slug: &Slug) -> ApiResult<Queue> {
    set_paused(cp, caller, slug, true).await
}

pub async fn resume(cp: &ControlPlane, caller: &Caller, slug: &Slug) -> ApiResult<Queue> {
    set_paused(cp, caller, slug, false).await
}

async fn set_paused(cp: &ControlPlane, caller: &Caller, slug: &Slug, paused: bool) -> ApiResult<Queue> {
    let mut tx = cp.db().begin().await?;
    let queue =
        store::set_paused(&mut tx, caller.team, slug, paused).await?.ok_or_else(not_found)?.into_queue(cp.public_url());
    let action = if paused { "queue.paused" } else { "queue.resumed" };
    audit::record(&mut tx, caller, action, Target::new("queue", queue.id)).await?;
    tx.commit().await?;
    project_update(cp, queue).await
}

async fn project_update(cp: &ControlPlane, queue: Queue) -> ApiResult<Queue> {
    projection::update_queue(&mut cp.redis(), cp.keys(), &queue.meta()).await.map_err(projection::failed)?;
    cp.engine().confirm_replicated(&[cp.keys().queue(queue.id).meta()]).await?;
    Ok(queue)
}

/// Soft-deletes the queue (its row stays, its slug is freed), revokes its tokens, and removes it
/// and all its messages from Redis.
pub async fn delete(cp: &ControlPlane, caller: &Caller, slug: &Slug) -> ApiResult<()> {
    let team = caller.team;
    let mut tx = cp.db().begin().await?;
    let (id, slug) = store::soft_delete(&mut tx, team, slug).await?.ok_or_else(not_found)?;
    let hashes = tokens::revoke_all(&mut tx, id).await?;
    let hostnames = crate::hosts::store::delete_for_queue(&mut tx, id).await?;
    // Stripe is never asked here: the outbox stops the add-on, so an outage cannot block this.
    add_ons::queue_deleted(&mut tx, cp, team, id).await?;
    audit::record(&mut tx, caller, "queue.deleted", Target::new("queue", QueueId(id))).await?;
    tx.commit().await?;
    tracing::info!(queue = %QueueId(id), %slug, "queue deleted");
    if let Some(billing) = cp.billing() {
        billing.kick();
    }
    crate::hosts::remove_projections(cp, &hostnames).await?;
    projection::remove_queue(&mut cp.redis(), cp.keys(), cp.engine(), QueueId(id), &slug, &hashes).await
}
