//! `POST /api/v1/billing/webhook`: Stripe's events, signature checked (`signature`), each applied
//! once (its id is recorded in the transaction that applies it) and in any order: subscription
//! and invoice events are applied only when newer than the last one applied (`created`, with a
//! cancellation winning a tie); payment-method events re-read the customer's card from Stripe,
//! so whichever arrives last writes the current card.

use super::outbox;
use super::signature::{self, SignatureError};
use crate::projection;
use crate::queues::{self, QueueRow};
use crate::state::ControlPlane;
use crate::teams::TeamId;
use aqs_core::limits::MIB;
use aqs_core::{ApiError, ApiResult};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use uuid::Uuid;

#[derive(Deserialize)]
struct Event {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    created: i64,
    data: EventData,
}

#[derive(Deserialize)]
struct EventData {
    object: serde_json::Value,
}

/// The answer Stripe gets: 2xx means "do not send it again".
#[derive(Serialize, Debug, utoipa::ToSchema)]
pub struct Received {
    pub received: bool,
    /// `applied`, `duplicate` or `ignored`.
    pub outcome: &'static str,
}

/// What one event does, decided from its type and object alone.
#[derive(Debug, PartialEq, Eq)]
enum Action {
    RefreshCard { customer: String },
    Subscription { customer: String, id: String, status: String, nonpayment: bool },
    Invoice { customer: String, failed: bool },
    Ignore,
}

fn action(event: &Event) -> Action {
    let object = &event.data.object;
    let text = |key: &str| object.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    let customer = match event.kind.as_str() {
        "customer.updated" => text("id"),
        _ => text("customer"),
    };
    let Some(customer) = customer else { return Action::Ignore };
    match event.kind.as_str() {
        "checkout.session.completed" | "setup_intent.succeeded" | "payment_method.attached" | "customer.updated" => {
            Action::RefreshCard { customer }
        }
        "customer.subscription.updated" | "customer.subscription.deleted" => {
            let (Some(id), Some(status)) = (text("id"), text("status")) else { return Action::Ignore };
            let reason = object.pointer("/cancellation_details/reason").and_then(|v| v.as_str());
            let nonpayment = event.kind == "customer.subscription.deleted" && reason == Some("payment_failed");
            let status = if event.kind == "customer.subscription.deleted" { "canceled".to_owned() } else { status };
            Action::Subscription { customer, id, status, nonpayment }
        }
        "invoice.payment_failed" => Action::Invoice { customer, failed: true },
        "invoice.paid" => Action::Invoice { customer, failed: false },
        _ => Action::Ignore,
    }
}

/// A signed event whose texts hold NUL cannot be stored (PostgreSQL text refuses it) and is no
/// event Stripe sends: a 400, not a failed insert answered 500.
fn refuse_nul(event: &Event, action: &Action) -> ApiResult<()> {
    let mut texts = vec![("id", &event.id), ("type", &event.kind)];
    match action {
        Action::RefreshCard { customer } | Action::Invoice { customer, .. } => texts.push(("customer", customer)),
        Action::Subscription { customer, id, status, .. } => {
            texts.extend([("customer", customer), ("data.object.id", id), ("data.object.status", status)]);
        }
        Action::Ignore => {}
    }
    match texts.iter().find(|(_, text)| text.contains('\0')) {
        Some((field, _)) => Err(ApiError::field(*field, "holds a NUL character")),
        None => Ok(()),
    }
}

/// Checks and applies one delivery.
pub async fn receive(cp: &ControlPlane, signature_header: Option<&str>, payload: &[u8]) -> ApiResult<Received> {
    let billing = super::account::required(cp)?;
    let now = Utc::now().timestamp();
    signature::verify(signature_header.unwrap_or(""), payload, billing.webhook_secret.expose(), now)
        .map_err(|err: SignatureError| ApiError::invalid(err.message()))?;
    let event: Event =
        serde_json::from_slice(payload).map_err(|_| ApiError::field("body", "not a Stripe event object"))?;
    let created = DateTime::<Utc>::from_timestamp(event.created, 0)
        .ok_or_else(|| ApiError::field("created", "not a valid timestamp"))?;
    let action = action(&event);
    refuse_nul(&event, &action)?;
    // The card is read from Stripe before the transaction: no lock is held across the network.
    let card = match &action {
        Action::RefreshCard { customer } => {
            Some(billing.stripe().card(customer).await.map_err(super::account::unavailable)?)
        }
        _ => None,
    };
    let mut tx = cp.db().begin().await?;
    let fresh =
        sqlx::query("INSERT INTO billing_events (id, type, created) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
            .bind(&event.id)
            .bind(&event.kind)
            .bind(created)
            .execute(&mut *tx)
            .await?
            .rows_affected()
            == 1;
    if !fresh {
        return Ok(Received { received: true, outcome: "duplicate" });
    }
    let team = match &action {
        Action::RefreshCard { customer } | Action::Subscription { customer, .. } | Action::Invoice { customer, .. } => {
            member_of(&mut tx, customer).await?
        }
        Action::Ignore => None,
    };
    let Some(team) = team else {
        tx.commit().await?;
        return Ok(Received { received: true, outcome: "ignored" });
    };
    let mut fell_back = Vec::new();
    match action {
        Action::RefreshCard { .. } => {
            let card = card.flatten();
            sqlx::query(
                "UPDATE billing_accounts SET payment_method_id = $2, payment_method_brand = $3,
                        payment_method_last4 = $4, updated_at = now() WHERE team_id = $1",
            )
            .bind(team)
            .bind(card.as_ref().map(|c| c.id.clone()))
            .bind(card.as_ref().map(|c| c.brand.clone()))
            .bind(card.as_ref().map(|c| c.last4.clone()))
            .execute(&mut *tx)
            .await?;
        }
        Action::Subscription { id, status, nonpayment, .. } => {
            let applied = sqlx::query(
                "UPDATE billing_accounts SET subscription_status = $3, subscription_event_at = $4,
                        subscription_id = CASE WHEN $3 = 'canceled' THEN NULL ELSE $2 END, updated_at = now()
                 WHERE team_id = $1 AND (subscription_id IS NULL OR subscription_id = $2)
                   AND (subscription_event_at IS NULL OR subscription_event_at < $4
                        OR (subscription_event_at = $4 AND $3 = 'canceled'))",
            )
            .bind(team)
            .bind(&id)
            .bind(&status)
            .bind(created)
            .execute(&mut *tx)
            .await?
            .rows_affected()
                == 1;
            if applied && nonpayment {
                fell_back = cancel_for_nonpayment(&mut tx, team).await?;
            }
        }
        Action::Invoice { failed, .. } => {
            sqlx::query(
                "UPDATE billing_accounts SET payment_failed_at = CASE WHEN $3 THEN $2 ELSE NULL END,
                        payment_event_at = $2, updated_at = now()
                 WHERE team_id = $1 AND (payment_event_at IS NULL OR payment_event_at <= $2)",
            )
            .bind(team)
            .bind(created)
            .bind(failed)
            .execute(&mut *tx)
            .await?;
        }
        Action::Ignore => {}
    }
    tx.commit().await?;
    for row in fell_back {
        let queue = row.into_queue(cp.public_url());
        tracing::info!(queue = %queue.id, "payload add-on cancelled for non-payment: back to 1 MiB");
        projection::update_queue(&mut cp.redis(), cp.keys(), &queue.meta()).await.map_err(projection::failed)?;
    }
    Ok(Received { received: true, outcome: "applied" })
}

async fn member_of(tx: &mut PgConnection, customer: &str) -> ApiResult<Option<Uuid>> {
    Ok(sqlx::query_scalar("SELECT team_id FROM billing_accounts WHERE customer_id = $1")
        .bind(customer)
        .fetch_optional(&mut *tx)
        .await?)
}

/// Stripe ended the subscription because payments failed: the add-ons go, the queues take 1 MiB
/// for new publishes (stored messages stay readable), and the console says why.
async fn cancel_for_nonpayment(tx: &mut PgConnection, team: Uuid) -> ApiResult<Vec<QueueRow>> {
    sqlx::query("UPDATE billing_accounts SET cancelled_for_nonpayment_at = now() WHERE team_id = $1")
        .bind(team)
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM queue_add_ons WHERE team_id = $1").bind(team).execute(&mut *tx).await?;
    // Nothing is left to bill; a row keeps the outbox's view consistent (it plans no write).
    outbox::enqueue(tx, TeamId::from_stored(team), "subscription cancelled for non-payment").await?;
    queues::store::lower_sizes_to(tx, TeamId::from_stored(team), MIB).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(kind: &str, object: serde_json::Value) -> Event {
        Event { id: "evt".into(), kind: kind.into(), created: 1, data: EventData { object } }
    }

    #[test]
    fn only_a_deletion_for_failed_payments_is_a_non_payment_cancellation() {
        let sub = |reason: &str| {
            json!({"id": "sub_1", "customer": "cus_1", "status": "canceled",
                   "cancellation_details": {"reason": reason}})
        };
        let nonpayment = |kind: &str, reason: &str| match action(&event(kind, sub(reason))) {
            Action::Subscription { nonpayment, status, .. } => (nonpayment, status),
            other => panic!("{other:?}"),
        };
        assert_eq!(nonpayment("customer.subscription.deleted", "payment_failed"), (true, "canceled".into()));
        assert_eq!(nonpayment("customer.subscription.deleted", "cancellation_requested"), (false, "canceled".into()));
        assert_eq!(nonpayment("customer.subscription.updated", "payment_failed"), (false, "canceled".into()));
    }

    #[test]
    fn events_name_their_customer_or_are_ignored() {
        let refresh = action(&event("customer.updated", json!({"id": "cus_9", "object": "customer"})));
        assert_eq!(refresh, Action::RefreshCard { customer: "cus_9".into() });
        let failed = action(&event("invoice.payment_failed", json!({"id": "in_1", "customer": "cus_9"})));
        assert_eq!(failed, Action::Invoice { customer: "cus_9".into(), failed: true });
        assert_eq!(action(&event("invoice.paid", json!({"id": "in_1"}))), Action::Ignore);
        assert_eq!(action(&event("product.created", json!({"id": "p", "customer": "cus_9"}))), Action::Ignore);
    }
}
