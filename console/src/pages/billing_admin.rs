//! The operators' billing page `/admin/billing`: every member with a billing account, their
//! Stripe customer, subscription status, add-ons and monthly total, past-due first, and the
//! Stripe writes still waiting in the outbox with their tries, last error and next try.

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
    pending: Option<Pending>,
}

/// The outbox's writes still waiting for the member, as the page words them.
struct Pending {
    summary: String,
    next: format::Instant,
    last_error: Option<String>,
}

impl From<admin::PendingSync> for Pending {
    fn from(p: admin::PendingSync) -> Self {
        let changes = if p.rows == 1 { "1 change".to_owned() } else { format!("{} changes", p.rows) };
        let tries = match p.attempts {
            0 => "not tried yet".to_owned(),
            1 => "1 failed try".to_owned(),
            n => format!("{n} failed tries"),
        };
        Self {
            summary: format!("{changes} waiting, {tries}"),
            next: format::instant(p.next_attempt_at.timestamp_millis().max(0) as u64),
            last_error: p.last_error,
        }
    }
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
            pending: m.pending_sync.map(Pending::from),
            email: m.email.unwrap_or_else(|| "(deleted account)".into()),
        })
        .collect();
    Ok(BillingAdminPage { chrome: op.member.chrome("Billing (operators)"), rows })
}
