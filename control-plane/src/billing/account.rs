//! A team's billing: their Stripe customer, the card on file, the budget, and the overview that
//! `GET /api/v1/billing` and the console's Billing & metrics page show.

use super::{Billing, NOT_CONFIGURED, usage};
use crate::state::ControlPlane;
use crate::teams::{Caller, TeamId};
use aqs_core::{ApiError, ApiResult};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Budgets are kept in cents; a million dollars a month is more than any team of ours needs.
pub const BUDGET_MAX_CENTS: u64 = 100_000_000;

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Overview {
    pub enabled: bool,
    pub payment_method: Option<Card>,
    pub subscription_status: Option<String>,
    pub add_ons: Vec<AddOn>,
    pub monthly_total_cents: u64,
    /// This month's message operations and stored bytes per queue: estimates, not charged.
    pub usage: Vec<usage::QueueUsage>,
    pub budget: Budget,
    /// What the team should know first: billing off, a failed payment, a cancellation.
    pub notice: Option<String>,
    pub payment_failed: bool,
    pub cancelled_for_nonpayment: bool,
}

#[derive(Clone, Debug, Serialize, PartialEq, Eq, utoipa::ToSchema)]
pub struct Card {
    pub brand: String,
    pub last4: String,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct AddOn {
    /// The queue's slug.
    pub queue: String,
    pub queue_name: String,
    pub payload_size: u64,
    /// `None` while Stripe cannot be asked for the price.
    pub monthly_price_cents: Option<u64>,
    /// Bought, but Stripe does not have the item yet: the queue still takes its old size.
    pub pending: bool,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Budget {
    pub monthly_limit_cents: Option<u64>,
    pub alert_percent: Option<u32>,
    /// The month's add-on spend reached the alert threshold.
    pub alert: bool,
}

/// `PUT /api/v1/billing/budget`.
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetInput {
    pub monthly_limit_cents: u64,
    pub alert_percent: u32,
}

#[derive(sqlx::FromRow, Default)]
pub(crate) struct AccountRow {
    pub customer_id: Option<String>,
    pub payment_method_id: Option<String>,
    pub payment_method_brand: Option<String>,
    pub payment_method_last4: Option<String>,
    pub subscription_status: Option<String>,
    pub payment_failed_at: Option<DateTime<Utc>>,
    pub cancelled_for_nonpayment_at: Option<DateTime<Utc>>,
    pub monthly_limit_cents: Option<i64>,
    pub alert_percent: Option<i32>,
}

pub(crate) const ACCOUNT_COLUMNS: &str = "customer_id, payment_method_id, payment_method_brand, payment_method_last4, \
     subscription_status, payment_failed_at, cancelled_for_nonpayment_at, monthly_limit_cents, \
     alert_percent";

pub(crate) async fn find(cp: &ControlPlane, team: TeamId) -> ApiResult<AccountRow> {
    let row =
        sqlx::query_as::<_, AccountRow>(&format!("SELECT {ACCOUNT_COLUMNS} FROM billing_accounts WHERE team_id = $1"))
            .bind(team.as_uuid())
            .fetch_optional(cp.db())
            .await?;
    Ok(row.unwrap_or_default())
}

impl AccountRow {
    pub(crate) fn card(&self) -> Option<Card> {
        match (&self.payment_method_id, &self.payment_method_brand, &self.payment_method_last4) {
            (Some(_), Some(brand), Some(last4)) => Some(Card { brand: brand.clone(), last4: last4.clone() }),
            _ => None,
        }
    }
}

/// Billing on, or a 409 that says it is not configured.
pub(crate) fn required(cp: &ControlPlane) -> ApiResult<&Billing> {
    cp.billing().ok_or_else(|| ApiError::Conflict(NOT_CONFIGURED.into()))
}

pub async fn overview(cp: &ControlPlane, team: TeamId) -> ApiResult<Overview> {
    let account = find(cp, team).await?;
    let add_ons = super::add_ons::list(cp, team).await?;
    let monthly_total_cents = add_ons.iter().filter_map(|a| a.monthly_price_cents).sum();
    let usage = usage::this_month(cp, team).await?;
    let limit = account.monthly_limit_cents.map(|c| c as u64);
    let percent = account.alert_percent.map(|p| p as u32);
    let alert = match (limit, percent) {
        (Some(limit), Some(percent)) => monthly_total_cents * 100 >= limit * u64::from(percent),
        _ => false,
    };
    let payment_failed = account.payment_failed_at.is_some();
    let cancelled = account.cancelled_for_nonpayment_at.is_some();
    let notice = if cp.billing().is_none() {
        Some(NOT_CONFIGURED.to_owned())
    } else if cancelled {
        Some(
            "Your subscription was cancelled because a payment failed: your queues are back to 1 MiB for new \
             messages. Add a payment method and choose the add-on again."
                .to_owned(),
        )
    } else if payment_failed {
        Some("Your last payment failed: update your card in the billing portal to keep your add-ons.".to_owned())
    } else {
        None
    };
    Ok(Overview {
        enabled: cp.billing().is_some(),
        payment_method: account.card(),
        subscription_status: account.subscription_status.clone(),
        add_ons,
        monthly_total_cents,
        usage,
        budget: Budget { monthly_limit_cents: limit, alert_percent: percent, alert },
        notice,
        payment_failed,
        cancelled_for_nonpayment: cancelled,
    })
}

/// The team's Stripe customer, created on first need. The idempotency key names the team, so
/// two first requests at once make one customer.
pub(crate) async fn ensure_customer(cp: &ControlPlane, billing: &Billing, team: TeamId) -> ApiResult<String> {
    if let Some(customer) = find(cp, team).await?.customer_id {
        return Ok(customer);
    }
    let email = crate::teams::store::billing_email(cp.db(), team)
        .await?
        .ok_or_else(|| ApiError::Unauthorized("this team no longer has an owner".into()))?;
    let created = billing.stripe().create_customer(team, &email).await.map_err(unavailable)?;
    Ok(sqlx::query_scalar::<_, String>(
        "INSERT INTO billing_accounts (team_id, customer_id) VALUES ($1, $2)
         ON CONFLICT (team_id) DO UPDATE
             SET customer_id = COALESCE(billing_accounts.customer_id, EXCLUDED.customer_id), updated_at = now()
         RETURNING customer_id",
    )
    .bind(team.as_uuid())
    .bind(&created)
    .fetch_one(cp.db())
    .await?)
}

/// A Stripe Checkout session in setup mode; back to the console's billing page either way.
pub async fn setup_url(cp: &ControlPlane, team: TeamId) -> ApiResult<String> {
    let billing = required(cp)?;
    let customer = ensure_customer(cp, billing, team).await?;
    let back = format!("{}/billing", cp.public_url());
    billing
        .stripe()
        .setup_session(&customer, &format!("{back}?setup=done"), &format!("{back}?setup=cancelled"))
        .await
        .map_err(unavailable)
}

/// A Stripe billing portal session (invoices, card).
pub async fn portal_url(cp: &ControlPlane, team: TeamId) -> ApiResult<String> {
    let billing = required(cp)?;
    let customer = ensure_customer(cp, billing, team).await?;
    billing.stripe().portal_session(&customer, &format!("{}/billing", cp.public_url())).await.map_err(unavailable)
}

pub async fn set_budget(cp: &ControlPlane, caller: &Caller, input: BudgetInput) -> ApiResult<Budget> {
    let team = caller.team;
    if input.monthly_limit_cents > BUDGET_MAX_CENTS {
        return Err(ApiError::field("monthly_limit_cents", format!("must be between 0 and {BUDGET_MAX_CENTS}")));
    }
    if !(1..=100).contains(&input.alert_percent) {
        return Err(ApiError::field("alert_percent", "must be between 1 and 100"));
    }
    let mut tx = cp.db().begin().await?;
    sqlx::query(
        "INSERT INTO billing_accounts (team_id, monthly_limit_cents, alert_percent) VALUES ($1, $2, $3)
         ON CONFLICT (team_id) DO UPDATE
             SET monthly_limit_cents = EXCLUDED.monthly_limit_cents, alert_percent = EXCLUDED.alert_percent,
                 updated_at = now()",
    )
    .bind(team.as_uuid())
    .bind(input.monthly_limit_cents as i64)
    .bind(input.alert_percent as i32)
    .execute(&mut *tx)
    .await?;
    crate::audit::record(&mut tx, caller, "billing.budget_changed", crate::audit::Target::new("billing", team)).await?;
    tx.commit().await?;
    Ok(overview(cp, team).await?.budget)
}

/// Stripe could not be reached or refused: logged here, a 503 for the caller.
pub(crate) fn unavailable(err: anyhow::Error) -> ApiError {
    tracing::warn!(error = %format!("{err:#}"), "stripe request failed");
    ApiError::unavailable("billing (Stripe)")
}

/// The monthly price in cents of each paid payload size (`None` while Stripe cannot be asked),
/// for the console's Settings tab; empty when billing is off.
pub async fn add_on_prices(cp: &ControlPlane) -> Vec<(u64, Option<u64>)> {
    let Some(billing) = cp.billing() else { return Vec::new() };
    let mut prices = Vec::new();
    for size in [10 * aqs_core::limits::MIB, 50 * aqs_core::limits::MIB] {
        let cents = match billing.price_for(size) {
            Some(price) => billing.stripe().price_cents(price).await.ok(),
            None => None,
        };
        prices.push((size, cents));
    }
    prices
}
