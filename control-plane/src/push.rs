//! Push targets: a team points a queue at an HTTP handler (`PUT /api/v1/queues/{slug}/push`),
//! reads it, stops it, rotates its signing secret, and reads the last deliveries. The data plane's
//! dispatchers do the delivering, from the projection written here (`NS:{q:ID}:push`).
//!
//! - The handler URL passes `push_url`'s rules (scheme, credentials, fragment, an authorised
//!   prefix, a public address), each failure a 400 naming the rule.
//! - The signing secret (`whsec_…`) is created when push is first set and shown in that answer
//!   only; a rotation shows the new one once and keeps the old one signing for 24 h. Stopping push
//!   forgets both, so setting it again starts with a fresh secret.
//! - Push and pull exclude each other: consume on a pushed queue is 409 `push_enabled` (data
//!   plane), and turning push on while pull consumers hold live leases is 409 `conflict`.

use crate::audit::{self, Target};
use crate::projection::{self, ProjectedPush};
use crate::push_url;
use crate::queues;
use crate::slug::Slug;
use crate::state::ControlPlane;
use crate::teams::{Caller, TeamId};
use crate::timefmt;
use aqs_core::ids::QueueId;
use aqs_core::projection::{PushMode, PushRecord};
use aqs_core::push::{self as limits, DeliveryOutcome, DeliveryRecord};
use aqs_core::secret::Secret;
use aqs_core::time::{now_ms, rfc3339};
use aqs_core::{ApiError, ApiResult};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use uuid::Uuid;

/// `PUT /api/v1/queues/{slug}/push`: the whole target (what is omitted takes its default).
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PushInput {
    /// Under a prefix an operator authorised for the team (`GET /api/v1/push/callback-urls`).
    #[schema(format = Uri)]
    pub handler_url: String,
    /// `message` (default) or `batch`.
    #[schema(value_type = Option<PushMode>)]
    pub mode: Option<String>,
    /// Batch mode only: 1 to 100, default 10.
    pub messages_per_run: Option<u32>,
    /// Batch mode only: how long to wait to fill a batch, 0 to 60 s, default 5.
    pub wait_seconds: Option<u32>,
    /// 30 to 900 s; default the queue's visibility timeout clamped to that range.
    pub timeout_seconds: Option<u32>,
    /// In-flight requests per data-plane replica, 1 to 100, default 10.
    pub concurrency: Option<u32>,
}

/// A push target as shown: never its secrets.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct PushTarget {
    pub handler_url: String,
    pub mode: PushMode,
    /// Batch mode only (null in message mode).
    pub messages_per_run: Option<u32>,
    pub wait_seconds: Option<u32>,
    pub timeout_seconds: u32,
    pub concurrency: u32,
    /// Until when the secret replaced by the last rotation still signs (null when none does).
    #[serde(serialize_with = "timefmt::rfc3339_opt")]
    pub previous_secret_expires_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "timefmt::rfc3339")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "timefmt::rfc3339")]
    pub updated_at: DateTime<Utc>,
}

/// The answer to setting push or rotating its secret.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct PushSet {
    pub push: PushTarget,
    /// The signing secret, shown only when it was just created (first set, or a rotation).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "expose_opt")]
    #[schema(value_type = Option<String>)]
    pub signing_secret: Option<Secret>,
    /// True when push was off before this call.
    #[serde(skip)]
    pub created: bool,
}

fn expose_opt<S: serde::Serializer>(secret: &Option<Secret>, s: S) -> Result<S::Ok, S::Error> {
    match secret {
        Some(secret) => s.serialize_str(secret.expose()),
        None => s.serialize_none(),
    }
}

/// One line of the delivery log: one push request and what became of it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct PushDelivery {
    pub at: String,
    /// The message id, or the batch id in batch mode.
    pub message_id: String,
    pub messages: u32,
    /// The handler's status; null when it did not answer (timeout, connection failure).
    pub status: Option<u16>,
    pub latency_ms: u64,
    pub outcome: DeliveryOutcome,
    pub detail: String,
    /// The handler URL the request went to ("" for entries older than this field).
    pub handler_url: String,
}

pub(crate) const COLUMNS: &str = "queue_id, handler_url, mode, messages_per_run, wait_seconds, timeout_seconds, \
     concurrency, secret, previous_secret, previous_until, created_at, updated_at";

#[derive(sqlx::FromRow)]
pub(crate) struct PushRow {
    pub queue_id: Uuid,
    handler_url: String,
    mode: String,
    messages_per_run: i32,
    wait_seconds: i32,
    timeout_seconds: i32,
    concurrency: i32,
    secret: String,
    previous_secret: Option<String>,
    previous_until: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl PushRow {
    fn mode(&self) -> PushMode {
        PushMode::parse(&self.mode).unwrap_or(PushMode::Message)
    }

    /// A previous secret that still signs.
    fn live_previous(&self) -> Option<(&str, DateTime<Utc>)> {
        match (&self.previous_secret, self.previous_until) {
            (Some(secret), Some(until)) if until > Utc::now() => Some((secret, until)),
            _ => None,
        }
    }

    fn target(&self) -> PushTarget {
        let batch = self.mode() == PushMode::Batch;
        PushTarget {
            handler_url: self.handler_url.clone(),
            mode: self.mode(),
            messages_per_run: batch.then_some(self.messages_per_run as u32),
            wait_seconds: batch.then_some(self.wait_seconds as u32),
            timeout_seconds: self.timeout_seconds as u32,
            concurrency: self.concurrency as u32,
            previous_secret_expires_at: self.live_previous().map(|(_, until)| until),
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }

    /// What the data plane reads (`NS:{q:ID}:push`).
    pub(crate) fn record(&self, slug: &str) -> PushRecord {
        let previous = self.live_previous();
        PushRecord {
            queue: slug.to_owned(),
            handler_url: self.handler_url.clone(),
            mode: self.mode(),
            messages_per_run: self.messages_per_run as u32,
            wait_seconds: self.wait_seconds as u32,
            timeout_seconds: self.timeout_seconds as u32,
            concurrency: self.concurrency as u32,
            secret: Secret::new(self.secret.clone()),
            previous_secret: previous.map(|(s, _)| Secret::new(s)),
            previous_until_ms: previous.map(|(_, until)| until.timestamp_millis() as u64).unwrap_or(0),
        }
    }
}

/// Checked settings, with defaults filled in.
struct Checked {
    url: url::Url,
    mode: PushMode,
    messages_per_run: u32,
    wait_seconds: u32,
    timeout_seconds: u32,
    concurrency: u32,
}

fn check(input: PushInput, visibility_seconds: u32) -> ApiResult<Checked> {
    let url = push_url::parse("handler_url", &input.handler_url)?;
    let mode = match input.mode.as_deref().map(str::trim) {
        None | Some("message") => PushMode::Message,
        Some("batch") => PushMode::Batch,
        Some(other) => return Err(ApiError::field("mode", format!("use \"message\" or \"batch\", not {other:?}"))),
    };
    if mode == PushMode::Message {
        for (field, given) in [("messages_per_run", input.messages_per_run), ("wait_seconds", input.wait_seconds)] {
            if given.is_some() {
                return Err(ApiError::field(field, "applies to batch mode only; send mode \"batch\""));
            }
        }
    }
    let messages_per_run = in_range(
        "messages_per_run",
        input.messages_per_run.unwrap_or(limits::MESSAGES_PER_RUN_DEFAULT),
        limits::MESSAGES_PER_RUN_MIN,
        limits::MESSAGES_PER_RUN_MAX,
    )?;
    let wait_seconds =
        in_range("wait_seconds", input.wait_seconds.unwrap_or(limits::WAIT_DEFAULT_SECS), 0, limits::WAIT_MAX_SECS)?;
    let default_timeout = visibility_seconds.clamp(limits::TIMEOUT_MIN_SECS, limits::TIMEOUT_MAX_SECS);
    let timeout_seconds = in_range(
        "timeout_seconds",
        input.timeout_seconds.unwrap_or(default_timeout),
        limits::TIMEOUT_MIN_SECS,
        limits::TIMEOUT_MAX_SECS,
    )?;
    let concurrency = in_range(
        "concurrency",
        input.concurrency.unwrap_or(limits::CONCURRENCY_DEFAULT),
        limits::CONCURRENCY_MIN,
        limits::CONCURRENCY_MAX,
    )?;
    Ok(Checked { url, mode, messages_per_run, wait_seconds, timeout_seconds, concurrency })
}

fn in_range(field: &str, value: u32, min: u32, max: u32) -> ApiResult<u32> {
    if value < min || value > max {
        return Err(ApiError::field(field, format!("must be between {min} and {max}")));
    }
    Ok(value)
}

/// The callback URL prefixes authorised for `team` (normalised, oldest first).
pub async fn callback_urls(cp: &ControlPlane, team: TeamId) -> ApiResult<Vec<String>> {
    prefixes_of(cp, team.as_uuid()).await
}

pub(crate) async fn prefixes_of(cp: &ControlPlane, team: Uuid) -> ApiResult<Vec<String>> {
    Ok(sqlx::query_scalar("SELECT prefix FROM callback_urls WHERE team_id = $1 ORDER BY created_at, prefix")
        .bind(team)
        .fetch_all(cp.db())
        .await?)
}

/// Sets (creates or replaces) the queue's push target.
pub async fn set(cp: &ControlPlane, caller: &Caller, slug: &Slug, input: PushInput) -> ApiResult<PushSet> {
    let team = caller.team;
    let queue = queues::get(cp, team, slug).await?;
    let checked = check(input, queue.visibility_timeout_seconds)?;
    push_url::check_authorised(&checked.url, &callback_urls(cp, team).await?)?;
    push_url::check_address(&checked.url, cp.push_allow_private_networks()).await?;
    if find(cp, queue.id).await?.is_none() {
        refuse_if_pulled(cp, queue.id).await?;
    }
    let mut tx = cp.db().begin().await?;
    let revision = bump_revision(&mut tx, queue.id).await?;
    let secret = limits::generate_secret();
    // xmax = 0 only on a freshly inserted row: that is when the new secret was kept.
    let (row, inserted): (PushRow, bool) = {
        #[derive(sqlx::FromRow)]
        struct Upserted {
            #[sqlx(flatten)]
            row: PushRow,
            inserted: bool,
        }
        let upserted = sqlx::query_as::<_, Upserted>(&format!(
            "INSERT INTO push_targets (queue_id, handler_url, mode, messages_per_run, wait_seconds, timeout_seconds,
                                       concurrency, secret)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (queue_id) DO UPDATE SET handler_url = EXCLUDED.handler_url, mode = EXCLUDED.mode,
                 messages_per_run = EXCLUDED.messages_per_run, wait_seconds = EXCLUDED.wait_seconds,
                 timeout_seconds = EXCLUDED.timeout_seconds, concurrency = EXCLUDED.concurrency, updated_at = now()
             RETURNING {COLUMNS}, (xmax = 0) AS inserted"
        ))
        .bind(queue.id.0)
        .bind(checked.url.as_str())
        .bind(checked.mode.as_str())
        .bind(checked.messages_per_run as i32)
        .bind(checked.wait_seconds as i32)
        .bind(checked.timeout_seconds as i32)
        .bind(checked.concurrency as i32)
        .bind(&secret)
        .fetch_one(&mut *tx)
        .await?;
        (upserted.row, upserted.inserted)
    };
    audit::record(&mut tx, caller, "push.updated", Target::new("push", queue.id)).await?;
    tx.commit().await?;
    tracing::info!(queue = %queue.id, mode = checked.mode.as_str(), created = inserted, "push target set");
    project(cp, &row, &queue.slug, revision).await?;
    Ok(PushSet { push: row.target(), signing_secret: inserted.then(|| Secret::new(secret)), created: inserted })
}

/// 409 while pull consumers hold live leases (the engine counts them): push would share the queue
/// with them.
async fn refuse_if_pulled(cp: &ControlPlane, queue: QueueId) -> ApiResult<()> {
    let held = cp.engine().held_leases(queue, now_ms()).await?;
    if held > 0 {
        return Err(ApiError::Conflict(format!(
            "pull consumers hold {held} live lease(s) on this queue; push and consume cannot run on one queue. \
             Stop the consumers and let their leases end (acknowledge, nack, or wait out the visibility timeout), \
             then set push"
        )));
    }
    Ok(())
}

pub async fn get(cp: &ControlPlane, team: TeamId, slug: &Slug) -> ApiResult<PushTarget> {
    let queue = queues::get(cp, team, slug).await?;
    find(cp, queue.id).await?.map(|row| row.target()).ok_or_else(not_set)
}

/// Stops push: the target and its secrets are forgotten; the delivery log stays.
pub async fn stop(cp: &ControlPlane, caller: &Caller, slug: &Slug) -> ApiResult<()> {
    let team = caller.team;
    let queue = queues::get(cp, team, slug).await?;
    if !remove_target(cp, queue.id, Some(caller)).await? {
        return Err(not_set());
    }
    tracing::info!(queue = %queue.id, "push stopped");
    Ok(())
}

/// Deletes the queue's push target and its projection; false when it had none. A `caller`'s stop
/// is recorded (`push.updated`) with it; an operator's withdrawal records its own event.
pub(crate) async fn remove_target(cp: &ControlPlane, queue: QueueId, caller: Option<&Caller>) -> ApiResult<bool> {
    let mut tx = cp.db().begin().await?;
    let revision = bump_revision(&mut tx, queue).await?;
    let deleted = sqlx::query("DELETE FROM push_targets WHERE queue_id = $1")
        .bind(queue.0)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    if deleted == 0 {
        return Ok(false);
    }
    if let Some(caller) = caller {
        audit::record(&mut tx, caller, "push.updated", Target::new("push", queue)).await?;
    }
    tx.commit().await?;
    projection::remove_push(&mut cp.redis(), cp.keys(), queue, Some(revision)).await.map_err(projection::failed)?;
    Ok(true)
}

/// A new signing secret, shown once; the replaced one keeps signing for 24 h (only the latest
/// replaced secret: rotating twice within a day retires the first at once).
pub async fn rotate_secret(cp: &ControlPlane, caller: &Caller, slug: &Slug) -> ApiResult<PushSet> {
    let team = caller.team;
    let queue = queues::get(cp, team, slug).await?;
    let secret = limits::generate_secret();
    let mut tx = cp.db().begin().await?;
    let revision = bump_revision(&mut tx, queue.id).await?;
    let row = sqlx::query_as::<_, PushRow>(&format!(
        "UPDATE push_targets SET previous_secret = secret, previous_until = now() + make_interval(secs => $3),
                                 secret = $2, updated_at = now()
         WHERE queue_id = $1 RETURNING {COLUMNS}"
    ))
    .bind(queue.id.0)
    .bind(&secret)
    .bind((limits::SECRET_OVERLAP_MS / 1000) as f64)
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(not_set)?;
    audit::record(&mut tx, caller, "secret.rotated", Target::new("push", queue.id)).await?;
    tx.commit().await?;
    tracing::info!(queue = %queue.id, "push signing secret rotated");
    project(cp, &row, &queue.slug, revision).await?;
    Ok(PushSet { push: row.target(), signing_secret: Some(Secret::new(secret)), created: false })
}

/// The last deliveries (at most 20), newest first. Readable after push stopped too.
pub async fn deliveries(cp: &ControlPlane, team: TeamId, slug: &Slug) -> ApiResult<Vec<PushDelivery>> {
    let queue = queues::get(cp, team, slug).await?;
    let lines = cp.engine().push_log(queue.id, limits::LOG_LEN).await?;
    Ok(lines
        .iter()
        .filter_map(|line| serde_json::from_str::<DeliveryRecord>(line).ok())
        .map(|r| PushDelivery {
            at: rfc3339(r.at_ms),
            message_id: r.message_id,
            messages: r.messages,
            status: r.status,
            latency_ms: r.latency_ms,
            outcome: r.outcome,
            detail: r.detail,
            handler_url: r.handler_url,
        })
        .collect())
}

async fn find(cp: &ControlPlane, queue: QueueId) -> ApiResult<Option<PushRow>> {
    Ok(sqlx::query_as::<_, PushRow>(&format!("SELECT {COLUMNS} FROM push_targets WHERE queue_id = $1"))
        .bind(queue.0)
        .fetch_optional(cp.db())
        .await?)
}

/// Every push change bumps the queue's revision in its transaction (`queues::store::bump_revision`).
async fn bump_revision(tx: &mut PgConnection, queue: QueueId) -> ApiResult<u64> {
    queues::store::bump_revision(tx, queue).await?.ok_or_else(queues::not_found)
}

async fn project(cp: &ControlPlane, row: &PushRow, slug: &str, revision: u64) -> ApiResult<()> {
    let push = ProjectedPush { id: QueueId(row.queue_id), record: row.record(slug), revision };
    projection::put_push(&mut cp.redis(), cp.keys(), &push).await.map_err(projection::failed)
}

fn not_set() -> ApiError {
    ApiError::not_found("push is not set for this queue")
}
