//! The Messages tab: every message of the queue in every state (ready, in flight with its lease
//! deadline, retrying after a nack, delayed with its due time), paged through the whole queue with
//! a cursor, without leasing anything or counting an attempt; and purging the waiting messages
//! after a confirmation. One message's detail is `message_view`, sending and receiving `try_out`.

use super::load_queue;
use crate::body;
use crate::error::PageResult;
use crate::extract::{CurrentMember, FormData, PagePath};
use crate::form::{self, Outcome};
use crate::format;
use crate::layout::Chrome;
use crate::once;
use crate::state::ConsoleState;
use crate::tabs::{QueueNav, Tab};
use aqs_control_plane::TeamRole;
use aqs_control_plane::audit::{self, Target};
use aqs_control_plane::slug::Slug;
use aqs_core::time::now_ms;
use aqs_engine::{BrowsedMessage, MessageRef, MessageState};
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Query, State};
use axum::response::Response;
use serde::Deserialize;

/// Messages on one page.
pub(crate) const PAGE_SIZE: u32 = 50;
/// Bytes of each body read for the list's preview.
const PREVIEW_BYTES: usize = 120;

pub(crate) struct Row {
    pub state: &'static str,
    /// The badge's CSS class: "ready", "in-flight"…
    pub state_class: &'static str,
    /// "Ready", "Lease ends"…: reads before the exact time with `at_word`, and before a relative
    /// one ("5 minutes ago", "in 3 minutes") alone.
    pub at_label: &'static str,
    /// "since", "at".
    pub at_word: &'static str,
    pub at: format::Instant,
    pub id: String,
    /// The detail page's address.
    pub href: String,
    pub attempts: u32,
    pub size: String,
    pub content_type: String,
    pub group_id: Option<String>,
    pub preview: String,
}

/// The state's badge text, its CSS class and what its time means (a label that reads both before
/// an exact time and before "in 5 minutes" or "5 minutes ago").
pub(crate) fn state_words(state: MessageState) -> (&'static str, &'static str, &'static str) {
    match state {
        MessageState::Ready => ("Ready", "ready", "Ready"),
        MessageState::InFlight => ("In flight", "in-flight", "Lease ends"),
        MessageState::Retry => ("Retrying", "retry", "Due again"),
        MessageState::Delayed => ("Delayed", "delayed", "Due"),
        MessageState::Dead => ("Dead", "dead", "Dead"),
    }
}

/// The word between a state's label and its exact time: "Ready since 09:00 UTC", "Due at …".
pub(crate) fn at_word(state: MessageState) -> &'static str {
    match state {
        MessageState::Ready | MessageState::Dead => "since",
        _ => "at",
    }
}

/// The detail page of a message, by where it is.
pub(crate) fn detail_href(slug: &str, reference: &MessageRef) -> String {
    match reference {
        MessageRef::Stream(sid) => format!("/queues/{slug}/messages/view?entry={sid}"),
        MessageRef::Delayed(id) => format!("/queues/{slug}/messages/view?delayed={id}"),
        MessageRef::Dead(id) => format!("/queues/{slug}/dead-letters/view?id={id}"),
    }
}

fn row(slug: &str, m: BrowsedMessage) -> Row {
    let (state, state_class, at_label) = state_words(m.state);
    Row {
        state,
        state_class,
        at_label,
        at_word: at_word(m.state),
        at: format::instant(m.at_ms),
        href: detail_href(slug, &m.reference()),
        attempts: m.attempts,
        size: format::bytes(m.body_bytes),
        preview: body::one_line(&m.body, m.body_bytes),
        id: m.id,
        content_type: m.content_type,
        group_id: m.group_id,
    }
}

#[derive(Template, WebTemplate)]
#[template(path = "messages.html")]
struct MessagesPage {
    chrome: Chrome,
    nav: QueueNav,
    rows: Vec<Row>,
    ready: String,
    in_flight: String,
    delayed: String,
    /// The next page's address, when there is one.
    next: Option<String>,
    /// This is not the first page.
    paged: bool,
    receive_form_id: String,
    page_size: u32,
}

#[derive(Deserialize)]
pub(crate) struct PageQuery {
    after: Option<String>,
}

pub(crate) async fn show(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
    Query(query): Query<PageQuery>,
) -> PageResult<impl axum::response::IntoResponse> {
    let queue = load_queue(&state, &member, &slug).await?;
    let now = now_ms();
    let after = query.after.filter(|a| !a.is_empty());
    let page = state.engine().browse(queue.id, after.as_deref(), PAGE_SIZE, PREVIEW_BYTES, now).await?;
    let stats = state.engine().stats(queue.id, now).await?;
    let slug_text = slug.to_string();
    let (rows, next) = match page {
        Some(page) => (page.messages.into_iter().map(|m| row(&slug_text, m)).collect::<Vec<_>>(), page.next),
        None => (Vec::new(), None),
    };
    // A viewer sees every message but no body: the previews never reach the page.
    let mut rows = rows;
    if member.may_read_bodies().is_err() {
        rows.iter_mut().for_each(|row| row.preview.clear());
    }
    let nav = QueueNav::new(&queue, Tab::Messages);
    let count =
        |f: fn(&aqs_engine::QueueStats) -> u64| stats.as_ref().map_or_else(|| "0".to_owned(), |s| format::count(f(s)));
    Ok(MessagesPage {
        chrome: member.chrome(nav.title(Tab::Messages)),
        next: next.map(|cursor| format!("/queues/{slug}/messages?after={cursor}")),
        paged: after.is_some(),
        nav,
        rows,
        ready: count(|s| s.ready),
        in_flight: count(|s| s.in_flight),
        delayed: count(|s| s.delayed),
        receive_form_id: once::new_id(),
        page_size: PAGE_SIZE,
    })
}

#[derive(Template, WebTemplate)]
#[template(path = "messages_purge.html")]
struct PurgeConfirmPage {
    chrome: Chrome,
    nav: QueueNav,
    ready: String,
    form_id: String,
}

pub(crate) async fn confirm_purge(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
) -> PageResult<impl axum::response::IntoResponse> {
    let queue = load_queue(&state, &member, &slug).await?;
    member.may_change(TeamRole::Admin)?;
    let stats = state.engine().stats(queue.id, now_ms()).await?;
    let nav = QueueNav::new(&queue, Tab::Messages);
    Ok(PurgeConfirmPage {
        chrome: member.chrome(format!("Purge · {}", queue.name)),
        nav,
        ready: format::count(stats.map_or(0, |s| s.ready)),
        form_id: once::new_id(),
    })
}

/// Deletes every waiting (ready) message; messages under a live lease and delayed ones stay.
pub(crate) async fn purge(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
    form: FormData,
) -> PageResult<Response> {
    let queue = load_queue(&state, &member, &slug).await?;
    member.may_change(TeamRole::Admin)?;
    // A resubmitted purge would delete what arrived since: answered, not done again.
    let act = async {
        let purged = state.engine().purge_ready(queue.id, now_ms()).await?;
        if purged > 0 {
            audit::record_after_redis(
                state.control(),
                &member.caller,
                "messages.purged",
                Target::new("queue", queue.id),
            )
            .await?;
        }
        let message = match purged {
            0 => "There were no waiting messages.".to_owned(),
            1 => "Purged 1 waiting message.".to_owned(),
            n => format!("Purged {} waiting messages.", format::count(n)),
        };
        Ok(Outcome::flash(format!("/queues/{slug}/messages"), message))
    };
    form::run(&state, &member, &form, act).await
}
