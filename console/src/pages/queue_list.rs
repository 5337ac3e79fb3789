//! The queue list at `/`: each queue's name, address, depth, today's published and delivered
//! counts and its dead letters. A logged-out visitor is sent to log in.

use crate::error::PageResult;
use crate::extract::CurrentMember;
use crate::format;
use crate::layout::Chrome;
use crate::state::ConsoleState;
use aqs_control_plane::queues;
use aqs_core::limits::QUEUES_PER_MEMBER;
use aqs_core::time::now_ms;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;

struct Row {
    name: String,
    slug: String,
    address: String,
    paused: bool,
    /// `None` when the statistics cannot be read (the queue's Redis state is missing).
    stats: Option<RowStats>,
}

struct RowStats {
    depth: String,
    published_today: String,
    delivered_today: String,
    dead_letters: String,
    has_dead_letters: bool,
}

#[derive(Template, WebTemplate)]
#[template(path = "queue_list.html")]
pub(crate) struct QueueListPage {
    chrome: Chrome,
    rows: Vec<Row>,
    can_create: bool,
    limit: i64,
}

pub(crate) async fn show(State(state): State<ConsoleState>, member: CurrentMember) -> PageResult<QueueListPage> {
    let list = queues::list(state.control(), member.team).await?;
    let now = now_ms();
    let mut rows = Vec::with_capacity(list.len());
    // At most ten queues per member: one stats script each, in turn, is cheap enough.
    for queue in list {
        let stats = state.engine().stats(queue.id, now).await?.map(|s| RowStats {
            depth: format::count(s.total),
            published_today: format::count(s.published_today),
            delivered_today: format::count(s.delivered_today),
            dead_letters: format::count(s.dead_letters),
            has_dead_letters: s.dead_letters > 0,
        });
        rows.push(Row {
            name: queue.name,
            slug: queue.slug.to_string(),
            address: queue.address,
            paused: queue.paused,
            stats,
        });
    }
    Ok(QueueListPage {
        chrome: member.chrome("Your queues"),
        can_create: (rows.len() as i64) < QUEUES_PER_MEMBER,
        limit: QUEUES_PER_MEMBER,
        rows,
    })
}
