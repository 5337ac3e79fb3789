//! The last hour per minute (published, delivered, acked, dead-lettered) from the engine's
//! per-minute ring: a line chart drawn on the server (SVG) and the exact counts in a table. The
//! figures live in a fragment (`/queues/{slug}/activity/live`) that `console.js` fetches again
//! every few seconds; without JavaScript the page refreshes itself (`<noscript>` meta refresh).

use super::load_queue;
use crate::error::PageResult;
use crate::extract::{CurrentMember, PagePath};
use crate::format;
use crate::layout::Chrome;
use crate::state::ConsoleState;
use crate::tabs::{QueueNav, Tab};
use aqs_control_plane::slug::Slug;
use aqs_core::ids::QueueId;
use aqs_core::time::now_ms;
use aqs_engine::MinuteCount;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;

/// Seconds between two refreshes of the figures.
const REFRESH_SECS: u32 = 5;

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 160.0;
const LEFT: f64 = 44.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 22.0;

pub(crate) struct Series {
    /// "published", "delivered", "acked", "dead": the CSS class that colours it.
    pub class: &'static str,
    pub label: &'static str,
    pub points: String,
    pub total: String,
}

pub(crate) struct MinuteRow {
    /// `12:34` (UTC).
    pub minute: String,
    pub published: u64,
    pub delivered: u64,
    pub acked: u64,
    pub dead: u64,
}

/// What the live fragment shows.
pub(crate) struct Minutes {
    pub width: u32,
    pub height: u32,
    pub baseline: String,
    pub top_label: String,
    pub top_y: String,
    pub left: String,
    pub right: String,
    pub series: Vec<Series>,
    /// Newest first, only minutes where something happened.
    pub rows: Vec<MinuteRow>,
    pub first_label: String,
    pub last_label: String,
    pub updated: format::Instant,
}

fn px(value: f64) -> String {
    format!("{value:.1}")
}

fn hh_mm(start_ms: u64) -> String {
    let minute_of_day = (start_ms / 60_000) % 1440;
    format!("{:02}:{:02}", minute_of_day / 60, minute_of_day % 60)
}

/// A counter's CSS class, its label and how to read it off a minute.
type Kind = (&'static str, &'static str, fn(&MinuteCount) -> u64);

pub(crate) fn minutes(counts: &[MinuteCount], now: u64) -> Minutes {
    let pick: [Kind; 4] = [
        ("published", "Published", |m| m.published),
        ("delivered", "Delivered", |m| m.delivered),
        ("acked", "Acknowledged", |m| m.acked),
        ("dead", "Dead-lettered", |m| m.dead_lettered),
    ];
    let max = counts.iter().flat_map(|m| pick.iter().map(move |(_, _, f)| f(m))).max().unwrap_or(0).max(1);
    let step = (WIDTH - LEFT - RIGHT) / (counts.len().max(2) - 1) as f64;
    let plot = HEIGHT - TOP - BOTTOM;
    let series = pick
        .iter()
        .map(|(class, label, f)| Series {
            class,
            label,
            points: counts
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    format!("{},{}", px(LEFT + i as f64 * step), px(TOP + plot - plot * f(m) as f64 / max as f64))
                })
                .collect::<Vec<_>>()
                .join(" "),
            total: format::count(counts.iter().map(f).sum()),
        })
        .collect();
    let rows = counts
        .iter()
        .rev()
        .filter(|m| m.published + m.delivered + m.acked + m.dead_lettered > 0)
        .map(|m| MinuteRow {
            minute: hh_mm(m.start_ms),
            published: m.published,
            delivered: m.delivered,
            acked: m.acked,
            dead: m.dead_lettered,
        })
        .collect();
    Minutes {
        width: WIDTH as u32,
        height: HEIGHT as u32,
        baseline: px(TOP + plot),
        top_label: format::count(max),
        top_y: px(TOP),
        left: px(LEFT),
        right: px(WIDTH - RIGHT),
        series,
        rows,
        first_label: counts.first().map(|m| hh_mm(m.start_ms)).unwrap_or_default(),
        last_label: counts.last().map(|m| hh_mm(m.start_ms)).unwrap_or_default(),
        updated: format::instant(now),
    }
}

pub(crate) async fn load(state: &ConsoleState, queue: QueueId) -> PageResult<Minutes> {
    let now = now_ms();
    let counts = state.engine().minute_counts(queue, now).await?;
    Ok(minutes(&counts, now))
}

#[derive(Template, WebTemplate)]
#[template(path = "activity.html")]
struct ActivityPage {
    chrome: Chrome,
    nav: QueueNav,
    minutes: Minutes,
    refresh_secs: u32,
}

pub(crate) async fn show(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
) -> PageResult<impl axum::response::IntoResponse> {
    let queue = load_queue(&state, &member, &slug).await?;
    let minutes = load(&state, queue.id).await?;
    let nav = QueueNav::new(&queue, Tab::Messages);
    Ok(ActivityPage {
        chrome: member.chrome(format!("Last hour · {}", queue.name)),
        nav,
        minutes,
        refresh_secs: REFRESH_SECS,
    })
}

#[derive(Template, WebTemplate)]
#[template(path = "activity_live.html")]
struct LiveFragment {
    minutes: Minutes,
}

/// The figures alone, for `console.js` to swap in.
pub(crate) async fn live(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
) -> PageResult<impl axum::response::IntoResponse> {
    let queue = load_queue(&state, &member, &slug).await?;
    Ok(LiveFragment { minutes: load(&state, queue.id).await? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_and_rows_follow_the_counts() {
        let counts: Vec<MinuteCount> = (0..60)
            .map(|i| MinuteCount { start_ms: i * 60_000, published: u64::from(i == 59) * 3, ..MinuteCount::default() })
            .collect();
        let m = minutes(&counts, 60 * 60_000);
        assert_eq!(m.series[0].total, "3");
        assert_eq!(m.rows.len(), 1);
        assert_eq!((m.rows[0].minute.as_str(), m.rows[0].published), ("00:59", 3));
        assert_eq!((m.first_label.as_str(), m.last_label.as_str()), ("00:00", "00:59"));
    }
}
