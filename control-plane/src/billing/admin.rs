//! The operators' view: every member with a billing account, their customer, subscription
//! status, add-ons and monthly total, past-due first.

use super::account::AddOn;
use crate::auth::AuthOperator;
use crate::members::MemberId;
use crate::state::ControlPlane;
use crate::text::refuse_control;
use aqs_core::ApiResult;
use serde::Serialize;
use uuid::Uuid;

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct MemberBilling {
    pub member_id: Uuid,
    /// None once the member deleted their account: the row stays for billing, the email does not.
    pub email: Option<String>,
    pub customer_id: Option<String>,
    pub subscription_status: Option<String>,
    pub payment_failed: bool,
    pub add_ons: Vec<AddOn>,
    pub monthly_total_cents: u64,
}

/// `status`: only members whose subscription status is this (e.g. `past_due`).
pub async fn list(cp: &ControlPlane, _operator: &AuthOperator, status: Option<&str>) -> ApiResult<Vec<MemberBilling>> {
    refuse_control("status", status.unwrap_or_default())?;
    #[derive(sqlx::FromRow)]
    struct Row {
        member_id: Uuid,
        email: Option<String>,
        customer_id: Option<String>,
        subscription_status: Option<String>,
        payment_failed: bool,
    }
    let rows = sqlx::query_as::<_, Row>(
        "SELECT b.member_id, m.email, b.customer_id, b.subscription_status,
                b.payment_failed_at IS NOT NULL AS payment_failed
         FROM billing_accounts b JOIN members m ON m.id = b.member_id
         WHERE $1::text IS NULL OR b.subscription_status = $1
         ORDER BY (b.subscription_status = 'past_due') DESC NULLS LAST, b.payment_failed_at IS NULL, m.email",
    )
    .bind(status)
    .fetch_all(cp.db())
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let add_ons = super::add_ons::list(cp, MemberId::from_stored(row.member_id)).await?;
        out.push(MemberBilling {
            monthly_total_cents: add_ons.iter().filter_map(|a| a.monthly_price_cents).sum(),
            member_id: row.member_id,
            email: row.email,
            customer_id: row.customer_id,
            subscription_status: row.subscription_status,
            payment_failed: row.payment_failed,
            add_ons,
        });
    }
    Ok(out)
}
