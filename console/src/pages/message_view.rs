//! One message whole: its state and time, attempts, group id, attributes, idempotency key and the
//! body exactly as sent (a pretty-print toggle re-indents JSON without moving a key). The same
//! page shows a waiting message (Messages tab) and a dead letter (Dead letters tab, with its
//! reason and its replay and purge actions).

use super::load_queue;
use super::messages::state_words;
use crate::body;
use crate::error::{ConsoleError, PageResult};
use crate::extract::{CurrentMember, PagePath};
use crate::format;
use crate::layout::Chrome;
use crate::state::ConsoleState;
use crate::tabs::{QueueNav, Tab};
use aqs_control_plane::TeamRole;
use aqs_control_plane::slug::Slug;
use aqs_core::ids::MessageId;
use aqs_core::receipt::StreamId;
use aqs_core::time::now_ms;
use aqs_engine::{BrowsedMessage, MessageKey, MessageRef, MessageState};
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use serde::Deserialize;

pub(crate) struct Detail {
    pub id: String,
    pub state: &'static str,
    pub state_class: &'static str,
    pub at_label: &'static str,
    pub at_word: &'static str,
    pub at: format::Instant,
    pub published: format::Instant,
    pub attempts: u32,
    pub size: String,
    pub content_type: String,
    pub group_id: Option<String>,
    pub idempotency_key: Option<String>,
    /// Name and value of each attribute, by name.
    pub attributes: Vec<(String, String)>,
    pub reason: Option<String>,
    /// The body as shown: runs of text and control-character markers (`body::marked`).
    pub body_parts: Vec<body::BodyPart>,
    /// How many control characters `body_parts` marks.
    pub controls: usize,
    /// "text", "base64" or "pretty".
    pub body_shown_as: &'static str,
    pub json: bool,
}

#[derive(Template, WebTemplate)]
#[template(path = "message_view.html")]
struct DetailPage {
    chrome: Chrome,
    nav: QueueNav,
    /// `None`: the message is no longer there.
    message: Option<Detail>,
    /// What was looked up and not found (a message id or idempotency key).
    searched: Option<String>,
    /// This page without and with `pretty=1`.
    href: String,
    pretty: bool,
    back: String,
    /// The confirmation page of deleting it (a ready, retrying or delayed message), if it may be.
    delete_href: Option<String>,
}

#[derive(Deserialize)]
pub(crate) struct MessageQuery {
    entry: Option<String>,
    delayed: Option<String>,
    id: Option<String>,
    /// A message id or an idempotency key, from the search box.
    find: Option<String>,
    pretty: Option<String>,
}

/// The longest idempotency key a publish accepts, so the longest worth looking up.
const KEY_MAX_CHARS: usize = 256;

/// A message of the Messages tab: `?entry=<stream id>` or `?delayed=<message id>` (the links of
/// the list), or found wherever it is by what its publisher knows: `?id=<message id>` or
/// `?find=<message id or idempotency key>` (the search box), answered with a redirect to where it
/// is, or a 404 page saying it is not there.
pub(crate) async fn show(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
    Query(query): Query<MessageQuery>,
) -> PageResult<axum::response::Response> {
    let reference = match (&query.entry, &query.delayed, query.id.as_deref().or(query.find.as_deref())) {
        (Some(sid), None, None) => MessageRef::Stream(StreamId::parse(sid).ok_or(ConsoleError::NotFound)?.to_string()),
        (None, Some(id), None) => MessageRef::Delayed(MessageId::parse(id).ok_or(ConsoleError::NotFound)?.to_string()),
        (None, None, Some(text)) => return find(&state, &member, &slug, text.trim()).await,
        _ => return Err(ConsoleError::NotFound),
    };
    render(&state, &member, &slug, reference, &query, Tab::Messages).await
}

/// The message whose id or idempotency key is `text`: a redirect to its page, or the 404 page.
async fn find(
    state: &ConsoleState,
    member: &CurrentMember,
    slug: &Slug,
    text: &str,
) -> PageResult<axum::response::Response> {
    use axum::response::IntoResponse;
    let queue = load_queue(state, member, slug).await?;
    let now = now_ms();
    let mut found = None;
    if let Some(id) = MessageId::parse(text) {
        found = state.engine().find_message(queue.id, MessageKey::Id(&id.to_string()), now).await?;
    }
    if found.is_none() && !text.is_empty() && text.chars().count() <= KEY_MAX_CHARS {
        found = state.engine().find_message(queue.id, MessageKey::IdempotencyKey(text), now).await?;
    }
    if let Some(message) = found {
        return Ok(crate::flash::see_other(&super::messages::detail_href(&slug.to_string(), &message.reference())));
    }
    let page = DetailPage {
        chrome: member.chrome(format!("Message · {}", queue.name)),
        nav: QueueNav::new(&queue, Tab::Messages),
        message: None,
        searched: Some(text.to_owned()),
        href: String::new(),
        pretty: false,
        back: format!("/queues/{slug}/messages"),
        delete_href: None,
    };
    Ok((StatusCode::NOT_FOUND, page).into_response())
}

/// A dead letter: `?id=<message id>`.
pub(crate) async fn show_dead(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
    Query(query): Query<MessageQuery>,
) -> PageResult<axum::response::Response> {
    let id = query.id.as_deref().and_then(MessageId::parse).ok_or(ConsoleError::NotFound)?;
    render(&state, &member, &slug, MessageRef::Dead(id.to_string()), &query, Tab::DeadLetters).await
}

async fn render(
    state: &ConsoleState,
    member: &CurrentMember,
    slug: &Slug,
    reference: MessageRef,
    query: &MessageQuery,
    tab: Tab,
) -> PageResult<axum::response::Response> {
    use axum::response::IntoResponse;
    let queue = load_queue(state, member, slug).await?;
    let pretty = query.pretty.as_deref() == Some("1");
    let found = state.engine().message(queue.id, &reference, now_ms()).await?;
    // Deleting is an admin's; the link is not shown to the other roles (the form refuses them too).
    let deletable = found.as_ref().is_some_and(|m| m.state != MessageState::Dead) && member.may(TeamRole::Admin);
    let mut message = found.map(|m| detail(m, pretty));
    // A viewer reads everything but the body: it never reaches the page.
    if let Some(m) = message.as_mut().filter(|_| member.may_read_bodies().is_err()) {
        m.body_parts.clear();
        m.controls = 0;
    }
    let delete_href = deletable.then(|| super::message_delete::action_href(&slug.to_string(), &reference));
    let href = super::messages::detail_href(&slug.to_string(), &reference);
    let back = match tab {
        Tab::DeadLetters => format!("/queues/{slug}/dead-letters"),
        _ => format!("/queues/{slug}/messages"),
    };
    let nav = QueueNav::new(&queue, tab);
    let status = if message.is_some() { StatusCode::OK } else { StatusCode::NOT_FOUND };
    let page = DetailPage {
        chrome: member.chrome(format!("Message · {}", queue.name)),
        nav,
        message,
        searched: None,
        href,
        pretty,
        back,
        delete_href,
    };
    Ok((status, page).into_response())
}

/// What the page shows of `m`; `pretty` re-indents a JSON body.
pub(crate) fn detail(m: BrowsedMessage, pretty: bool) -> Detail {
    let (state_text, state_class, at_label) = state_words(m.state);
    let exact = body::exact(&m.body);
    let (body, body_shown_as) = match (pretty && exact.json, exact.encoding) {
        (true, _) => (body::pretty_json(&exact.text), "pretty"),
        (false, encoding) => (exact.text, encoding),
    };
    let body_parts = body::marked(&body);
    let controls = body_parts.iter().filter(|p| p.control.is_some()).count();
    Detail {
        body_parts,
        controls,
        state: state_text,
        state_class,
        at_label,
        at_word: super::messages::at_word(m.state),
        at: format::instant(m.at_ms),
        published: format::instant(m.published_at_ms),
        attempts: m.attempts,
        size: format::bytes(m.body_bytes),
        group_id: m.group_id,
        idempotency_key: m.idempotency_key,
        attributes: attributes(&m.attributes),
        reason: (m.state == MessageState::Dead).then_some(m.reason),
        body_shown_as,
        json: exact.json,
        content_type: m.content_type,
        id: m.id,
    }
}

/// The stored attributes object as name/value pairs by name (values that are not
/// strings as JSON).
fn attributes(stored: &str) -> Vec<(String, String)> {
    let Ok(map) = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(stored) else {
        return Vec::new();
    };
    map.into_iter()
        .map(|(name, value)| match value {
            serde_json::Value::String(text) => (name, text),
            other => (name, other.to_string()),
        })
        .collect()
}
