//! A line chart drawn on the server as SVG (`templates/line_chart.html`), shared by the Overview's
//! last hour of counts and its graphs of age and latency (per minute and per day). What makes it
//! readable whatever the reader's colour vision or the data:
//! - each series has its own colour (CSS, Okabe–Ito, light and dark), dash pattern and marker
//!   shape, so two series can be told apart in grey, and markers sit only on points that are not
//!   zero;
//! - a run of zeros is not drawn (the axis is the zero line; a line leaves it and comes back to it
//!   from the zero next to a value), series that are zero all along come first, the rest from the
//!   largest total down, and the zero axis is drawn last, over every line: a series at zero never
//!   paints the axis in its colour, and a small series lying on a large one stays visible on top;
//! - a missing value (no acknowledgement in a minute, no sample of the age) breaks the line;
//! - round y steps, x labels at chosen points (every 10 minutes, every other day);
//! - per point a transparent column with a `<title>` naming every series' value (the browser's
//!   tooltip, no script needed) and the same values in `data-values`, which `console.js` writes
//!   into the legend while the pointer is over it. The legend otherwise shows each series' summary
//!   (the hour's totals), and the numbers are in a table beside the chart.

use crate::format;

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 200.0;
/// Room for the y labels ("50 min", "12,000"); `console.css` sizes the phone's y-axis strip from
/// it (`.line-axis`: LEFT / 16 rem wide, HEIGHT / 16 rem high).
const LEFT: f64 = 56.0;
const RIGHT: f64 = 10.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 24.0;
const GRID_STEPS: u64 = 4;

/// How the values read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    Count,
    /// Milliseconds, shown as "350 ms", "12 s", "5 min".
    Millis,
}

impl Unit {
    pub(crate) fn text(self, value: u64) -> String {
        match self {
            Unit::Count => format::count(value),
            Unit::Millis => format::millis(value),
        }
    }

    /// The smallest round step of this unit that is at least `raw`.
    fn step(self, raw: u64) -> u64 {
        match self {
            Unit::Count => crate::chart::nice_step(raw),
            Unit::Millis => {
                const STEPS: [u64; 27] = [
                    1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000,
                    300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 10_800_000, 21_600_000, 43_200_000,
                    86_400_000,
                ];
                STEPS.iter().copied().find(|&s| s >= raw).unwrap_or_else(|| raw.div_ceil(86_400_000) * 86_400_000)
            }
        }
    }
}

/// The marker drawn on a series' points: its shape, beside its colour and dash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Marker {
    Circle,
    Square,
    Triangle,
    Cross,
    Diamond,
}

impl Marker {
    /// An SVG path at (x, y), about 6 units across.
    fn path(self, x: f64, y: f64) -> String {
        match self {
            Marker::Circle => format!("M{:.1} {y:.1}a3 3 0 1 0 6 0a3 3 0 1 0 -6 0", x - 3.0),
            Marker::Square => format!("M{:.1} {:.1}h5.4v5.4h-5.4z", x - 2.7, y - 2.7),
            Marker::Triangle => format!("M{x:.1} {:.1}l3.5 6h-7z", y - 3.5),
            Marker::Cross => format!("M{:.1} {:.1}l6 6m0 -6l-6 6", x - 3.0, y - 3.0),
            Marker::Diamond => format!("M{x:.1} {:.1}l3.5 3.5l-3.5 3.5l-3.5 -3.5z", y - 3.5),
        }
    }
}

/// One series as the caller gives it.
pub(crate) struct Input {
    /// The CSS class that gives its colour and dash ("published", "p99"…).
    pub class: &'static str,
    pub label: &'static str,
    pub marker: Marker,
    /// One value per point; `None` breaks the line.
    pub values: Vec<Option<u64>>,
    /// What the legend shows without a pointer on the chart ("1,234", "p50 320 ms").
    pub summary: String,
}

pub(crate) struct Series {
    pub class: &'static str,
    pub label: &'static str,
    /// The line: `M x y L x y …`, a new `M` after each gap.
    pub line: String,
    pub marks: String,
    /// The marker alone, in the middle of the legend's 28 × 10 key.
    pub key_mark: String,
    pub summary: String,
}

/// One row of the table beside the chart: a point's label and each series' value.
pub(crate) struct Row {
    pub label: String,
    pub cells: Vec<String>,
}

pub(crate) struct GridLine {
    pub y: String,
    pub label: String,
}

pub(crate) struct Tick {
    pub x: String,
    pub label: String,
}

/// The hover target of one point.
pub(crate) struct Column {
    pub x: String,
    pub width: String,
    /// "12:34 UTC: Published 3, Delivered 2, …"
    pub title: String,
    /// The point's label ("12:34").
    pub label: String,
    /// Each series' value in legend order, separated by `|`.
    pub values: String,
}

#[derive(askama::Template)]
#[template(path = "line_chart.html")]
pub(crate) struct LineChart {
    pub words: Words,
    pub width: u32,
    pub height: u32,
    pub left: String,
    pub right: String,
    pub top: String,
    pub baseline: String,
    /// From `top` to `baseline`: the hover columns' height.
    pub plot_height: String,
    pub grid: Vec<GridLine>,
    pub ticks: Vec<Tick>,
    /// In drawing order (see the module's header).
    pub series: Vec<Series>,
    /// In the caller's order.
    pub legend: Vec<Series>,
    pub columns: Vec<Column>,
    /// Newest first, only points where some series has a value other than zero.
    pub rows: Vec<Row>,
}

fn px(value: f64) -> String {
    format!("{value:.1}")
}

/// What a chart is called and says, as the page shows it.
pub(crate) struct Words {
    /// Prefix of the chart's element ids; the legend's values are `{id}-{class}`.
    pub id: &'static str,
    /// The SVG's accessible name and description.
    pub title: String,
    pub desc: String,
    /// What the legend's summaries are of ("Last hour").
    pub summary_label: &'static str,
    /// The table's disclosure ("Counts per minute"), its first column's header ("Minute (UTC)"),
    /// and what it says when no point has anything.
    pub table_summary: &'static str,
    pub point_header: &'static str,
    pub empty_text: &'static str,
}

/// What a chart is of, besides its series.
pub(crate) struct Spec {
    pub words: Words,
    pub unit: Unit,
    /// `labels[i]` names point i (in the tooltips).
    pub labels: Vec<String>,
    /// The indexes of the points that get an x label.
    pub ticks: Vec<usize>,
}

pub(crate) fn build(spec: Spec, inputs: Vec<Input>) -> LineChart {
    let Spec { words, unit, labels, ticks } = spec;
    let points = labels.len();
    let max = inputs.iter().flat_map(|s| s.values.iter().flatten().copied()).max().unwrap_or(0);
    let step = unit.step(max.div_ceil(GRID_STEPS).max(1));
    let top_value = (step * GRID_STEPS) as f64;
    let plot = HEIGHT - TOP - BOTTOM;
    let baseline = TOP + plot;
    let column = (WIDTH - LEFT - RIGHT) / points.max(1) as f64;
    let x_of = |i: usize| LEFT + column * (i as f64 + 0.5);
    let y_of = |v: u64| baseline - plot * v as f64 / top_value;

    let draw = |input: &Input| {
        let mut line = String::new();
        let mut marks = String::new();
        // Points in the current run: a run of one has no segment to stroke, so it gets a
        // zero-length one, which its round cap draws as a dot.
        let mut run = 0;
        let at = |i: usize| input.values.get(i).copied().flatten();
        for (i, value) in input.values.iter().enumerate() {
            // A zero between zeros (or gaps) lies on the axis: not drawn, the line breaks there.
            let beside = |j: Option<usize>| j.and_then(at).is_some_and(|v| v > 0);
            let Some(v) = value.filter(|&v| v > 0 || beside(i.checked_sub(1)) || beside(Some(i + 1))) else {
                if run == 1 {
                    line.push_str("h0.01");
                }
                run = 0;
                continue;
            };
            let (x, y) = (x_of(i), y_of(v));
            line.push_str(&format!("{}{x:.1} {y:.1}", if run > 0 { "L" } else { "M" }));
            run += 1;
            if v > 0 {
                marks.push_str(&input.marker.path(x, y));
            }
        }
        if run == 1 {
            line.push_str("h0.01");
        }
        Series {
            class: input.class,
            label: input.label,
            line,
            marks,
            key_mark: input.marker.path(14.0, 5.0),
            summary: input.summary.clone(),
        }
    };
    let total = |input: &Input| input.values.iter().flatten().sum::<u64>();
    let mut order: Vec<&Input> = inputs.iter().collect();
    // Zero all along first, then the largest total first: smaller lines are drawn over larger ones.
    order.sort_by_key(|s| (total(s) > 0, std::cmp::Reverse(total(s))));

    let value = |s: &Input, i: usize| s.values.get(i).copied().flatten();
    let texts = |i: usize| -> Vec<String> {
        inputs.iter().map(|s| value(s, i).map_or("—".into(), |v| unit.text(v))).collect()
    };
    let columns = labels
        .iter()
        .enumerate()
        .map(|(i, label)| {
            let texts = texts(i);
            let named: Vec<String> = inputs.iter().zip(&texts).map(|(s, t)| format!("{} {t}", s.label)).collect();
            Column {
                x: px(LEFT + column * i as f64),
                width: px(column),
                title: format!("{label}: {}", named.join(", ")),
                label: label.clone(),
                values: texts.join("|"),
            }
        })
        .collect();
    let rows = (0..points)
        .rev()
        .filter(|&i| inputs.iter().any(|s| value(s, i).is_some_and(|v| v > 0)))
        .map(|i| Row { label: labels[i].clone(), cells: texts(i) })
        .collect();
    LineChart {
        words,
        width: WIDTH as u32,
        height: HEIGHT as u32,
        left: px(LEFT),
        right: px(WIDTH - RIGHT),
        top: px(TOP),
        baseline: px(baseline),
        plot_height: px(plot),
        grid: (0..=GRID_STEPS).map(|k| GridLine { y: px(y_of(k * step)), label: unit.text(k * step) }).collect(),
        ticks: ticks.iter().filter_map(|&i| Some(Tick { x: px(x_of(i)), label: labels.get(i)?.clone() })).collect(),
        series: order.into_iter().map(draw).collect(),
        legend: inputs.iter().map(draw).collect(),
        columns,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(class: &'static str, values: Vec<Option<u64>>) -> Input {
        Input { class, label: class, marker: Marker::Circle, values, summary: String::new() }
    }

    fn spec(unit: Unit, points: usize) -> Spec {
        let labels: Vec<String> = (0..points).map(|i| format!("p{i}")).collect();
        Spec {
            words: Words {
                id: "t",
                title: "t".into(),
                desc: "d".into(),
                summary_label: "All",
                table_summary: "Numbers",
                point_header: "Point",
                empty_text: "Nothing.",
            },
            unit,
            labels,
            ticks: vec![0],
        }
    }

    fn chart(inputs: Vec<Input>) -> LineChart {
        build(spec(Unit::Count, inputs[0].values.len()), inputs)
    }

    #[test]
    fn zero_series_are_drawn_first_and_small_ones_over_large_ones() {
        let c = chart(vec![
            input("big", vec![Some(9), Some(9)]),
            input("zero", vec![Some(0), Some(0)]),
            input("small", vec![Some(1), Some(2)]),
        ]);
        let order: Vec<&str> = c.series.iter().map(|s| s.class).collect();
        assert_eq!(order, ["zero", "big", "small"]);
        let legend: Vec<&str> = c.legend.iter().map(|s| s.class).collect();
        assert_eq!(legend, ["big", "zero", "small"]);
        // Neither line nor marker for a series at zero: the axis is its line.
        assert!(c.series[0].marks.is_empty() && c.series[0].line.is_empty());
    }

    #[test]
    fn a_run_of_zeros_is_left_to_the_axis() {
        let c = chart(vec![input("a", vec![Some(0), Some(0), Some(0), Some(4), Some(0), Some(0), Some(0)])]);
        // From the zero before the value, to the zero after it: three points, one line.
        assert_eq!(c.legend[0].line.matches('M').count(), 1);
        assert_eq!(c.legend[0].line.matches('L').count(), 2);
    }

    #[test]
    fn a_gap_breaks_the_line_and_columns_name_every_value() {
        let c = chart(vec![input("a", vec![Some(1), None, Some(3)]), input("b", vec![Some(0), Some(2), None])]);
        assert_eq!(c.legend[0].line.matches('M').count(), 2);
        assert_eq!(c.columns[1].title, "p1: a —, b 2");
        assert_eq!(c.columns[2].values, "3|—");
        // Newest first; a point of zeros and gaps has no row.
        let rows: Vec<&str> = c.rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(rows, ["p2", "p1", "p0"]);
        let quiet = chart(vec![input("a", vec![Some(0), None])]);
        assert!(quiet.rows.is_empty());
    }

    #[test]
    fn durations_step_roundly() {
        assert_eq!(Unit::Millis.step(700), 1_000);
        assert_eq!(Unit::Millis.step(40_000), 60_000);
        assert_eq!(Unit::Millis.step(100_000_000), 172_800_000);
        let c = build(spec(Unit::Millis, 1), vec![input("a", vec![Some(1_500)])]);
        assert_eq!(c.grid.last().unwrap().label, "2 s");
    }
}
