//! The operators' billing page `/admin/billing`: every member with a billing account, their
//! Stripe customer, subscription status, add-ons and monthly total, past-due first.

use crate::error::PageResult;
use crate::extract::CurrentOperator;
use crate::format;
use crate::layout::Chrome;
use crate::state::ConsoleState;
use aqs_control_plane::billing::admin;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;

struct Row {
    email: String,
    customer: String,
    status: String,
    past_due: bool,
    add_ons: String,
    total: String,
}

#[derive(Template, WebTemplate)]
#[template(path = "billing_admin.html")]
pub(crate) struct BillingAdminPage {
    chrome: Chrome,
    rows: Vec<Row>,
}

pub(crate) async fn show(State(state): State<ConsoleState>, op: CurrentOperator) -> PageResult<BillingAdminPage> {
    let members = admin::list(state.control(), &op.operator, None).await?;
    let rows = members
        .into_iter()
        .map(|m| Row {
            past_due: m.subscription_status.as_deref() == Some("past_due") || m.payment_failed,
            status: m.subscription_status.unwrap_or_else(|| "none".into()),
            customer: m.customer_id.unwrap_or_else(|| "—".into()),
            add_ons: m
                .add_ons
                .iter()
                .map(|a| format!("{} ({} MiB)", a.queue, a.payload_size >> 20))
                .collect::<Vec<_>>()
                .join(", "),
            total: format::cents(m.monthly_total_cents),
            email: m.email.unwrap_or_else(|| "(deleted account)".into()),
        })
        .collect();
    Ok(BillingAdminPage { chrome: op.member.chrome("Billing (operators)"), rows })
}
