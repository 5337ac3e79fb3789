//! The Push tab: the queue's push target (handler URL, mode, messages per run, wait, timeout and
//! concurrency) and the form that sets or changes it, the handler URL prefixes an operator
//! authorised for the member (as help beside the URL field), links to rotate the signing secret and
//! to stop push (`push_actions`), and the last delivery outcomes (`push_log`).
//!
//! The control plane checks every rule; its refusals name the field ("handler_url: …") and land
//! beside it. The console only parses numbers, and leaves the batch-only fields out in message
//! mode, where a browser without JavaScript still sends them.

use super::push_actions::shown_secret;
use super::push_log::DeliveryRow;
use super::{INVALID, load_queue};
use crate::error::PageResult;
use crate::extract::PagePath;
use crate::extract::{CurrentMember, FormData};
use crate::fields::{self, FieldErrors};
use crate::form::{self, Outcome};
use crate::format;
use crate::layout::Chrome;
use crate::once;
use crate::state::ConsoleState;
use crate::tabs::{QueueNav, Tab};
use aqs_control_plane::Queue;
use aqs_control_plane::TeamRole;
use aqs_control_plane::push::{self, PushInput, PushTarget};
use aqs_control_plane::slug::Slug;
use aqs_core::ApiError;
use aqs_core::projection::PushMode;
use aqs_core::push as limits;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::response::IntoResponse;

const FIELDS: [&str; 6] = ["handler_url", "mode", "messages_per_run", "wait_seconds", "timeout_seconds", "concurrency"];

/// The push target as it is now.
pub(crate) struct Current {
    handler_url: String,
    batch: bool,
    messages_per_run: Option<u32>,
    wait_seconds: Option<u32>,
    timeout: String,
    concurrency: u32,
    /// Until when the secret replaced by the last rotation still signs.
    previous_until: Option<format::Instant>,
    updated: format::Instant,
}

impl From<&PushTarget> for Current {
    fn from(target: &PushTarget) -> Self {
        Self {
            handler_url: target.handler_url.clone(),
            batch: target.mode == PushMode::Batch,
            messages_per_run: target.messages_per_run,
            wait_seconds: target.wait_seconds,
            timeout: format::duration_secs(u64::from(target.timeout_seconds)),
            concurrency: target.concurrency,
            previous_until: target.previous_secret_expires_at.as_ref().map(format::instant_at),
            updated: format::instant_at(&target.updated_at),
        }
    }
}

/// The form's values, as shown (and as typed, when shown again with errors).
pub(crate) struct TargetForm {
    handler_url: String,
    batch: bool,
    messages_per_run: String,
    wait_seconds: String,
    timeout_seconds: String,
    concurrency: String,
}

impl TargetForm {
    /// The current target, or the defaults for a queue without push.
    fn new(queue: &Queue, current: Option<&PushTarget>) -> Self {
        let default_timeout =
            queue.visibility_timeout_seconds.clamp(limits::TIMEOUT_MIN_SECS, limits::TIMEOUT_MAX_SECS);
        Self {
            handler_url: current.map(|t| t.handler_url.clone()).unwrap_or_default(),
            batch: current.is_some_and(|t| t.mode == PushMode::Batch),
            messages_per_run: current
                .and_then(|t| t.messages_per_run)
                .unwrap_or(limits::MESSAGES_PER_RUN_DEFAULT)
                .to_string(),
            wait_seconds: current.and_then(|t| t.wait_seconds).unwrap_or(limits::WAIT_DEFAULT_SECS).to_string(),
            timeout_seconds: current.map_or(default_timeout, |t| t.timeout_seconds).to_string(),
            concurrency: current.map_or(limits::CONCURRENCY_DEFAULT, |t| t.concurrency).to_string(),
        }
    }

    fn typed(form: &FormData) -> Self {
        let text = |name: &str| form.get(name).trim().to_owned();
        Self {
            handler_url: text("handler_url"),
            batch: form.get("mode").trim() == "batch",
            messages_per_run: text("messages_per_run"),
            wait_seconds: text("wait_seconds"),
            timeout_seconds: text("timeout_seconds"),
            concurrency: text("concurrency"),
        }
    }
}

/// The ranges the hints state (the control plane enforces them).
pub(crate) struct Ranges {
    per_run_min: u32,
    per_run_max: u32,
    wait_max: u32,
    timeout_min: u32,
    timeout_max: u32,
    concurrency_min: u32,
    concurrency_max: u32,
}

const RANGES: Ranges = Ranges {
    per_run_min: limits::MESSAGES_PER_RUN_MIN,
    per_run_max: limits::MESSAGES_PER_RUN_MAX,
    wait_max: limits::WAIT_MAX_SECS,
    timeout_min: limits::TIMEOUT_MIN_SECS,
    timeout_max: limits::TIMEOUT_MAX_SECS,
    concurrency_min: limits::CONCURRENCY_MIN,
    concurrency_max: limits::CONCURRENCY_MAX,
};

#[derive(Template, WebTemplate)]
#[template(path = "push.html")]
pub(crate) struct PushPage {
    chrome: Chrome,
    nav: QueueNav,
    current: Option<Current>,
    form: TargetForm,
    errors: FieldErrors,
    /// The handler URL prefixes an operator authorised for the member.
    prefixes: Vec<String>,
    deliveries: Vec<DeliveryRow>,
    log_len: usize,
    ranges: Ranges,
    form_id: String,
}

/// The queue's target, or `None` when push is off. Call it only after `load_queue`: the control
/// plane answers 404 for another member's queue too, which this would read as "push is off".
pub(crate) async fn target(
    state: &ConsoleState,
    member: &CurrentMember,
    slug: &Slug,
) -> PageResult<Option<PushTarget>> {
    match push::get(state.control(), member.team, slug).await {
        Ok(target) => Ok(Some(target)),
        Err(ApiError::NotFound(_)) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

async fn push_page(
    state: &ConsoleState,
    member: &CurrentMember,
    queue: &Queue,
    form: Option<TargetForm>,
    errors: FieldErrors,
) -> PageResult<PushPage> {
    let control = state.control();
    let current = target(state, member, &queue.slug).await?;
    let prefixes = push::callback_urls(control, member.team).await?;
    let deliveries = push::deliveries(control, member.team, &queue.slug).await?;
    let nav = QueueNav::new(queue, Tab::Push);
    Ok(PushPage {
        chrome: member.chrome(nav.title(Tab::Push)),
        nav,
        form: form.unwrap_or_else(|| TargetForm::new(queue, current.as_ref())),
        current: current.as_ref().map(Current::from),
        errors,
        prefixes,
        deliveries: deliveries.into_iter().map(DeliveryRow::from).collect(),
        log_len: limits::LOG_LEN,
        ranges: RANGES,
        form_id: once::new_id(),
    })
}

pub(crate) async fn show(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
) -> PageResult<PushPage> {
    let queue = load_queue(&state, &member, &slug).await?;
    push_page(&state, &member, &queue, None, FieldErrors::default()).await
}

/// A number field that may be left empty (the control plane's default then applies).
fn optional(errors: &mut FieldErrors, field: &'static str, text: &str) -> Option<u32> {
    if text.trim().is_empty() { None } else { fields::number(errors, field, text, None) }
}

pub(crate) async fn set(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
    form: FormData,
) -> PageResult {
    let queue = load_queue(&state, &member, &slug).await?;
    member.may_change(TeamRole::Admin)?;
    let mut errors = FieldErrors::default();
    let mode = form.get("mode").trim();
    let batch = mode == "batch";
    // Without JavaScript the batch fields are always sent; in message mode they do not apply.
    let messages_per_run =
        if batch { optional(&mut errors, "messages_per_run", form.get("messages_per_run")) } else { None };
    let wait_seconds = if batch { optional(&mut errors, "wait_seconds", form.get("wait_seconds")) } else { None };
    let timeout_seconds = optional(&mut errors, "timeout_seconds", form.get("timeout_seconds"));
    let concurrency = optional(&mut errors, "concurrency", form.get("concurrency"));
    let numbers = [
        ("messages_per_run", messages_per_run),
        ("wait_seconds", wait_seconds),
        ("timeout_seconds", timeout_seconds),
        ("concurrency", concurrency),
    ];
    if errors.is_empty() {
        let input = PushInput {
            handler_url: form.get("handler_url").trim().to_owned(),
            mode: (!mode.is_empty()).then(|| mode.to_owned()),
            messages_per_run,
            wait_seconds,
            timeout_seconds,
            concurrency,
        };
        let act = async {
            match push::set(state.control(), &member.caller, &slug, input).await {
                Ok(set) => match set.signing_secret {
                    Some(secret) => shown_secret(&state, &member, &slug, &secret, false).await,
                    None => {
                        let message = "Push target saved. Deliveries use it within a few seconds.";
                        Ok(Outcome::flash(format!("/queues/{slug}/push"), message))
                    }
                },
                Err(err) => Ok(Outcome::invalid(
                    async {
                        let mut errors = FieldErrors::from_api(err, &FIELDS)?;
                        crate::checks::push(&mut errors, form.get("handler_url"), numbers);
                        push_page(&state, &member, &queue, Some(TargetForm::typed(&form)), errors).await
                    }
                    .await,
                )),
            }
        };
        return form::run(&state, &member, &form, act).await;
    }
    crate::checks::push(&mut errors, form.get("handler_url"), numbers);
    let page = push_page(&state, &member, &queue, Some(TargetForm::typed(&form)), errors).await?;
    Ok((INVALID, page).into_response())
}
