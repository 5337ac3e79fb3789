//! The billing outbox: every write to a team's Stripe subscription goes through here
//! (`docs/billing.md`). Creating the customer and the Checkout and portal sessions happen in the
//! request that needs them (`account.rs`): they change no subscription.
//!
//! A row says "bring this team's subscription in line with `queue_add_ons`", written in the
//! same transaction as the change that needs it. Most rows are worked off by [`run`], the loop
//! every control-plane replica runs; an add-on upgrade runs [`sync_now`] in its own request, so the
//! queue can take the size it paid for in the answer, and leaves a failure to the loop. `sync`
//! takes the team's `billing_accounts` row `FOR UPDATE` (the loop uses `SKIP LOCKED`: a team
//! another replica is syncing is left to it), reads what the team should pay for from
//! PostgreSQL and what Stripe has now, asks the pure `plan` for the writes, and sends each with the
//! idempotency key `aqs-<row>-<write hash>`: a retry after a lost answer is the same request, so
//! Stripe answers it again instead of charging twice. Success marks every row of the team up to
//! the newest one read at the start, then raises the queues Stripe now bills to their paid size
//! (`apply_paid_sizes`); a failure pushes the rows back with exponential backoff (2 s doubling,
//! at most 5 min) and keeps the error in `last_error`.

use super::Billing;
use super::plan::{self, Desired};
use crate::projection;
use crate::queues::{self, QueueRow};
use crate::state::ControlPlane;
use crate::teams::TeamId;
use anyhow::Context;
use aqs_core::ApiResult;
use sha2::{Digest, Sha256};
use sqlx::PgConnection;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// How often the loop looks for due rows when nothing wakes it.
const POLL: Duration = Duration::from_secs(1);
const BACKOFF_CAP_SECS: i64 = 300;

/// Queues a sync of `team`'s subscription.
pub(crate) async fn enqueue(tx: &mut PgConnection, team: TeamId, reason: &str) -> ApiResult<()> {
    sqlx::query("INSERT INTO billing_outbox (team_id, reason) VALUES ($1, $2)")
        .bind(team.as_uuid())
        .bind(reason)
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// How a sync ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Synced {
    /// Stripe matches `queue_add_ons`.
    Done,
    /// Another sync of this team is running (the loop skips it).
    Busy,
    /// Nothing was due.
    Idle,
}

/// Syncs `team` now, waiting for a sync already running. On failure the team's rows are
/// retried later by the loop.
pub async fn sync_now(cp: &ControlPlane, team: TeamId) -> anyhow::Result<Synced> {
    run_sync(cp, team, false).await
}

async fn run_sync(cp: &ControlPlane, team: TeamId, skip_locked: bool) -> anyhow::Result<Synced> {
    let Some(billing) = cp.billing() else { return Ok(Synced::Idle) };
    match sync(cp, billing, team, skip_locked).await {
        Ok(outcome) => Ok(outcome),
        Err(err) => {
            let message = format!("{err:#}");
            tracing::warn!(team = %team.as_uuid(), error = %message, "billing sync failed; will retry");
            sqlx::query(
                "UPDATE billing_outbox SET attempts = attempts + 1, last_error = $2,
                        next_attempt_at = now() + make_interval(secs => LEAST(power(2, attempts + 1), $3))
                 WHERE team_id = $1 AND done_at IS NULL",
            )
            .bind(team.as_uuid())
            .bind(message.chars().take(500).collect::<String>())
            .bind(BACKOFF_CAP_SECS as f64)
            .execute(cp.db())
            .await?;
            Err(err)
        }
    }
}

async fn sync(cp: &ControlPlane, billing: &Billing, team: TeamId, skip_locked: bool) -> anyhow::Result<Synced> {
    let mut tx = cp.db().begin().await?;
    // Creates the account row if needed so there is always a row to lock.
    sqlx::query("INSERT INTO billing_accounts (team_id) VALUES ($1) ON CONFLICT (team_id) DO NOTHING")
        .bind(team.as_uuid())
        .execute(&mut *tx)
        .await?;
    let lock = if skip_locked { "FOR UPDATE SKIP LOCKED" } else { "FOR UPDATE" };
    let account: Option<(Option<String>, Option<String>)> = sqlx::query_as(&format!(
        "SELECT customer_id, payment_method_id FROM billing_accounts WHERE team_id = $1 {lock}"
    ))
    .bind(team.as_uuid())
    .fetch_optional(&mut *tx)
    .await?;
    let Some((customer, payment_method)) = account else { return Ok(Synced::Busy) };
    let up_to: Option<i64> =
        sqlx::query_scalar("SELECT max(id) FROM billing_outbox WHERE team_id = $1 AND done_at IS NULL")
            .bind(team.as_uuid())
            .fetch_one(&mut *tx)
            .await?;
    let Some(up_to) = up_to else { return Ok(Synced::Idle) };
    let desired = desired(&mut tx, billing, team).await?;
    if let Some(customer) = customer {
        let current = billing.stripe().live_subscription(&customer).await?;
        let writes = plan::plan(&desired, current.as_ref());
        let mut subscription = current.map(|c| (c.subscription_id, "active".to_owned()));
        for write in &writes {
            let key = format!("aqs-{up_to}-{}", &hex::encode(Sha256::digest(write.fingerprint()))[..24]);
            if let Some(state) = billing
                .stripe()
                .apply(write, &customer, payment_method.as_deref(), &key)
                .await
                .with_context(|| format!("stripe write {write:?}"))?
            {
                subscription = Some(state);
            }
        }
        if !writes.is_empty() {
            let (id, status) = subscription.map(|(id, status)| (Some(id), Some(status))).unwrap_or((None, None));
            sqlx::query(
                "UPDATE billing_accounts SET subscription_id = $2, subscription_status = COALESCE($3, subscription_status),
                        cancelled_for_nonpayment_at = CASE WHEN $3 = 'active' THEN NULL ELSE cancelled_for_nonpayment_at END,
                        updated_at = now()
                 WHERE team_id = $1",
            )
            .bind(team.as_uuid())
            .bind(id)
            .bind(status)
            .execute(&mut *tx)
            .await?;
        }
    } else if !desired.is_empty() {
        anyhow::bail!("team has add-ons but no Stripe customer");
    }
    sqlx::query("UPDATE billing_outbox SET done_at = now() WHERE team_id = $1 AND id <= $2 AND done_at IS NULL")
        .bind(team.as_uuid())
        .bind(up_to)
        .execute(&mut *tx)
        .await?;
    // Stripe has every item now: the queues take the sizes paid for, in the transaction that
    // marks the rows done (a failure leaves both for the retry).
    let raised = queues::store::raise_to_paid_sizes(&mut tx, team).await?;
    tx.commit().await?;
    project_paid_sizes(cp, raised).await?;
    Ok(Synced::Done)
}

/// Price id → the team's live queues on it (ids sorted, for stable metadata).
async fn desired(tx: &mut PgConnection, billing: &Billing, team: TeamId) -> anyhow::Result<Desired> {
    let rows: Vec<(Uuid, i64)> = sqlx::query_as(
        "SELECT a.queue_id, a.payload_size FROM queue_add_ons a JOIN queues q ON q.id = a.queue_id
         WHERE a.team_id = $1 AND q.deleted_at IS NULL ORDER BY a.queue_id",
    )
    .bind(team.as_uuid())
    .fetch_all(&mut *tx)
    .await?;
    let mut desired = Desired::new();
    for (queue, size) in rows {
        let price = billing.price_for(size as u64).context("an add-on row without a price")?;
        desired.entry(price.to_owned()).or_default().push(queue.simple().to_string());
    }
    Ok(desired)
}

/// Projects the queues raised to their paid size.
async fn project_paid_sizes(cp: &ControlPlane, raised: Vec<QueueRow>) -> ApiResult<()> {
    for row in raised {
        let queue = row.into_queue(cp.public_url());
        tracing::info!(queue = %queue.id, payload_size = queue.payload_size, "payload add-on active");
        projection::update_queue(&mut cp.redis(), cp.keys(), &queue.meta()).await.map_err(projection::failed)?;
    }
    Ok(())
}

/// Works off due rows until `cancel`: woken by new rows, and once a second for retries.
pub async fn run(cp: ControlPlane, cancel: CancellationToken) {
    let Some(billing) = cp.billing() else { return };
    let kick = billing.kick.clone();
    loop {
        if let Err(err) = work_due(&cp).await {
            // With its chain: an outage's cause, a database error under its context.
            tracing::warn!(error = format!("{:#}", anyhow::Error::new(err)), "billing outbox pass failed");
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = kick.notified() => {}
            _ = tokio::time::sleep(POLL) => {}
        }
    }
}

/// One pass over the members with due rows.
pub async fn work_due(cp: &ControlPlane) -> ApiResult<()> {
    let members: Vec<Uuid> = sqlx::query_scalar(
        "SELECT DISTINCT team_id FROM billing_outbox WHERE done_at IS NULL AND next_attempt_at <= now() LIMIT 50",
    )
    .fetch_all(cp.db())
    .await?;
    for team in members {
        // A failure is logged and rescheduled by run_sync; the other members go on.
        if run_sync(cp, TeamId::from_stored(team), true).await.is_err() {
            continue;
        }
    }
    Ok(())
}
