//! The Overview's chart of the last 14 days' published and delivered counts, as geometry for a
//! server-rendered SVG (`templates/chart.html`): grouped bars, four grid lines with round values,
//! and a label under every other day, today included. The same numbers go into a table for screen
//! readers and for anyone who wants the exact counts.

use aqs_engine::DailyCount;

pub(crate) const DAYS: u32 = 14;

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 240.0;
const LEFT: f64 = 52.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 30.0;
const GRID_STEPS: u64 = 4;

pub(crate) struct Bar {
    pub x: String,
    pub y: String,
    pub width: String,
    pub height: String,
    /// "published" or "delivered": the CSS class that colours it.
    pub class: &'static str,
    /// The tooltip: "Nov 30: 12 published".
    pub title: String,
}

pub(crate) struct GridLine {
    pub y: String,
    pub label: String,
}

pub(crate) struct DayLabel {
    pub x: String,
    pub text: String,
}

pub(crate) struct Row {
    pub day: String,
    pub published: u64,
    pub delivered: u64,
}

pub(crate) struct Chart {
    pub width: u32,
    pub height: u32,
    pub left: String,
    pub right: String,
    pub baseline: String,
    pub bars: Vec<Bar>,
    pub grid: Vec<GridLine>,
    pub labels: Vec<DayLabel>,
    pub rows: Vec<Row>,
    pub total_published: u64,
    pub total_delivered: u64,
}

fn px(value: f64) -> String {
    format!("{value:.1}")
}

/// The smallest of 1, 2, 5 × 10^k that is at least `raw`.
pub(crate) fn nice_step(raw: u64) -> u64 {
    let mut magnitude = 1u64;
    loop {
        for factor in [1, 2, 5] {
            if factor * magnitude >= raw {
                return factor * magnitude;
            }
        }
        magnitude = magnitude.saturating_mul(10);
    }
}

/// "Nov 30" from `20261130`.
pub(crate) fn day_label(day: u32) -> String {
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let month = (day / 100 % 100) as usize;
    format!("{} {}", MONTHS.get(month.wrapping_sub(1)).unwrap_or(&"?"), day % 100)
}

pub(crate) fn build(days: &[DailyCount]) -> Chart {
    let max = days.iter().map(|d| d.published.max(d.delivered)).max().unwrap_or(0);
    let step = nice_step(max.div_ceil(GRID_STEPS).max(1));
    let top_value = (step * GRID_STEPS) as f64;
    let plot_width = WIDTH - LEFT - RIGHT;
    let plot_height = HEIGHT - TOP - BOTTOM;
    let baseline = TOP + plot_height;
    let y_of = |value: u64| baseline - value as f64 / top_value * plot_height;
    let group = plot_width / days.len().max(1) as f64;
    let bar_width = group * 0.36;

    let mut bars = Vec::new();
    let mut labels = Vec::new();
    for (i, day) in days.iter().enumerate() {
        let group_x = LEFT + group * i as f64;
        let label = day_label(day.day);
        for (offset, value, class) in [(0.12, day.published, "published"), (0.52, day.delivered, "delivered")] {
            if value == 0 {
                continue;
            }
            let y = y_of(value);
            bars.push(Bar {
                x: px(group_x + group * offset),
                y: px(y),
                width: px(bar_width),
                height: px(baseline - y),
                class,
                title: format!("{label}: {value} {class}"),
            });
        }
        // Every other day, counted back from today, so today always has its label.
        if (days.len() - 1 - i).is_multiple_of(2) {
            labels.push(DayLabel { x: px(group_x + group / 2.0), text: label });
        }
    }
    let grid =
        (0..=GRID_STEPS).map(|k| GridLine { y: px(y_of(k * step)), label: crate::format::count(k * step) }).collect();
    Chart {
        width: WIDTH as u32,
        height: HEIGHT as u32,
        left: px(LEFT),
        right: px(WIDTH - RIGHT),
        baseline: px(baseline),
        bars,
        grid,
        labels,
        rows: days
            .iter()
            .map(|d| Row { day: day_label(d.day), published: d.published, delivered: d.delivered })
            .collect(),
        total_published: days.iter().map(|d| d.published).sum(),
        total_delivered: days.iter().map(|d| d.delivered).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(day: u32, published: u64, delivered: u64) -> DailyCount {
        DailyCount { day, published, delivered, ..DailyCount::default() }
    }

    #[test]
    fn grid_uses_round_steps() {
        assert_eq!(nice_step(1), 1);
        assert_eq!(nice_step(3), 5);
        assert_eq!(nice_step(26), 50);
        assert_eq!(nice_step(101), 200);
    }

    #[test]
    fn bars_scale_to_the_grid_and_zeros_draw_nothing() {
        let days: Vec<DailyCount> = (0..14).map(|i| day(20261117 + i, if i == 13 { 8 } else { 0 }, 0)).collect();
        let chart = build(&days);
        assert_eq!(chart.bars.len(), 1);
        assert_eq!(chart.bars[0].title, "Nov 30: 8 published");
        assert_eq!(chart.grid.last().unwrap().label, "8");
        // The bar of the largest value reaches the top grid line.
        assert_eq!(chart.bars[0].y, chart.grid.last().unwrap().y);
        assert_eq!(chart.labels.len(), 7);
        assert_eq!(chart.labels.last().unwrap().text, "Nov 30");
        assert_eq!(chart.total_published, 8);
    }

    #[test]
    fn an_empty_history_still_has_a_grid() {
        let chart = build(&[day(20261130, 0, 0)]);
        assert!(chart.bars.is_empty());
        assert_eq!(chart.grid.len(), 5);
    }
}
