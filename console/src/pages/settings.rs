//! The Settings tab: visibility timeout, maximum attempts, payload size and storage limit; pause
//! and resume; and deleting the queue, confirmed by typing its name.

use super::create_queue::{PayloadOption, payload_options};
use super::{INVALID, load_queue};
use crate::error::PageResult;
use crate::extract::PagePath;
use crate::extract::{CurrentMember, FormData};
use crate::fields::{self, FieldErrors};
use crate::flash;
use crate::form::{self, Outcome};
use crate::layout::Chrome;
use crate::once;
use crate::state::ConsoleState;
use crate::tabs::{QueueNav, Tab};
use aqs_control_plane::TeamRole;
use aqs_control_plane::billing::account;
use aqs_control_plane::slug::Slug;
use aqs_control_plane::{Queue, QueueChanges, queues};
use aqs_core::ApiError;
use aqs_core::limits::{MAX_ATTEMPTS_MAX, MIB, STORAGE_MAX, STORAGE_MIN, VISIBILITY_MAX_SECS};
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::response::{IntoResponse, Response};

const FIELDS: [&str; 5] = ["name", "visibility_timeout_seconds", "max_attempts", "payload_size", "storage_limit"];

#[derive(Template, WebTemplate)]
#[template(path = "settings.html")]
pub(crate) struct SettingsPage {
    chrome: Chrome,
    nav: QueueNav,
    visibility: String,
    attempts: String,
    payload_options: Vec<PayloadOption>,
    storage_mib: String,
    /// The queue's display name; renaming keeps its slug (and so its address).
    name: String,
    confirm_name: String,
    /// One-time ids (see `once`): the settings form's, and the pause or resume form's.
    form_id: String,
    state_form_id: String,
    errors: FieldErrors,
    visibility_max: u32,
    attempts_max: u32,
    storage_min_mib: u64,
    storage_max_mib: u64,
    /// Monthly prices of the paid sizes; empty when billing is off (then they are free).
    prices: Vec<AddOnPrice>,
}

pub(crate) struct AddOnPrice {
    mib: u64,
    price: String,
}

async fn prices(state: &ConsoleState) -> Vec<AddOnPrice> {
    account::add_on_prices(state.control())
        .await
        .into_iter()
        .map(|(size, cents)| AddOnPrice {
            mib: size / MIB,
            price: cents.map(crate::format::cents).unwrap_or_else(|| "price unavailable".into()),
        })
        .collect()
}

impl SettingsPage {
    fn new(member: &CurrentMember, queue: &Queue) -> Self {
        let nav = QueueNav::new(queue, Tab::Settings);
        Self {
            chrome: member.chrome(nav.title(Tab::Settings)),
            nav,
            visibility: queue.visibility_timeout_seconds.to_string(),
            attempts: queue.max_attempts.to_string(),
            payload_options: payload_options(queue.payload_size),
            storage_mib: (queue.storage_limit / MIB).to_string(),
            name: queue.name.clone(),
            confirm_name: String::new(),
            form_id: once::new_id(),
            state_form_id: once::new_id(),
            errors: FieldErrors::default(),
            visibility_max: VISIBILITY_MAX_SECS,
            attempts_max: MAX_ATTEMPTS_MAX,
            storage_min_mib: STORAGE_MIN / MIB,
            storage_max_mib: STORAGE_MAX / MIB,
            prices: Vec::new(),
        }
    }
}

pub(crate) async fn show(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
) -> PageResult<SettingsPage> {
    let queue = load_queue(&state, &member, &slug).await?;
    let mut page = SettingsPage::new(&member, &queue);
    page.prices = prices(&state).await;
    Ok(page)
}

pub(crate) async fn update(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
    form: FormData,
) -> PageResult {
    let queue = load_queue(&state, &member, &slug).await?;
    member.may_change(TeamRole::Admin)?;
    let mut errors = FieldErrors::default();
    let visibility =
        fields::number::<u32>(&mut errors, "visibility_timeout_seconds", form.get("visibility_timeout_seconds"), None);
    let attempts = fields::number::<u32>(&mut errors, "max_attempts", form.get("max_attempts"), None);
    let payload = fields::number::<u64>(&mut errors, "payload_size", form.get("payload_size"), None);
    let storage_mib = fields::number::<u64>(&mut errors, "storage_limit", form.get("storage_limit_mib"), None);
    // The storage limit is entered in MiB; checking it here keeps the message in MiB as well.
    let (min, max) = (STORAGE_MIN / MIB, STORAGE_MAX / MIB);
    if let Some(mib) = storage_mib
        && !(min..=max).contains(&mib)
    {
        errors.add("storage_limit", format!("must be between {min} and {} MiB", crate::format::count(max)));
    }
    // Every field's range at once, beside each field, rather than the control plane's first refusal.
    // A form without the field leaves the name as it is; a blank one is an error.
    let name = form.has("name").then(|| form.get("name").trim().to_owned());
    if name.as_deref() == Some("") {
        errors.add("name", "give the queue a name");
    }
    let checked = QueueChanges {
        name: name.clone().filter(|n| !n.is_empty()),
        visibility_timeout_seconds: visibility,
        max_attempts: attempts,
        payload_size: payload,
        storage_limit: None,
    };
    errors.add_api(checked.problems(), &FIELDS)?;
    let billed = state.control().billing().is_some();
    if billed && payload.is_some_and(|size| size > queue.payload_size) && form.get("confirm_add_on") != "yes" {
        errors.add("payload_size", "tick the box to confirm the monthly add-on price".to_owned());
    }
    if errors.is_empty() {
        // A resubmitted old form would undo a later change: it is answered, not applied again.
        let changes = QueueChanges {
            name,
            visibility_timeout_seconds: visibility,
            max_attempts: attempts,
            payload_size: payload,
            storage_limit: storage_mib.map(|mib| mib * MIB),
        };
        let act = async {
            let err = match queues::update(state.control(), &member.caller, &slug, changes).await {
                Ok(saved) => {
                    let message = if payload.is_some_and(|size| size > saved.payload_size) {
                        "Settings saved. The add-on is waiting for Stripe: the larger size applies as soon as it is confirmed."
                    } else {
                        "Settings saved."
                    };
                    return Ok(Outcome::flash(format!("/queues/{slug}/settings"), message));
                }
                Err(err) => err,
            };
            let mut errors = FieldErrors::default();
            match err {
                // No card on file: through Stripe Checkout, which brings the member back to Billing.
                ApiError::PaymentRequired { setup_url, .. } => {
                    return Ok(Outcome::NotDone(Ok(flash::see_other(&setup_url))));
                }
                ApiError::OversizedMessagesStored { message, .. } => errors.add("payload_size", message),
                err => match FieldErrors::from_api(err, &FIELDS) {
                    Ok(found) => errors = found,
                    Err(err) => return Ok(Outcome::refused(err)),
                },
            }
            Ok(Outcome::invalid(Ok(typed_page(&state, &member, &queue, &form, payload, errors).await)))
        };
        return form::run(&state, &member, &form, act).await;
    }
    Ok((INVALID, typed_page(&state, &member, &queue, &form, payload, errors).await).into_response())
}

/// The settings form again as it was sent, with its errors.
async fn typed_page(
    state: &ConsoleState,
    member: &CurrentMember,
    queue: &Queue,
    form: &FormData,
    payload: Option<u64>,
    errors: FieldErrors,
) -> SettingsPage {
    let mut page = SettingsPage::new(member, queue);
    page.visibility = form.get("visibility_timeout_seconds").trim().to_owned();
    page.attempts = form.get("max_attempts").trim().to_owned();
    page.payload_options = payload_options(payload.unwrap_or(queue.payload_size));
    page.storage_mib = form.get("storage_limit_mib").trim().to_owned();
    if form.has("name") {
        page.name = form.get("name").trim().to_owned();
    }
    page.errors = errors;
    page.prices = prices(state).await;
    page
}

pub(crate) async fn pause(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
    form: FormData,
) -> PageResult<Response> {
    load_queue(&state, &member, &slug).await?;
    member.may_change(TeamRole::Admin)?;
    let act = async {
        queues::pause(state.control(), &member.caller, &slug).await?;
        let message = "Queue paused: publishes and deliveries are refused until you resume it.";
        Ok(Outcome::flash(format!("/queues/{slug}/settings"), message))
    };
    form::run(&state, &member, &form, act).await
}

pub(crate) async fn resume(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
    form: FormData,
) -> PageResult<Response> {
    load_queue(&state, &member, &slug).await?;
    member.may_change(TeamRole::Admin)?;
    let act = async {
        queues::resume(state.control(), &member.caller, &slug).await?;
        Ok(Outcome::flash(format!("/queues/{slug}/settings"), "Queue resumed."))
    };
    form::run(&state, &member, &form, act).await
}

pub(crate) async fn delete(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
    form: FormData,
) -> PageResult {
    let queue = load_queue(&state, &member, &slug).await?;
    member.may_change(TeamRole::Admin)?;
    let typed = form.get("confirm_name").trim();
    if typed != queue.name {
        let mut page = SettingsPage::new(&member, &queue);
        page.confirm_name = typed.to_owned();
        page.errors.add(
            "confirm_name",
            if typed.is_empty() {
                "type the queue's name to confirm".to_owned()
            } else {
                format!("that is not this queue's name; type {} exactly", queue.name)
            },
        );
        return Ok((INVALID, page).into_response());
    }
    queues::delete(state.control(), &member.caller, &slug).await?;
    let message = format!("Queue “{}” deleted, with its messages and tokens.", queue.name);
    Ok(flash::redirect(&state, member.secure, "/", &message))
}
