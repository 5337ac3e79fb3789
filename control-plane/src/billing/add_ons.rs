//! Payload add-ons on queues: what `PATCH /api/v1/queues/{slug}` does when `payload_size`
//! changes, and the list the overview shows.
//!
//! Billing decides here and the queues module writes: `prepare` checks and decides before any
//! transaction, `SizeChange::record` writes the add-on and outbox rows in the transaction that
//! writes the queue's size (`queues::update`), so both change or neither.
//!
//! Up (1 → 10 → 50 MiB): a payment method must be on file (else 402 with a setup URL); the add-on
//! is recorded with an outbox row and synced at once; the queue takes the size when Stripe has
//! the item (the outbox's sync, through `queues::store::raise_to_paid_sizes`). Down: refused
//! while stored messages are larger than the new size (409 with the count, asked of the data
//! plane); otherwise the size applies at once and the outbox lowers the bill. With billing off
//! every size is granted at once.

use super::account::{self, AddOn};
use super::outbox;
use crate::state::ControlPlane;
use crate::teams::TeamId;
use aqs_core::ids::QueueId;
use aqs_core::limits::MIB;
use aqs_core::{ApiError, ApiResult};
use sqlx::PgConnection;
use uuid::Uuid;

/// What the queue update does with the requested size.
#[derive(Debug, PartialEq, Eq)]
pub enum PayloadChange {
    /// Write this size now (billing off, a downgrade, or no change).
    ApplyNow(u64),
    /// Keep the current size until Stripe has the item; a sync is due.
    AwaitStripe,
}

/// A checked change of a queue's payload size: billing's decision, and the rows that record it,
/// written by [`SizeChange::record`] in the transaction that writes the queue's size.
#[must_use]
#[derive(Debug)]
pub struct SizeChange {
    pub change: PayloadChange,
    /// The add-on row and outbox row to write; `None` when billing has nothing to record.
    billed: Option<Billed>,
}

#[derive(Debug)]
struct Billed {
    team: TeamId,
    queue: QueueId,
    requested: u64,
    /// The add-on's size, or `None` for the included 1 MiB (the row goes).
    add_on: Option<u64>,
    /// A downgrade: the outbox lowers the bill once this commits, without waiting for Stripe.
    kick: bool,
}

impl SizeChange {
    fn granted(size: u64) -> Self {
        Self { change: PayloadChange::ApplyNow(size), billed: None }
    }

    /// The size the queue's row takes in this transaction (`None`: it keeps its size for now).
    pub fn size_now(&self) -> Option<u64> {
        match self.change {
            PayloadChange::ApplyNow(size) => Some(size),
            PayloadChange::AwaitStripe => None,
        }
    }

    pub fn awaits_stripe(&self) -> bool {
        self.change == PayloadChange::AwaitStripe
    }

    /// Whether this changes what the team buys (an add-on row is written): the audit log's
    /// `billing.add_on_changed`.
    pub fn bills(&self) -> bool {
        self.billed.is_some()
    }

    /// Writes the add-on row and its outbox row in the caller's transaction.
    pub(crate) async fn record(&self, tx: &mut PgConnection) -> ApiResult<()> {
        let Some(billed) = &self.billed else { return Ok(()) };
        match billed.add_on {
            Some(size) => {
                sqlx::query(
                    "INSERT INTO queue_add_ons (queue_id, team_id, payload_size) VALUES ($1, $2, $3)
                     ON CONFLICT (queue_id) DO UPDATE SET payload_size = EXCLUDED.payload_size, updated_at = now()",
                )
                .bind(billed.queue.0)
                .bind(billed.team.as_uuid())
                .bind(size as i64)
                .execute(&mut *tx)
                .await?;
            }
            None => {
                sqlx::query("DELETE FROM queue_add_ons WHERE queue_id = $1")
                    .bind(billed.queue.0)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        let reason = format!("queue {} payload size {} MiB", billed.queue, billed.requested / MIB);
        outbox::enqueue(tx, billed.team, &reason).await
    }

    /// After the commit: never wait for Stripe to pay less.
    pub(crate) fn committed(&self, cp: &ControlPlane) {
        if let (Some(billing), Some(Billed { kick: true, .. })) = (cp.billing(), &self.billed) {
            billing.kick();
        }
    }
}

/// Checks a change of `queue`'s payload size from `current` to `requested` (asking the data
/// plane and Stripe, so before any transaction opens) and decides what to record.
pub async fn prepare(
    cp: &ControlPlane,
    team: TeamId,
    queue: QueueId,
    current: u64,
    requested: u64,
) -> ApiResult<SizeChange> {
    if requested < current {
        let count = cp.engine().stored_larger_than(queue, requested).await?;
        if count > 0 {
            return Err(ApiError::OversizedMessagesStored {
                message: format!(
                    "{count} stored message(s) are larger than {} MiB; purge or drain them (ready, in flight, \
                     delayed and dead letters) before switching to the smaller size",
                    requested / MIB
                ),
                count,
            });
        }
    }
    let Some(billing) = cp.billing() else {
        if requested > current {
            super::mode::require_free_grants(cp).await?;
        }
        return Ok(SizeChange::granted(requested));
    };
    let bought = bought_size(cp, queue).await?;
    if requested == bought && requested <= current {
        return Ok(SizeChange::granted(requested));
    }
    if requested > current {
        let account = account::find(cp, team).await?;
        if account.payment_method_id.is_none() {
            let setup_url = account::setup_url(cp, team).await?;
            return Err(ApiError::PaymentRequired {
                message: format!(
                    "the {} MiB payload size is a paid add-on: add a payment method first (open setup_url), then \
                     choose it again",
                    requested / MIB
                ),
                setup_url,
            });
        }
        account::ensure_customer(cp, billing, team).await?;
    }
    let upgrade = requested > current;
    let billed =
        Billed { team, queue, requested, add_on: billing.price_for(requested).map(|_| requested), kick: !upgrade };
    let change = if upgrade { PayloadChange::AwaitStripe } else { PayloadChange::ApplyNow(requested) };
    Ok(SizeChange { change, billed: Some(billed) })
}

/// The size the team pays for on this queue (1 MiB without an add-on).
async fn bought_size(cp: &ControlPlane, queue: QueueId) -> ApiResult<u64> {
    let size: Option<i64> = sqlx::query_scalar("SELECT payload_size FROM queue_add_ons WHERE queue_id = $1")
        .bind(queue.0)
        .fetch_optional(cp.db())
        .await?;
    Ok(size.map(|s| s as u64).unwrap_or(MIB))
}

/// The team's add-ons on live queues. With billing off, the queues granted a larger size.
pub async fn list(cp: &ControlPlane, team: TeamId) -> ApiResult<Vec<AddOn>> {
    #[derive(sqlx::FromRow)]
    struct Row {
        slug: String,
        name: String,
        bought: i64,
        current: i64,
    }
    let sql = if cp.billing().is_some() {
        "SELECT q.slug, q.name, a.payload_size AS bought, q.payload_size AS current
         FROM queue_add_ons a JOIN queues q ON q.id = a.queue_id
         WHERE a.team_id = $1 AND q.deleted_at IS NULL ORDER BY q.created_at, q.slug"
    } else {
        "SELECT slug, name, payload_size AS bought, payload_size AS current FROM queues
         WHERE team_id = $1 AND deleted_at IS NULL AND payload_size > 1048576 ORDER BY created_at, slug"
    };
    let rows = sqlx::query_as::<_, Row>(sql).bind(team.as_uuid()).fetch_all(cp.db()).await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let price = match cp.billing() {
            Some(billing) => match billing.price_for(row.bought as u64) {
                Some(price) => billing.stripe().price_cents(price).await.ok(),
                None => None,
            },
            None => Some(0),
        };
        out.push(AddOn {
            queue: row.slug,
            queue_name: row.name,
            payload_size: row.bought as u64,
            monthly_price_cents: price,
            pending: row.current < row.bought,
        });
    }
    Ok(out)
}

/// A deleted queue stops counting at once (the desired state joins live queues); this writes
/// the outbox row in the deletion's transaction when the queue had an add-on.
pub(crate) async fn queue_deleted(
    tx: &mut PgConnection,
    cp: &ControlPlane,
    team: TeamId,
    queue: Uuid,
) -> ApiResult<()> {
    if cp.billing().is_none() {
        return Ok(());
    }
    let had: Option<i64> = sqlx::query_scalar("SELECT payload_size FROM queue_add_ons WHERE queue_id = $1")
        .bind(queue)
        .fetch_optional(&mut *tx)
        .await?;
    if had.is_some() {
        outbox::enqueue(tx, team, &format!("queue {queue} deleted")).await?;
    }
    Ok(())
}
