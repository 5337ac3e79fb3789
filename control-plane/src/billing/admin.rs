//! The operators' view: every team with a billing account, their customer, subscription
//! status, add-ons and monthly total, past-due first; and, while the outbox still holds writes
//! for the team, how many tries they took, the last error and when the next try is, so an
//! operator can see why an add-on is pending.

use super::account::AddOn;
use crate::auth::AuthOperator;
use crate::state::ControlPlane;
use crate::teams::TeamId;
use crate::text::refuse_control;
use crate::timefmt;
use aqs_core::ApiResult;
use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct MemberBilling {
    pub team_id: Uuid,
    /// None once the team deleted their account: the row stays for billing, the email does not.
    pub email: Option<String>,
    pub customer_id: Option<String>,
    pub subscription_status: Option<String>,
    pub payment_failed: bool,
    pub add_ons: Vec<AddOn>,
    pub monthly_total_cents: u64,
    /// The team's subscription writes still waiting in the outbox; none when Stripe is in line.
    pub pending_sync: Option<PendingSync>,
}

/// The outbox rows of one team not yet done: they are synced together, so they share their tries.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct PendingSync {
    /// Rows waiting (each a change that needs Stripe, such as an add-on bought or dropped).
    pub rows: u64,
    /// Failed tries so far, of the oldest waiting row.
    pub attempts: u32,
    /// Why the last try failed, as the payment provider or the connection said; none before a
    /// first failure.
    pub last_error: Option<String>,
    /// When the next try is due (a time past means at the outbox's next pass).
    #[serde(serialize_with = "timefmt::rfc3339")]
    pub next_attempt_at: DateTime<Utc>,
}

#[derive(sqlx::FromRow)]
struct Row {
    team_id: Uuid,
    email: Option<String>,
    customer_id: Option<String>,
    subscription_status: Option<String>,
    payment_failed: bool,
    pending_rows: i64,
    attempts: Option<i32>,
    last_error: Option<String>,
    next_attempt_at: Option<DateTime<Utc>>,
}

impl Row {
    fn pending_sync(&self) -> Option<PendingSync> {
        let next_attempt_at = self.next_attempt_at.filter(|_| self.pending_rows > 0)?;
        Some(PendingSync {
            rows: self.pending_rows as u64,
            attempts: self.attempts.unwrap_or(0).max(0) as u32,
            last_error: self.last_error.clone(),
            next_attempt_at,
        })
    }
}

/// `status`: only members whose subscription status is this (e.g. `past_due`).
pub async fn list(cp: &ControlPlane, _operator: &AuthOperator, status: Option<&str>) -> ApiResult<Vec<MemberBilling>> {
    refuse_control("status", status.unwrap_or_default())?;
    // A failed sync writes its error on every waiting row of the team, so the newest row that
    // has one holds the last error.
    let rows = sqlx::query_as::<_, Row>(
        "SELECT b.team_id, m.email, b.customer_id, b.subscription_status,
                b.payment_failed_at IS NOT NULL AS payment_failed,
                o.pending_rows, o.attempts, o.last_error, o.next_attempt_at
         FROM billing_accounts b JOIN members m ON m.id = b.team_id
         CROSS JOIN LATERAL (
             SELECT count(*) AS pending_rows, max(attempts) AS attempts, min(next_attempt_at) AS next_attempt_at,
                    (array_agg(last_error ORDER BY id DESC) FILTER (WHERE last_error IS NOT NULL))[1] AS last_error
             FROM billing_outbox WHERE team_id = b.team_id AND done_at IS NULL
         ) o
         WHERE $1::text IS NULL OR b.subscription_status = $1
         ORDER BY (b.subscription_status = 'past_due') DESC NULLS LAST, b.payment_failed_at IS NULL, m.email",
    )
    .bind(status)
    .fetch_all(cp.db())
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let add_ons = super::add_ons::list(cp, TeamId::from_stored(row.team_id)).await?;
        out.push(MemberBilling {
            monthly_total_cents: add_ons.iter().filter_map(|a| a.monthly_price_cents).sum(),
            pending_sync: row.pending_sync(),
            team_id: row.team_id,
            email: row.email,
            customer_id: row.customer_id,
            subscription_status: row.subscription_status,
            payment_failed: row.payment_failed,
            add_ons,
        });
    }
    Ok(out)
}
