//! The last hour per minute (published, delivered, acked, dead-lettered) from the engine's
//! per-minute ring: a line chart drawn on the server (`line_chart.rs`), with the hour's totals in
//! its legend and the exact counts in a table, and beside it on the Overview the age and latency
//! graphs of the same minutes (`timing.rs`). The figures live in a fragment
//! (`/queues/{slug}/activity/live`) that `console.js` fetches again every few seconds; without
//! JavaScript the page refreshes itself (`<noscript>` meta refresh).

use super::load_queue;
use crate::error::PageResult;
use crate::extract::{CurrentMember, PagePath};
use crate::format;
use crate::layout::Chrome;
use crate::line_chart::{self, Input, LineChart, Marker, Spec, Unit, Words};
use crate::state::ConsoleState;
use crate::tabs::{QueueNav, Tab};
use crate::timing;
use aqs_control_plane::slug::Slug;
use aqs_core::ids::QueueId;
use aqs_core::time::now_ms;
use aqs_engine::MinuteCount;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;

/// Seconds between two refreshes of the figures.
const REFRESH_SECS: u32 = 5;

/// What the live fragment shows.
pub(crate) struct Minutes {
    pub counts: LineChart,
    /// Oldest-message age and publish → ack time over the same minutes.
    pub timing: LineChart,
    pub updated: format::Instant,
}

/// `12:34` (UTC).
pub(crate) fn hh_mm(start_ms: u64) -> String {
    let minute_of_day = (start_ms / 60_000) % 1440;
    format!("{:02}:{:02}", minute_of_day / 60, minute_of_day % 60)
}

/// The points that get an x label: every minute that is a multiple of 10.
pub(crate) fn ten_minute_ticks(counts: &[MinuteCount]) -> Vec<usize> {
    counts.iter().enumerate().filter(|(_, m)| (m.start_ms / 60_000).is_multiple_of(10)).map(|(i, _)| i).collect()
}

/// A counter's CSS class, its label, its marker and how to read it off a minute.
type Kind = (&'static str, &'static str, Marker, fn(&MinuteCount) -> u64);

const KINDS: [Kind; 4] = [
    ("published", "Published", Marker::Circle, |m| m.published),
    ("delivered", "Delivered", Marker::Square, |m| m.delivered),
    ("acked", "Acknowledged", Marker::Triangle, |m| m.acked),
    ("dead", "Dead-lettered", Marker::Cross, |m| m.dead_lettered),
];

/// `oldest_now`: the oldest waiting message's age now (ms), for the current minute of the age
/// graph (`timing.rs`).
pub(crate) fn minutes(counts: &[MinuteCount], now: u64, oldest_now: Option<u64>) -> Minutes {
    let labels: Vec<String> = counts.iter().map(|m| hh_mm(m.start_ms)).collect();
    let inputs = KINDS
        .iter()
        .map(|&(class, label, marker, f)| Input {
            class,
            label,
            marker,
            values: counts.iter().map(|m| Some(f(m))).collect(),
            summary: format::count(counts.iter().map(f).sum()),
        })
        .collect();
    let spec = Spec {
        words: Words {
            id: "minutes",
            title: "Published, delivered, acknowledged and dead-lettered messages per minute, last hour (UTC)".into(),
            desc: format!(
                "Totals over the hour: {}. The table below lists each minute.",
                KINDS
                    .iter()
                    .map(|(_, label, _, f)| format!("{} {}", counts.iter().map(f).sum::<u64>(), label.to_lowercase()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            summary_label: "Last hour",
            table_summary: "Counts per minute",
            point_header: "Minute (UTC)",
            empty_text: "Nothing happened in the last hour.",
        },
        unit: Unit::Count,
        labels,
        ticks: ten_minute_ticks(counts),
    };
    Minutes {
        counts: line_chart::build(spec, inputs),
        timing: timing::per_minute(counts, oldest_now),
        updated: format::instant(now),
    }
}

pub(crate) async fn load(state: &ConsoleState, queue: QueueId, oldest_now: Option<u64>) -> PageResult<Minutes> {
    let now = now_ms();
    let counts = state.engine().minute_counts(queue, now).await?;
    Ok(minutes(&counts, now, oldest_now))
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
    let minutes = load(&state, queue.id, None).await?;
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
    Ok(LiveFragment { minutes: load(&state, queue.id, None).await? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_rows_and_ten_minute_labels_follow_the_counts() {
        let counts: Vec<MinuteCount> = (0..60)
            .map(|i| MinuteCount {
                start_ms: (i + 5) * 60_000,
                published: u64::from(i == 59) * 3,
                ..MinuteCount::default()
            })
            .collect();
        let m = minutes(&counts, 65 * 60_000, None);
        assert_eq!(m.counts.legend[0].summary, "3");
        assert_eq!(m.counts.rows.len(), 1);
        assert_eq!((m.counts.rows[0].label.as_str(), m.counts.rows[0].cells[0].as_str()), ("01:04", "3"));
        let ticks: Vec<&str> = m.counts.ticks.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(ticks, ["00:10", "00:20", "00:30", "00:40", "00:50", "01:00"]);
        // The three series at zero are drawn before the one that is not.
        assert_eq!(m.counts.series.last().unwrap().class, "published");
    }
}
