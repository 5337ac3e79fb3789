//! The Billing & metrics page `/billing`: the card on file (Stripe Checkout to add one, the
//! billing portal to manage it), add-ons by queue with their monthly price and the total, this
//! month's usage per queue labelled as estimates, and the budget with its alert banner. With
//! billing off it says so. Every Stripe step is a form post that redirects to Stripe. Every form
//! carries a one-time id (`once`): a replay comes back here and is not sent again.

use super::INVALID;
use crate::error::PageResult;
use crate::extract::{CurrentMember, FormData};
use crate::fields::{self, FieldErrors};
use crate::flash;
use crate::form::{self, Outcome};
use crate::format;
use crate::layout::Chrome;
use crate::once;
use crate::state::ConsoleState;
use aqs_control_plane::TeamRole;
use aqs_control_plane::billing::account::{self, BudgetInput, Overview};
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

const PATH: &str = "/billing";

struct AddOnRow {
    queue: String,
    name: String,
    mib: u64,
    price: String,
    pending: bool,
}

struct UsageRow {
    queue: String,
    name: String,
    operations: String,
    stored: String,
}

#[derive(Template, WebTemplate)]
#[template(path = "billing.html")]
pub(crate) struct BillingPage {
    chrome: Chrome,
    enabled: bool,
    notice: Option<String>,
    setup_done: bool,
    card: Option<String>,
    subscription_status: Option<String>,
    add_ons: Vec<AddOnRow>,
    total: String,
    usage: Vec<UsageRow>,
    budget_alert: bool,
    limit_dollars: String,
    alert_percent: String,
    errors: FieldErrors,
}

impl BillingPage {
    /// A fresh one-time id for each form on the page.
    fn form_id(&self) -> String {
        once::new_id()
    }
}

#[derive(Deserialize)]
pub(crate) struct Back {
    #[serde(default)]
    setup: String,
}

fn page(member: &CurrentMember, overview: Overview) -> BillingPage {
    BillingPage {
        chrome: member.chrome("Billing & metrics"),
        enabled: overview.enabled,
        notice: overview.notice,
        setup_done: false,
        card: overview.payment_method.map(|c| format!("{} ending in {}", c.brand, c.last4)),
        subscription_status: overview.subscription_status,
        add_ons: overview
            .add_ons
            .into_iter()
            .map(|a| AddOnRow {
                queue: a.queue,
                name: a.queue_name,
                mib: a.payload_size >> 20,
                price: a.monthly_price_cents.map(format::cents).unwrap_or_else(|| "unavailable".into()),
                pending: a.pending,
            })
            .collect(),
        total: format::cents(overview.monthly_total_cents),
        usage: overview
            .usage
            .into_iter()
            .map(|u| UsageRow {
                queue: u.queue,
                name: u.queue_name,
                operations: format::count(u.message_operations),
                stored: format::bytes(u.stored_bytes),
            })
            .collect(),
        budget_alert: overview.budget.alert,
        limit_dollars: overview.budget.monthly_limit_cents.map(|c| (c / 100).to_string()).unwrap_or_default(),
        alert_percent: overview.budget.alert_percent.map(|p| p.to_string()).unwrap_or_else(|| "80".into()),
        errors: FieldErrors::default(),
    }
}

pub(crate) async fn show(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    Query(back): Query<Back>,
) -> PageResult<BillingPage> {
    let mut page = page(&member, account::overview(state.control(), member.team).await?);
    page.setup_done = back.setup == "done";
    Ok(page)
}

/// To Stripe Checkout (setup mode), which comes back to this page.
pub(crate) async fn setup(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    form: FormData,
) -> PageResult<Response> {
    member.may_change(TeamRole::Owner)?;
    let act = async { Ok(to_stripe(account::setup_url(state.control(), member.team).await)) };
    form::run(&state, &member, &form, act).await
}

/// To Stripe's billing portal (invoices, card).
pub(crate) async fn portal(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    form: FormData,
) -> PageResult<Response> {
    member.may_change(TeamRole::Owner)?;
    let act = async { Ok(to_stripe(account::portal_url(state.control(), member.team).await)) };
    form::run(&state, &member, &form, act).await
}

/// Sends the browser to Stripe; a replay of the form comes back to this page instead.
fn to_stripe(url: aqs_core::ApiResult<String>) -> Outcome {
    match url {
        Ok(url) => Outcome::answer(PATH, flash::see_other(&url)),
        Err(err) => Outcome::refused(err),
    }
}

pub(crate) async fn budget(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    form: FormData,
) -> PageResult<Response> {
    member.may_change(TeamRole::Owner)?;
    let mut errors = FieldErrors::default();
    let dollars = fields::number::<u64>(&mut errors, "monthly_limit", form.get("monthly_limit_dollars"), None);
    let percent = fields::number::<u32>(&mut errors, "alert_percent", form.get("alert_percent"), None);
    if let (Some(dollars), Some(alert_percent)) = (dollars, percent) {
        let input = BudgetInput { monthly_limit_cents: dollars.saturating_mul(100), alert_percent };
        let act = async {
            match account::set_budget(state.control(), &member.caller, input).await {
                Ok(_) => Ok(Outcome::flash(PATH, "Budget saved.")),
                Err(err) => Ok(Outcome::invalid(
                    async {
                        let mut errors = FieldErrors::from_api(err, &["monthly_limit_cents", "alert_percent"])?;
                        // The control plane's error on the cents is the one beside the dollars.
                        let dollars = errors.get("monthly_limit_cents").is_none().then_some(dollars);
                        crate::checks::budget(&mut errors, dollars, Some(alert_percent));
                        typed_page(&state, &member, &form, errors).await
                    }
                    .await,
                )),
            }
        };
        return form::run(&state, &member, &form, act).await;
    }
    crate::checks::budget(&mut errors, dollars, percent);
    Ok((INVALID, typed_page(&state, &member, &form, errors).await?).into_response())
}

/// The budget form again as it was sent, with its errors.
async fn typed_page(
    state: &ConsoleState,
    member: &CurrentMember,
    form: &FormData,
    errors: FieldErrors,
) -> PageResult<BillingPage> {
    let mut page = page(member, account::overview(state.control(), member.team).await?);
    page.limit_dollars = form.get("monthly_limit_dollars").trim().to_owned();
    page.alert_percent = form.get("alert_percent").trim().to_owned();
    page.errors = errors;
    Ok(page)
}
