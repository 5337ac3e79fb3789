//! The Dead letters tab: a compact table (reason, attempts, dead since, size, preview) paged with a
//! cursor through the whole dead-letter queue, its total, a filter by reason (the dead letters
//! whose reason contains a text), and replaying or purging one, those the filter selects, or all,
//! each after a confirmation page. One dead letter's detail is `message_view`.

use super::load_queue;
use crate::body;
use crate::error::{ConsoleError, PageResult};
use crate::extract::PagePath;
use crate::extract::{CurrentMember, FormData};
use crate::form::{self, Outcome};
use crate::format;
use crate::layout::Chrome;
use crate::once;
use crate::state::ConsoleState;
use crate::tabs::{QueueNav, Tab};
use aqs_control_plane::TeamRole;
use aqs_control_plane::audit::{self, Target as AuditTarget};
use aqs_control_plane::slug::Slug;
use aqs_core::ids::MessageId;
use aqs_core::time::now_ms;
use aqs_engine::{REASON_FILTER_MAX, Selection};
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Query, State};
use axum::response::Response;
use serde::Deserialize;

/// Dead letters on one page (the oldest first).
pub(crate) const PAGE_SIZE: u32 = 50;

struct Row {
    id: String,
    reason: String,
    attempts: u32,
    dead_at: format::Instant,
    size: String,
    preview: String,
}

#[derive(Template, WebTemplate)]
#[template(path = "dead_letters.html")]
struct DeadLettersPage {
    chrome: Chrome,
    nav: QueueNav,
    rows: Vec<Row>,
    page_size: u32,
    /// Every dead letter of the queue.
    total: String,
    /// The filter, and how many dead letters it selects.
    reason: String,
    matching: Option<String>,
    /// `reason=…` for links that keep the filter ("" without one).
    filter_param: String,
    next: Option<String>,
    paged: bool,
    any: bool,
}

#[derive(Deserialize)]
pub(crate) struct ListQuery {
    reason: Option<String>,
    after: Option<String>,
}

/// The reason filter of a query or form: trimmed, at most `REASON_FILTER_MAX` bytes ("" = none).
fn reason_filter(text: Option<&str>) -> PageResult<String> {
    let reason = text.unwrap_or("").trim();
    if reason.len() > REASON_FILTER_MAX {
        return Err(ConsoleError::BadRequest(format!("A reason filter is at most {REASON_FILTER_MAX} bytes.")));
    }
    Ok(reason.to_owned())
}

fn encode(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[derive(Template, WebTemplate)]
#[template(path = "dead_letter_confirm.html")]
struct ConfirmPage {
    chrome: Chrome,
    nav: QueueNav,
    action: &'static str,
    /// "Replay" or "Purge".
    verb: &'static str,
    /// One message, or `None` for all or a filter.
    id: Option<String>,
    /// The reason filter ("" = none).
    reason: String,
    question: String,
    consequence: &'static str,
    form_id: String,
}

/// What a dead-letter action does.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    Replay,
    Purge,
}

impl Action {
    fn parse(text: &str) -> PageResult<Self> {
        match text {
            "replay" => Ok(Self::Replay),
            "purge" => Ok(Self::Purge),
            _ => Err(ConsoleError::NotFound),
        }
    }
}

pub(crate) async fn show(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
    Query(query): Query<ListQuery>,
) -> PageResult<impl axum::response::IntoResponse> {
    let queue = load_queue(&state, &member, &slug).await?;
    let reason = reason_filter(query.reason.as_deref())?;
    let after = query.after.filter(|a| !a.is_empty());
    let page = state.engine().dead_letter_page(queue.id, after.as_deref(), PAGE_SIZE, &reason).await?;
    let (letters, next) = page.map_or((Vec::new(), None), |p| (p.letters, p.next));
    let total = state.engine().count_dead_letters(queue.id, "").await?;
    let matching = match reason.as_str() {
        "" => None,
        text => Some(format::count(state.engine().count_dead_letters(queue.id, text).await?)),
    };
    let filter_param = if reason.is_empty() { String::new() } else { format!("reason={}", encode(&reason)) };
    let reads_bodies = member.may_read_bodies().is_ok();
    let rows = letters
        .into_iter()
        .map(|d| Row {
            // A viewer sees every dead letter but no body: the preview never reaches the page.
            preview: if reads_bodies { body::one_line(&d.body_preview, d.body_bytes) } else { String::new() },
            size: format::bytes(d.body_bytes),
            id: d.id,
            reason: d.reason,
            attempts: d.attempts,
            dead_at: format::instant(d.dead_at_ms),
        })
        .collect();
    let nav = QueueNav::new(&queue, Tab::DeadLetters);
    Ok(DeadLettersPage {
        chrome: member.chrome(nav.title(Tab::DeadLetters)),
        next: next.map(|cursor| match filter_param.as_str() {
            "" => format!("/queues/{slug}/dead-letters?after={cursor}"),
            filter => format!("/queues/{slug}/dead-letters?after={cursor}&{filter}"),
        }),
        paged: after.is_some(),
        any: total > 0,
        total: format::count(total),
        nav,
        rows,
        page_size: PAGE_SIZE,
        reason,
        matching,
        filter_param,
    })
}

#[derive(Deserialize)]
pub(crate) struct Target {
    id: Option<String>,
    reason: Option<String>,
}

/// A message id from a query or form: 32 lowercase hex characters, else the 404 page.
fn message_id(id: Option<&str>) -> PageResult<Option<String>> {
    match id.map(str::trim).filter(|id| !id.is_empty()) {
        None => Ok(None),
        Some(id) => MessageId::parse(id).map(|m| Some(m.to_string())).ok_or(ConsoleError::NotFound),
    }
}

pub(crate) async fn confirm(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath((slug, action)): PagePath<(Slug, String)>,
    Query(target): Query<Target>,
) -> PageResult<impl axum::response::IntoResponse> {
    let action = Action::parse(&action)?;
    let id = message_id(target.id.as_deref())?;
    let reason = reason_filter(target.reason.as_deref())?;
    let queue = load_queue(&state, &member, &slug).await?;
    member.may_change(TeamRole::Admin)?;
    let total = state.engine().count_dead_letters(queue.id, &reason).await?;
    let (verb, consequence) = match action {
        Action::Replay => ("Replay", "It goes back to the queue with its attempts reset and can be delivered again."),
        Action::Purge => ("Purge", "It is deleted for good. This cannot be undone."),
    };
    let question = match &id {
        Some(id) => format!("{verb} dead letter {id}?"),
        None if !reason.is_empty() => format!(
            "{verb} the {} dead letter{} whose reason contains \u{201c}{reason}\u{201d}?",
            format::count(total),
            if total == 1 { "" } else { "s" }
        ),
        None if total == 1 => format!("{verb} the 1 dead letter of this queue?"),
        None => format!("{verb} all {} dead letters of this queue?", format::count(total)),
    };
    let consequence = match (action, id.is_some()) {
        (_, true) => consequence,
        (Action::Replay, false) => "They go back to the queue with their attempts reset and can be delivered again.",
        (Action::Purge, false) => "They are deleted for good. This cannot be undone.",
    };
    let nav = QueueNav::new(&queue, Tab::DeadLetters);
    Ok(ConfirmPage {
        chrome: member.chrome(format!("{verb} · {}", queue.name)),
        nav,
        action: if action == Action::Replay { "replay" } else { "purge" },
        verb,
        id,
        reason,
        question,
        consequence,
        form_id: once::new_id(),
    })
}

pub(crate) async fn act(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath((slug, action)): PagePath<(Slug, String)>,
    form: FormData,
) -> PageResult<Response> {
    let action = Action::parse(&action)?;
    let id = message_id(Some(form.get("id")))?;
    let reason = reason_filter(Some(form.get("reason")))?;
    let queue = load_queue(&state, &member, &slug).await?;
    member.may_change(TeamRole::Admin)?;
    // Every dead letter only when the form says so (the confirmation's `all`), as the API asks.
    // Checked before the form's one-time id is claimed, so a refused post leaves the form usable.
    let selection = match (&id, reason.as_str(), form.get("all")) {
        (Some(id), _, _) => Selection::Ids(vec![id.clone()]),
        (None, "", "true") => Selection::All,
        (None, "", _) => return Err(ConsoleError::BadRequest("choose a dead letter, or confirm all of them".into())),
        (None, text, _) => Selection::ReasonContains(text.to_owned()),
    };
    // A resubmitted "replay all" would replay what died since; it is answered, not done again.
    let act = async {
        let n = match action {
            Action::Replay => state.engine().replay_dead_letters(queue.id, &selection).await?,
            Action::Purge => state.engine().purge_dead_letters(queue.id, &selection, now_ms()).await?,
        };
        if n > 0 {
            let event = if action == Action::Replay { "dead_letters.replayed" } else { "dead_letters.purged" };
            audit::record_after_redis(state.control(), &member.caller, event, AuditTarget::new("queue", queue.id))
                .await?;
        }
        let done = if action == Action::Replay { "Replayed" } else { "Purged" };
        let message = match (n, &id) {
            (0, Some(_)) => {
                "That dead letter is no longer there; it may have been replayed or purged already.".to_owned()
            }
            (0, None) => "There were no dead letters.".to_owned(),
            (1, _) => format!("{done} 1 dead letter."),
            (n, _) => format!("{done} {} dead letters.", format::count(n)),
        };
        let location = match reason.as_str() {
            "" => format!("/queues/{slug}/dead-letters"),
            text => format!("/queues/{slug}/dead-letters?reason={}", encode(text)),
        };
        Ok(Outcome::flash(location, message))
    };
    form::run(&state, &member, &form, act).await
}
