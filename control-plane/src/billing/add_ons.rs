//! Payload add-ons on queues: what `PATCH /api/v1/queues/{slug}` does when `payload_size`
//! changes, and the list the overview shows.
//!
//! Up (1 → 10 → 50 MiB): a payment method must be on file (else 402 with a setup URL); the add-on
//! is recorded with an outbox row and synced at once; the queue takes the size when Stripe has
//! the item (`outbox::apply_paid_sizes`). Down: refused while stored messages are larger than the
//! new size (409 with the count, asked of the data plane); otherwise the size applies at once
//! and the outbox lowers the bill. With billing off every size is granted at once.

use super::account::{self, AddOn};
use super::outbox;
use crate::db_error::db_error;
use crate::members::MemberId;
use crate::queues::Queue;
use crate::state::ControlPlane;
use aqs_core::limits::MIB;
use aqs_core::{ApiError, ApiResult};
use uuid::Uuid;

/// What the queue update does with the requested size.
#[derive(Debug, PartialEq, Eq)]
pub enum PayloadChange {
    /// Write this size now (billing off, a downgrade, or no change).
    ApplyNow(u64),
    /// Keep the current size until Stripe has the item; a sync is due.
    AwaitStripe,
}

/// Checks and records a change of `queue`'s payload size to `requested`.
pub async fn prepare(cp: &ControlPlane, member: MemberId, queue: &Queue, requested: u64) -> ApiResult<PayloadChange> {
    if requested < queue.payload_size {
        let count = cp.engine().stored_larger_than(queue.id, requested).await?;
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
        return Ok(PayloadChange::ApplyNow(requested));
    };
    let bought = bought_size(cp, queue.id).await?;
    if requested == bought && requested <= queue.payload_size {
        return Ok(PayloadChange::ApplyNow(requested));
    }
    if requested > queue.payload_size {
        let account = account::find(cp, member).await?;
        if account.payment_method_id.is_none() {
            let setup_url = account::setup_url(cp, member).await?;
            return Err(ApiError::PaymentRequired {
                message: format!(
                    "the {} MiB payload size is a paid add-on: add a payment method first (open setup_url), then \
                     choose it again",
                    requested / MIB
                ),
                setup_url,
            });
        }
        account::ensure_customer(cp, billing, member).await?;
    }
    let mut tx = cp.db().begin().await.map_err(db_error)?;
    if billing.price_for(requested).is_some() {
        sqlx::query(
            "INSERT INTO queue_add_ons (queue_id, member_id, payload_size) VALUES ($1, $2, $3)
             ON CONFLICT (queue_id) DO UPDATE SET payload_size = EXCLUDED.payload_size, updated_at = now()",
        )
        .bind(queue.id.0)
        .bind(member.as_uuid())
        .bind(requested as i64)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
    } else {
        sqlx::query("DELETE FROM queue_add_ons WHERE queue_id = $1")
            .bind(queue.id.0)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
    }
    let reason = format!("queue {} payload size {} MiB", queue.id, requested / MIB);
    outbox::enqueue(&mut tx, member, &reason).await?;
    tx.commit().await.map_err(db_error)?;
    if requested > queue.payload_size {
        Ok(PayloadChange::AwaitStripe)
    } else {
        // Never wait for Stripe to pay less: the outbox lowers the bill.
        billing.kick();
        Ok(PayloadChange::ApplyNow(requested))
    }
}

/// The size the member pays for on this queue (1 MiB without an add-on).
async fn bought_size(cp: &ControlPlane, queue: aqs_core::ids::QueueId) -> ApiResult<u64> {
    let size: Option<i64> = sqlx::query_scalar("SELECT payload_size FROM queue_add_ons WHERE queue_id = $1")
        .bind(queue.0)
        .fetch_optional(cp.db())
        .await
        .map_err(db_error)?;
    Ok(size.map(|s| s as u64).unwrap_or(MIB))
}

/// The member's add-ons on live queues. With billing off, the queues granted a larger size.
pub async fn list(cp: &ControlPlane, member: MemberId) -> ApiResult<Vec<AddOn>> {
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
         WHERE a.member_id = $1 AND q.deleted_at IS NULL ORDER BY q.created_at, q.slug"
    } else {
        "SELECT slug, name, payload_size AS bought, payload_size AS current FROM queues
         WHERE member_id = $1 AND deleted_at IS NULL AND payload_size > 1048576 ORDER BY created_at, slug"
    };
    let rows = sqlx::query_as::<_, Row>(sql).bind(member.as_uuid()).fetch_all(cp.db()).await.map_err(db_error)?;
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
    tx: &mut sqlx::PgConnection,
    cp: &ControlPlane,
    member: MemberId,
    queue: Uuid,
) -> ApiResult<()> {
    if cp.billing().is_none() {
        return Ok(());
    }
    let had: Option<i64> = sqlx::query_scalar("SELECT payload_size FROM queue_add_ons WHERE queue_id = $1")
        .bind(queue)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_error)?;
    if had.is_some() {
        outbox::enqueue(tx, member, &format!("queue {queue} deleted")).await?;
    }
    Ok(())
}
