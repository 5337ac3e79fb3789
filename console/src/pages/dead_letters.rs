//! The Dead letters tab: each dead letter's reason, attempt count and a preview of its body, and
//! replaying or purging one or all of them, each after a confirmation page.

use super::load_queue;
use crate::error::{ConsoleError, PageResult};
use crate::extract::PagePath;
use crate::extract::{CurrentMember, FormData};
use crate::flash;
use crate::format;
use crate::layout::Chrome;
use crate::once;
use crate::preview::{self, BodyPreview};
use crate::state::ConsoleState;
use crate::tabs::{QueueNav, Tab};
use aqs_control_plane::slug::Slug;
use aqs_core::ids::MessageId;
use aqs_core::time::now_ms;
use aqs_data_plane::engine::Selection;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Query, State};
use axum::response::Response;
use serde::Deserialize;

/// Dead letters listed at most (the oldest first).
pub(crate) const LIST_LIMIT: u32 = 100;

struct Row {
    id: String,
    reason: String,
    attempts: u32,
    dead_at: format::Instant,
    published: format::Instant,
    content_type: String,
    size: String,
    preview: BodyPreview,
}

#[derive(Template, WebTemplate)]
#[template(path = "dead_letters.html")]
struct DeadLettersPage {
    chrome: Chrome,
    nav: QueueNav,
    rows: Vec<Row>,
    limit: u32,
}

#[derive(Template, WebTemplate)]
#[template(path = "dead_letter_confirm.html")]
struct ConfirmPage {
    chrome: Chrome,
    nav: QueueNav,
    action: &'static str,
    /// "Replay" or "Purge".
    verb: &'static str,
    /// One message, or `None` for all.
    id: Option<String>,
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
) -> PageResult<impl axum::response::IntoResponse> {
    let queue = load_queue(&state, &member, &slug).await?;
    let letters = state.engine().dead_letters(queue.id, LIST_LIMIT).await?.unwrap_or_default();
    let rows = letters
        .into_iter()
        .map(|d| Row {
            preview: preview::dead_letter(&d.body_preview, &d.content_type, d.body_bytes),
            size: format::bytes(d.body_bytes),
            id: d.id,
            reason: d.reason,
            attempts: d.attempts,
            dead_at: format::instant(d.dead_at_ms),
            published: format::instant(d.published_at_ms),
            content_type: d.content_type,
        })
        .collect();
    let nav = QueueNav::new(&queue, Tab::DeadLetters);
    Ok(DeadLettersPage { chrome: member.chrome(nav.title(Tab::DeadLetters)), nav, rows, limit: LIST_LIMIT })
}

#[derive(Deserialize)]
pub(crate) struct Target {
    id: Option<String>,
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
    let queue = load_queue(&state, &member, &slug).await?;
    let stats = state.engine().stats(queue.id, now_ms()).await?;
    let total = stats.map_or(0, |s| s.dead_letters);
    let (verb, consequence) = match action {
        Action::Replay => ("Replay", "It goes back to the queue with its attempts reset and can be delivered again."),
        Action::Purge => ("Purge", "It is deleted for good. This cannot be undone."),
    };
    let question = match &id {
        Some(id) => format!("{verb} dead letter {id}?"),
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
    let queue = load_queue(&state, &member, &slug).await?;
    // Every dead letter only when the form says so (the confirmation's `all`), as the API asks.
    // Checked before the form's one-time id is claimed, so a refused post leaves the form usable.
    let selection = match (&id, form.get("all")) {
        (Some(id), _) => Selection::Ids(vec![id.clone()]),
        (None, "true") => Selection::All,
        (None, _) => return Err(ConsoleError::BadRequest("choose a dead letter, or confirm all of them".into())),
    };
    // A resubmitted "replay all" would replay what died since; it is answered, not done again.
    let claim = match once::claim(&state, &member, &form).await? {
        Ok(claim) => claim,
        Err(replayed) => return Ok(replayed),
    };
    let n = match action {
        Action::Replay => state.engine().replay_dead_letters(queue.id, &selection).await?,
        Action::Purge => state.engine().purge_dead_letters(queue.id, &selection, now_ms()).await?,
    };
    let done = if action == Action::Replay { "Replayed" } else { "Purged" };
    let message = match (n, &id) {
        (0, Some(_)) => "That dead letter is no longer there; it may have been replayed or purged already.".to_owned(),
        (0, None) => "There were no dead letters.".to_owned(),
        (1, _) => format!("{done} 1 dead letter."),
        (n, _) => format!("{done} {} dead letters.", format::count(n)),
    };
    let location = format!("/queues/{slug}/dead-letters");
    claim.done(&state, &location).await?;
    Ok(flash::redirect(&state, member.secure, &location, &message))
}
