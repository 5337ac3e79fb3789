//! The queue list at `/`: each queue's name, address, depth, today's published and delivered
//! counts and its dead letters. A logged-out visitor is sent to log in.

use crate::error::PageResult;
use crate::extract::CurrentMember;
use crate::format;
use crate::layout::Chrome;
use crate::state::ConsoleState;
use aqs_control_plane::TeamRole;
use aqs_control_plane::queues;
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
    /// The team is below its queue limit.
    can_create: bool,
    limit: i64,
    /// The member's role creates queues (and the team is not suspended).
    may_create: bool,
}

pub(crate) async fn show(State(state): State<ConsoleState>, member: CurrentMember) -> PageResult<QueueListPage> {
    let (limit, at_limit) = super::create_queue::queue_limit(&state, &member).await?;
    let list = queues::list(state.control(), member.team).await?;
    let now = now_ms();
    let mut rows = Vec::with_capacity(list.len());
    // At most ten queues per team (unless an operator raised it): one stats script each, in turn, is cheap enough.
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
        can_create: !at_limit,
        limit,
        may_create: member.may(TeamRole::Admin),
        rows,
    })
}
