//! Queues: create, list, read, change, pause, resume and delete a member's queues. Every function
//! takes the authenticated member first and only ever sees that member's queues: another member's
//! queue is "not found", never "forbidden", so its existence is not revealed.

use crate::billing::add_ons::{self, PayloadChange};
use crate::billing::outbox;
use crate::db_error::db_error;
use crate::members::MemberId;
use crate::projection;
use crate::queue_settings::Settings;
pub use crate::queue_settings::{NewQueue, QueueChanges};
use crate::slug::{self, Slug};
use crate::state::ControlPlane;
use crate::timefmt;
use crate::tokens::{self, CreatedToken};
use aqs_core::ids::QueueId;
use aqs_core::limits::QUEUES_PER_MEMBER;
use aqs_core::projection::QueueMeta;
use aqs_core::token::Scope;
use aqs_core::{ApiError, ApiResult};
use chrono::{DateTime, Utc};
use serde::{Serialize, Serializer};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

/// The name of the token every new queue starts with.
pub const FIRST_TOKEN_NAME: &str = "default";
/// Tries at a free slug before giving up; with 36^4 suffixes a second try almost never fails.
const SLUG_TRIES: usize = 8;

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
        }
    }
}

pub(crate) const COLUMNS: &str = "id, name, slug, visibility_timeout_seconds, max_attempts, payload_size, \
     storage_limit, paused, created_at, revision";

#[derive(sqlx::FromRow)]
pub(crate) struct QueueRow {
    id: Uuid,
    name: String,
    slug: String,
    visibility_timeout_seconds: i32,
    max_attempts: i32,
    payload_size: i64,
    storage_limit: i64,
    paused: bool,
    created_at: DateTime<Utc>,
    revision: i64,
}

impl QueueRow {
    pub(crate) fn into_queue(self, public_url: &str) -> Queue {
        // The CHECK constraints in migrations/ keep every number positive and in range.
        Queue {
            id: QueueId(self.id),
            address: format!("{public_url}/queue/v1/{}", self.slug),
            name: self.name,
            slug: Slug::stored(self.slug),
            visibility_timeout_seconds: self.visibility_timeout_seconds as u32,
            max_attempts: self.max_attempts as u32,
            payload_size: self.payload_size as u64,
            storage_limit: self.storage_limit as u64,
            paused: self.paused,
            created_at: self.created_at,
            revision: self.revision as u64,
        }
    }
}

/// Creates a queue and its first token (every scope); the token's secret is in the answer only.
pub async fn create(cp: &ControlPlane, member: MemberId, input: NewQueue) -> ApiResult<(Queue, CreatedToken)> {
    let settings = input.check()?;
    if cp.billing().is_some() && settings.payload_size > aqs_core::limits::MIB {
        // A paid size is bought on an existing queue (PATCH), where payment is checked.
        return Err(ApiError::invalid(
            "payload_size: new queues start at 1 MiB; choose a paid add-on size in the queue's settings",
        ));
    }
    let base = slug::derive(&settings.name).ok_or_else(|| {
        ApiError::invalid("name: include at least one letter a-z or digit; the queue's address is made from them")
    })?;
    let mut tx = cp.db().begin().await.map_err(db_error)?;
    // Locking the member's row serialises their creates, so two concurrent requests cannot both
    // count nine queues and make eleven, and a create cannot slip past an account's deletion.
    sqlx::query("SELECT 1 FROM members WHERE id = $1 AND deleted_at IS NULL FOR UPDATE")
        .bind(member.as_uuid())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_error)?
        .ok_or_else(|| ApiError::Unauthorized("this member no longer exists".into()))?;
    let live: i64 = sqlx::query_scalar("SELECT count(*) FROM queues WHERE member_id = $1 AND deleted_at IS NULL")
        .bind(member.as_uuid())
        .fetch_one(&mut *tx)
        .await
        .map_err(db_error)?;
    if live >= QUEUES_PER_MEMBER {
        return Err(ApiError::QueueLimitReached(format!(
            "a member may have at most {QUEUES_PER_MEMBER} queues; delete one to create another"
        )));
    }
    let queue = insert_with_free_slug(&mut tx, member, &settings, &base).await?.into_queue(cp.public_url());
    let token = tokens::insert(&mut tx, queue.id, FIRST_TOKEN_NAME, &Scope::ALL).await?;
    tx.commit().await.map_err(db_error)?;
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

/// Inserts the queue under `base`, or under `base-xxxx` when a live queue holds `base`. ON CONFLICT
/// DO NOTHING keeps the transaction usable after a collision (a unique violation would abort it),
/// and the unique index makes the choice race-free across members.
async fn insert_with_free_slug(
    tx: &mut PgConnection,
    member: MemberId,
    settings: &Settings,
    base: &str,
) -> ApiResult<QueueRow> {
    for attempt in 0..SLUG_TRIES {
        let candidate = if attempt == 0 { base.to_owned() } else { slug::with_random_suffix(base) };
        let inserted = sqlx::query_as::<_, QueueRow>(&format!(
            "INSERT INTO queues (id, member_id, name, slug, visibility_timeout_seconds, max_attempts, payload_size,
                                 storage_limit)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (slug) WHERE deleted_at IS NULL DO NOTHING
             RETURNING {COLUMNS}"
        ))
        .bind(Uuid::new_v4())
        .bind(member.as_uuid())
        .bind(&settings.name)
        .bind(&candidate)
        .bind(settings.visibility_timeout_seconds as i32)
        .bind(settings.max_attempts as i32)
        .bind(settings.payload_size as i64)
        .bind(settings.storage_limit as i64)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_error)?;
        if let Some(row) = inserted {
            return Ok(row);
        }
    }
    Err(ApiError::Conflict("could not find a free address for this name; choose another name".into()))
}

pub async fn list(cp: &ControlPlane, member: MemberId) -> ApiResult<Vec<Queue>> {
    let rows = sqlx::query_as::<_, QueueRow>(&format!(
        "SELECT {COLUMNS} FROM queues WHERE member_id = $1 AND deleted_at IS NULL ORDER BY created_at, slug"
    ))
    .bind(member.as_uuid())
    .fetch_all(cp.db())
    .await
    .map_err(db_error)?;
    Ok(rows.into_iter().map(|row| row.into_queue(cp.public_url())).collect())
}

pub async fn get(cp: &ControlPlane, member: MemberId, slug: &Slug) -> ApiResult<Queue> {
    find(cp.db(), member, slug).await.map(|row| row.into_queue(cp.public_url()))
}

/// The member's live queue with this slug, or 404.
pub(crate) async fn find(db: &PgPool, member: MemberId, slug: &Slug) -> ApiResult<QueueRow> {
    sqlx::query_as::<_, QueueRow>(&format!(
        "SELECT {COLUMNS} FROM queues WHERE member_id = $1 AND slug = $2 AND deleted_at IS NULL"
    ))
    .bind(member.as_uuid())
    .bind(slug.as_str())
    .fetch_optional(db)
    .await
    .map_err(db_error)?
    .ok_or_else(not_found)
}

pub(crate) fn not_found() -> ApiError {
    ApiError::not_found("no queue with this slug")
}

/// Changes any of name, visibility timeout, attempts, payload size and storage limit. The slug,
/// and with it the address, stays as it was.
///
/// A larger payload size is a paid add-on (`billing::add_ons`): with billing on, the queue takes
/// it once Stripe has the item, which is tried before this returns; if Stripe cannot be reached
/// the answer still shows the old size and the billing outbox applies the new one later.
pub async fn update(cp: &ControlPlane, member: MemberId, slug: &Slug, changes: QueueChanges) -> ApiResult<Queue> {
    let mut changes = changes.check()?;
    let mut awaiting_stripe = false;
    if let Some(requested) = changes.payload_size {
        let current = find(cp.db(), member, slug).await?.into_queue(cp.public_url());
        match add_ons::prepare(cp, member, &current, requested).await? {
            PayloadChange::ApplyNow(size) => changes.payload_size = Some(size),
            PayloadChange::AwaitStripe => {
                changes.payload_size = None;
                awaiting_stripe = true;
            }
        }
    }
    let row = sqlx::query_as::<_, QueueRow>(&format!(
        "UPDATE queues SET name = COALESCE($3, name),
                           visibility_timeout_seconds = COALESCE($4, visibility_timeout_seconds),
                           max_attempts = COALESCE($5, max_attempts),
                           payload_size = COALESCE($6, payload_size),
                           storage_limit = COALESCE($7, storage_limit),
                           revision = revision + 1, updated_at = now()
         WHERE member_id = $1 AND slug = $2 AND deleted_at IS NULL
         RETURNING {COLUMNS}"
    ))
    .bind(member.as_uuid())
    .bind(slug.as_str())
    .bind(changes.name)
    .bind(changes.visibility_timeout_seconds.map(|v| v as i32))
    .bind(changes.max_attempts.map(|v| v as i32))
    .bind(changes.payload_size.map(|v| v as i64))
    .bind(changes.storage_limit.map(|v| v as i64))
    .fetch_optional(cp.db())
    .await
    .map_err(db_error)?
    .ok_or_else(not_found)?;
    let queue = project_update(cp, row.into_queue(cp.public_url())).await?;
    if !awaiting_stripe {
        return Ok(queue);
    }
    // A failure is logged and the outbox retries; the answer then shows the size still unpaid.
    if outbox::sync_now(cp, member).await.is_err() {
        return Ok(queue);
    }
    get(cp, member, slug).await
}

/// Pausing stops publishes and deliveries; the data plane reads `paused` from the meta hash.
pub async fn pause(cp: &ControlPlane, member: MemberId, slug: &Slug) -> ApiResult<Queue> {
    set_paused(cp, member, slug, true).await
}

pub async fn resume(cp: &ControlPlane, member: MemberId, slug: &Slug) -> ApiResult<Queue> {
    set_paused(cp, member, slug, false).await
}

async fn set_paused(cp: &ControlPlane, member: MemberId, slug: &Slug, paused: bool) -> ApiResult<Queue> {
    let row = sqlx::query_as::<_, QueueRow>(&format!(
        "UPDATE queues SET paused = $3, revision = revision + 1, updated_at = now()
         WHERE member_id = $1 AND slug = $2 AND deleted_at IS NULL RETURNING {COLUMNS}"
    ))
    .bind(member.as_uuid())
    .bind(slug.as_str())
    .bind(paused)
    .fetch_optional(cp.db())
    .await
    .map_err(db_error)?
    .ok_or_else(not_found)?;
    project_update(cp, row.into_queue(cp.public_url())).await
}

async fn project_update(cp: &ControlPlane, queue: Queue) -> ApiResult<Queue> {
    projection::update_queue(&mut cp.redis(), cp.keys(), &queue.meta()).await.map_err(projection::failed)?;
    cp.engine().confirm_replicated(&[cp.keys().queue(queue.id).meta()]).await?;
    Ok(queue)
}

/// Soft-deletes the queue (its row stays, its slug is freed), revokes its tokens, and removes it
/// and all its messages from Redis.
pub async fn delete(cp: &ControlPlane, member: MemberId, slug: &Slug) -> ApiResult<()> {
    let mut tx = cp.db().begin().await.map_err(db_error)?;
    let (id, slug): (Uuid, String) = sqlx::query_as(
        "UPDATE queues SET deleted_at = now(), updated_at = now()
         WHERE member_id = $1 AND slug = $2 AND deleted_at IS NULL RETURNING id, slug",
    )
    .bind(member.as_uuid())
    .bind(slug.as_str())
    .fetch_optional(&mut *tx)
    .await
    .map_err(db_error)?
    .ok_or_else(not_found)?;
    let hashes = tokens::revoke_all(&mut tx, id).await?;
    let hostnames = crate::hosts::delete_for_queue(&mut tx, id).await?;
    // Stripe is never asked here: the outbox stops the add-on, so an outage cannot block this.
    add_ons::queue_deleted(&mut tx, cp, member, id).await?;
    tx.commit().await.map_err(db_error)?;
    tracing::info!(queue = %QueueId(id), %slug, "queue deleted");
    if let Some(billing) = cp.billing() {
        billing.kick();
    }
    crate::hosts::remove_projections(cp, &hostnames).await?;
    projection::remove_queue(&mut cp.redis(), cp.keys(), cp.engine(), QueueId(id), &slug, &hashes).await
}
