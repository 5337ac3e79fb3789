//! The Messages tab: a peek at the messages waiting to be delivered (id, attempts, published time,
//! content type and a preview of the body), without leasing them or counting an attempt.

use super::load_queue;
use crate::error::PageResult;
use crate::extract::CurrentMember;
use crate::extract::PagePath;
use crate::format;
use crate::layout::Chrome;
use crate::preview::{self, BodyPreview};
use crate::state::ConsoleState;
use crate::tabs::{QueueNav, Tab};
use aqs_control_plane::slug::Slug;
use aqs_core::time::now_ms;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;

/// Messages shown at most.
pub(crate) const PEEK_LIMIT: u32 = 20;

struct Row {
    id: String,
    attempts: u32,
    published: format::Instant,
    content_type: String,
    size: String,
    group_id: Option<String>,
    preview: BodyPreview,
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
    limit: u32,
}

pub(crate) async fn show(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
) -> PageResult<impl axum::response::IntoResponse> {
    let queue = load_queue(&state, &member, &slug).await?;
    let now = now_ms();
    let peeked = state.engine().peek(queue.id, PEEK_LIMIT, now).await?.unwrap_or_default();
    let stats = state.engine().stats(queue.id, now).await?;
    let rows = peeked
        .into_iter()
        .map(|m| Row {
            preview: preview::preview(&m.body, &m.content_type, m.body.len() as u64, preview::MESSAGES_PREVIEW_CHARS),
            size: format::bytes(m.body.len() as u64),
            id: m.id,
            attempts: m.attempts,
            published: format::instant(m.published_at_ms),
            content_type: m.content_type,
            group_id: m.group_id,
        })
        .collect();
    let nav = QueueNav::new(&queue, Tab::Messages);
    let count = |f: fn(&aqs_data_plane::engine::QueueStats) -> u64| {
        stats.as_ref().map_or_else(|| "0".to_owned(), |s| format::count(f(s)))
    };
    Ok(MessagesPage {
        chrome: member.chrome(nav.title(Tab::Messages)),
        nav,
        rows,
        ready: count(|s| s.ready),
        in_flight: count(|s| s.in_flight),
        delayed: count(|s| s.delayed),
        limit: PEEK_LIMIT,
    })
}
