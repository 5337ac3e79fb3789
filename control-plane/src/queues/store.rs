//! The `queues` table: every write to it, and the reads other modules make of it. A write takes
//! the caller's transaction, so a change that spans tables (an add-on row and the queue's size, a
//! push target and the queue's revision, a deletion and its tokens) commits as one. Billing
//! decides sizes and push changes revisions, but only this module writes a queue's row, and every
//! change the data plane sees bumps `revision` (which orders the projection's writes).

use super::{Queue, QueueChanges};
use crate::queue_settings::Settings;
use crate::slug::{self, Slug};
use crate::teams::TeamId;
use aqs_core::ApiResult;
use aqs_core::ids::QueueId;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

/// Tries at a free slug before giving up; with 36^4 suffixes a second try almost never fails.
const SLUG_TRIES: usize = 8;

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

/// `COLUMNS` qualified by the alias `q`, for statements that join another table.
fn q_columns() -> String {
    COLUMNS.split(", ").map(|c| format!("q.{}", c.trim())).collect::<Vec<_>>().join(", ")
}

/// The team's live queue with this slug.
pub(crate) async fn find(db: &PgPool, team: TeamId, slug: &Slug) -> ApiResult<Option<QueueRow>> {
    Ok(sqlx::query_as::<_, QueueRow>(&format!(
        "SELECT {COLUMNS} FROM queues WHERE team_id = $1 AND slug = $2 AND deleted_at IS NULL"
    ))
    .bind(team.as_uuid())
    .bind(slug.as_str())
    .fetch_optional(db)
    .await?)
}

/// The team's live queues, oldest first.
pub(crate) async fn list(db: &PgPool, team: TeamId) -> ApiResult<Vec<QueueRow>> {
    Ok(sqlx::query_as::<_, QueueRow>(&format!(
        "SELECT {COLUMNS} FROM queues WHERE team_id = $1 AND deleted_at IS NULL ORDER BY created_at, slug"
    ))
    .bind(team.as_uuid())
    .fetch_all(db)
    .await?)
}

/// Inserts the queue under `base`, or under `base-xxxx` when a live queue holds `base`; `None`
/// when every try was taken. ON CONFLICT DO NOTHING keeps the transaction usable after a
/// collision (a unique violation would abort it), and the unique index makes the choice
/// race-free across members.
pub(crate) async fn insert_with_free_slug(
    tx: &mut PgConnection,
    team: TeamId,
    settings: &Settings,
    base: &str,
) -> ApiResult<Option<QueueRow>> {
    for attempt in 0..SLUG_TRIES {
        let candidate = if attempt == 0 { base.to_owned() } else { slug::with_random_suffix(base) };
        let inserted = sqlx::query_as::<_, QueueRow>(&format!(
            "INSERT INTO queues (id, team_id, name, slug, visibility_timeout_seconds, max_attempts, payload_size,
                                 storage_limit)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (slug) WHERE deleted_at IS NULL DO NOTHING
             RETURNING {COLUMNS}"
        ))
        .bind(Uuid::new_v4())
        .bind(team.as_uuid())
        .bind(&settings.name)
        .bind(&candidate)
        .bind(settings.visibility_timeout_seconds as i32)
        .bind(settings.max_attempts as i32)
        .bind(settings.payload_size as i64)
        .bind(settings.storage_limit as i64)
        .fetch_optional(&mut *tx)
        .await?;
        if inserted.is_some() {
            return Ok(inserted);
        }
    }
    Ok(None)
}

/// Writes the given (checked) changes; `None` when the team has no such live queue.
pub(crate) async fn update(
    tx: &mut PgConnection,
    team: TeamId,
    slug: &Slug,
    changes: QueueChanges,
) -> ApiResult<Option<QueueRow>> {
    Ok(sqlx::query_as::<_, QueueRow>(&format!(
        "UPDATE queues SET name = COALESCE($3, name),
                           visibility_timeout_seconds = COALESCE($4, visibility_timeout_seconds),
                           max_attempts = COALESCE($5, max_attempts),
                           payload_size = COALESCE($6, payload_size),
                           storage_limit = COALESCE($7, storage_limit),
                           revision = revision + 1, updated_at = now()
         WHERE team_id = $1 AND slug = $2 AND deleted_at IS NULL
         RETURNING {COLUMNS}"
    ))
    .bind(team.as_uuid())
    .bind(slug.as_str())
    .bind(changes.name)
    .bind(changes.visibility_timeout_seconds.map(|v| v as i32))
    .bind(changes.max_attempts.map(|v| v as i32))
    .bind(changes.payload_size.map(|v| v as i64))
    .bind(changes.storage_limit.map(|v| v as i64))
    .fetch_optional(&mut *tx)
    .await?)
}

pub(crate) async fn set_paused(
    tx: &mut PgConnection,
    team: TeamId,
    slug: &Slug,
    paused: bool,
) -> ApiResult<Option<QueueRow>> {
    Ok(sqlx::query_as::<_, QueueRow>(&format!(
        "UPDATE queues SET paused = $3, revision = revision + 1, updated_at = now()
         WHERE team_id = $1 AND slug = $2 AND deleted_at IS NULL RETURNING {COLUMNS}"
    ))
    .bind(team.as_uuid())
    .bind(slug.as_str())
    .bind(paused)
    .fetch_optional(&mut *tx)
    .await?)
}

/// Soft-deletes the queue (its row stays, its slug is freed): its id and slug, or `None`.
pub(crate) async fn soft_delete(tx: &mut PgConnection, team: TeamId, slug: &Slug) -> ApiResult<Option<(Uuid, String)>> {
    Ok(sqlx::query_as(
        "UPDATE queues SET deleted_at = now(), updated_at = now()
         WHERE team_id = $1 AND slug = $2 AND deleted_at IS NULL RETURNING id, slug",
    )
    .bind(team.as_uuid())
    .bind(slug.as_str())
    .fetch_optional(&mut *tx)
    .await?)
}

/// Raises each of the team's live queues to the size its add-on row pays for (billing calls
/// this once Stripe has the item); the queues raised.
pub(crate) async fn raise_to_paid_sizes(tx: &mut PgConnection, team: TeamId) -> ApiResult<Vec<QueueRow>> {
    Ok(sqlx::query_as::<_, QueueRow>(&format!(
        "UPDATE queues q SET payload_size = a.payload_size, revision = q.revision + 1, updated_at = now()
         FROM queue_add_ons a
         WHERE a.queue_id = q.id AND q.team_id = $1 AND q.deleted_at IS NULL AND q.payload_size < a.payload_size
         RETURNING {}",
        q_columns()
    ))
    .bind(team.as_uuid())
    .fetch_all(&mut *tx)
    .await?)
}

/// Lowers every live queue of the team larger than `size` to it; the queues lowered.
pub(crate) async fn lower_sizes_to(tx: &mut PgConnection, team: TeamId, size: u64) -> ApiResult<Vec<QueueRow>> {
    Ok(sqlx::query_as::<_, QueueRow>(&format!(
        "UPDATE queues SET payload_size = $2, revision = revision + 1, updated_at = now()
         WHERE team_id = $1 AND deleted_at IS NULL AND payload_size > $2 RETURNING {COLUMNS}"
    ))
    .bind(team.as_uuid())
    .bind(size as i64)
    .fetch_all(&mut *tx)
    .await?)
}

/// Bumps the live queue's revision for a change kept in another table (its push target), so the
/// projection writes of two racing changes land in commit order. The row lock also holds off a
/// concurrent delete of the queue until the change is committed. `None` when the queue is gone.
pub(crate) async fn bump_revision(tx: &mut PgConnection, queue: QueueId) -> ApiResult<Option<u64>> {
    let revision: Option<i64> = sqlx::query_scalar(
        "UPDATE queues SET revision = revision + 1 WHERE id = $1 AND deleted_at IS NULL RETURNING revision",
    )
    .bind(queue.0)
    .fetch_optional(&mut *tx)
    .await?;
    Ok(revision.map(|r| r as u64))
}
