//! The Overview tab: the shared address, the depth split into ready, in flight and delayed, the
//! stored bytes against the storage limit, the oldest message's age, today's counts and the dead
//! letters, the 14-day charts (counts; age and latency) and the last hour's (`activity.rs`). The
//! live part, the charts included (so they never disagree with the cards beside them), refreshes
//! every few seconds: a meta refresh without JavaScript, a fetch of `/queues/{slug}/live` (just
//! that fragment) with it.

use super::activity::Minutes;
use super::load_queue;
use crate::chart::{self, Chart};
use crate::error::{ConsoleError, PageResult};
use crate::extract::CurrentMember;
use crate::extract::PagePath;
use crate::format;
use crate::layout::Chrome;
use crate::line_chart::LineChart;
use crate::state::ConsoleState;
use crate::tabs::{QueueNav, Tab};
use aqs_control_plane::Queue;
use aqs_control_plane::slug::Slug;
use aqs_core::time::now_ms;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;

/// Seconds between refreshes of the live figures.
pub(crate) const REFRESH_SECS: u32 = 5;

pub(crate) struct Live {
    slug: String,
    paused: bool,
    depth: String,
    ready: String,
    in_flight: String,
    delayed: String,
    stored: String,
    storage_limit: String,
    /// Share of the storage limit in use, 0–100, for the bar's width.
    used_percent: String,
    used_label: String,
    oldest_age: Option<String>,
    published_today: String,
    delivered_today: String,
    dead_letters: String,
    has_dead_letters: bool,
    updated: format::Instant,
    chart: Chart,
    /// Age and latency per day over the same 14 days (`timing.rs`).
    timing: LineChart,
    /// The oldest waiting message's age now (ms), for the last hour's age graph too.
    oldest_now: Option<u64>,
}

#[derive(Template, WebTemplate)]
#[template(path = "overview.html")]
struct OverviewPage {
    chrome: Chrome,
    nav: QueueNav,
    live: Live,
    /// The last hour per minute, beside the 14 days (`activity.rs`).
    minutes: Minutes,
    refresh_secs: u32,
    /// The custom hosts serving this queue: (hostname, status in words, reason).
    hosts: Vec<(String, &'static str, Option<String>)>,
}

#[derive(Template, WebTemplate)]
#[template(path = "overview_live.html")]
struct LiveFragment {
    live: Live,
    /// The last hour per minute, beside the 14 days (`activity.rs`).
    minutes: Minutes,
}

async fn live_figures(state: &ConsoleState, queue: &Queue, now: u64) -> PageResult<Live> {
    // The queue exists in PostgreSQL; missing Redis state means the projection is being repaired.
    let stats = state.engine().stats(queue.id, now).await?.ok_or(ConsoleError::Unavailable)?;
    let days = state.engine().daily_counts(queue.id, chart::DAYS, now).await?;
    let share = if stats.storage_limit == 0 { 0.0 } else { stats.stored_bytes as f64 / stats.storage_limit as f64 };
    let percent = (share * 100.0).clamp(0.0, 100.0);
    // Keep a sliver of bar visible once anything is stored.
    let drawn = if stats.stored_bytes > 0 { percent.max(0.5) } else { 0.0 };
    let oldest_now = stats.oldest_published_ms.map(|at| now.saturating_sub(at));
    Ok(Live {
        slug: queue.slug.to_string(),
        paused: stats.paused,
        depth: format::count(stats.total),
        ready: format::count(stats.ready),
        in_flight: format::count(stats.in_flight),
        delayed: format::count(stats.delayed),
        stored: format::bytes(stats.stored_bytes),
        storage_limit: format::bytes(stats.storage_limit),
        used_percent: format!("{drawn:.2}"),
        used_label: if percent > 0.0 && percent < 0.1 { "under 0.1%".into() } else { format!("{percent:.1}%") },
        oldest_age: oldest_now.map(|age| format::duration_secs(age / 1000)),
        published_today: format::count(stats.published_today),
        delivered_today: format::count(stats.delivered_today),
        dead_letters: format::count(stats.dead_letters),
        has_dead_letters: stats.dead_letters > 0,
        updated: format::instant(now),
        chart: chart::build(&days),
        timing: crate::timing::per_day(&days, oldest_now),
        oldest_now,
    })
}

pub(crate) async fn show(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
) -> PageResult<impl axum::response::IntoResponse> {
    let queue = load_queue(&state, &member, &slug).await?;
    let now = now_ms();
    let live = live_figures(&state, &queue, now).await?;
    let minutes = super::activity::load(&state, queue.id, live.oldest_now).await?;
    let nav = QueueNav::new(&queue, Tab::Overview);
    Ok(OverviewPage {
        chrome: member.chrome(nav.title(Tab::Overview)),
        nav,
        live,
        minutes,
        refresh_secs: REFRESH_SECS,
        hosts: aqs_control_plane::hosts::list_for_queue(state.control(), member.team, &slug)
            .await?
            .into_iter()
            .map(|h| (h.hostname.clone(), super::hosts::status_text(&h), h.reason))
            .collect(),
    })
}

/// Only the live figures, for the script that refreshes them in place.
pub(crate) async fn live(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
) -> PageResult<impl axum::response::IntoResponse> {
    let queue = load_queue(&state, &member, &slug).await?;
    let live = live_figures(&state, &queue, now_ms()).await?;
    let minutes = super::activity::load(&state, queue.id, live.oldest_now).await?;
    Ok(LiveFragment { live, minutes })
}
