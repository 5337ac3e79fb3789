//! The Overview's graphs of age and latency, per minute over the last hour and per day over 14
//! days: the oldest waiting message's age and the publish → ack time's p50 and p99, from what the
//! engine records (docs/redis-model.md, "Age and latency"):
//! - the age per minute is the sweeper's once-a-minute sample, and for the current minute the age
//!   read now (the same figure as the "Oldest message" card); a minute without a sample reads 0,
//!   since the sweeper samples only when something waits. Per day: the day's largest sample
//!   (today's at least the age now);
//! - p50 and p99 are read back from the log-scale histograms the ack script keeps (within a factor
//!   of 2 of the true value, usually much closer); a minute or day without an acknowledgement has
//!   no point, so the line breaks there. The legend's summaries are over the whole hour (14 days):
//!   the largest age, and the percentiles of all the hour's acknowledgements together.

use crate::format;
use crate::line_chart::{self, Input, LineChart, Marker, Spec, Unit, Words};
use aqs_engine::{DailyCount, Latency, MinuteCount};

/// Merges histograms, to read the percentiles of a whole hour or fortnight.
fn merged<'a>(all: impl Iterator<Item = &'a Latency>) -> Latency {
    let mut out = Latency::default();
    for l in all {
        out.merge(l);
    }
    out
}

fn summary(value: Option<u64>) -> String {
    value.map_or("—".into(), format::millis)
}

/// The three series, from each point's age and latency.
fn inputs(ages: Vec<u64>, latencies: &[&Latency]) -> Vec<Input> {
    let all = merged(latencies.iter().copied());
    let percentile = |q: f64| latencies.iter().map(|l| l.quantile_ms(q)).collect::<Vec<_>>();
    vec![
        Input {
            class: "age",
            label: "Oldest message",
            marker: Marker::Diamond,
            summary: format!("max {}", format::millis(ages.iter().copied().max().unwrap_or(0))),
            values: ages.into_iter().map(Some).collect(),
        },
        Input {
            class: "p50",
            label: "p50 publish → ack",
            marker: Marker::Circle,
            values: percentile(0.5),
            summary: summary(all.quantile_ms(0.5)),
        },
        Input {
            class: "p99",
            label: "p99 publish → ack",
            marker: Marker::Triangle,
            values: percentile(0.99),
            summary: summary(all.quantile_ms(0.99)),
        },
    ]
}

const DESC_TAIL: &str = "Percentiles are estimated from log-scale buckets. The table below lists each point.";

/// The last hour per minute; `oldest_now` is the oldest waiting message's age now (ms).
pub(crate) fn per_minute(counts: &[MinuteCount], oldest_now: Option<u64>) -> LineChart {
    let last = counts.len().saturating_sub(1);
    let ages: Vec<u64> = counts
        .iter()
        .enumerate()
        .map(|(i, m)| if i == last { oldest_now.unwrap_or(0) } else { m.oldest_age_ms.unwrap_or(0) })
        .collect();
    let latencies: Vec<&Latency> = counts.iter().map(|m| &m.latency).collect();
    let inputs = inputs(ages, &latencies);
    let spec = Spec {
        words: Words {
            id: "timing-minutes",
            title: "Oldest message's age and publish to acknowledgement time per minute, last hour (UTC)".into(),
            desc: format!(
                "Over the hour: oldest message {}, p50 {}, p99 {}. {DESC_TAIL}",
                inputs[0].summary, inputs[1].summary, inputs[2].summary
            ),
            summary_label: "Last hour",
            table_summary: "Age and latency per minute",
            point_header: "Minute (UTC)",
            empty_text: "Nothing waited and nothing was acknowledged in the last hour.",
        },
        unit: Unit::Millis,
        labels: counts.iter().map(|m| crate::pages::activity::hh_mm(m.start_ms)).collect(),
        ticks: crate::pages::activity::ten_minute_ticks(counts),
    };
    line_chart::build(spec, inputs)
}

/// The last days, oldest first, today last; `oldest_now` as in [`per_minute`].
pub(crate) fn per_day(days: &[DailyCount], oldest_now: Option<u64>) -> LineChart {
    let last = days.len().saturating_sub(1);
    let ages: Vec<u64> = days
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let sampled = d.oldest_age_ms.unwrap_or(0);
            if i == last { sampled.max(oldest_now.unwrap_or(0)) } else { sampled }
        })
        .collect();
    let latencies: Vec<&Latency> = days.iter().map(|d| &d.latency).collect();
    let inputs = inputs(ages, &latencies);
    let labels: Vec<String> = days.iter().map(|d| crate::chart::day_label(d.day)).collect();
    let spec = Spec {
        words: Words {
            id: "timing-days",
            title: "Oldest message's largest age and publish to acknowledgement time per day, last 14 days (UTC)"
                .into(),
            desc: format!(
                "Over 14 days: oldest message {}, p50 {}, p99 {}. {DESC_TAIL}",
                inputs[0].summary, inputs[1].summary, inputs[2].summary
            ),
            summary_label: "14 days",
            table_summary: "Age and latency per day",
            point_header: "Day (UTC)",
            empty_text: "Nothing waited and nothing was acknowledged in the last 14 days.",
        },
        unit: Unit::Millis,
        // Every other day, counted back from today, as the counts' chart.
        ticks: (0..days.len()).filter(|i| (last - i).is_multiple_of(2)).collect(),
        labels,
    };
    line_chart::build(spec, inputs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn latency(times: &[u64]) -> Latency {
        let mut l = Latency::default();
        for &ms in times {
            l.buckets[if ms < 2 { 0 } else { 63 - ms.leading_zeros() as usize }] += 1;
        }
        l
    }

    #[test]
    fn minutes_use_samples_the_age_now_and_break_where_nothing_was_acked() {
        let counts: Vec<MinuteCount> = (0..60)
            .map(|i| MinuteCount {
                start_ms: i * 60_000,
                oldest_age_ms: (i == 10).then_some(90_000),
                latency: if i == 20 { latency(&[100, 100, 3_000]) } else { Latency::default() },
                ..MinuteCount::default()
            })
            .collect();
        let chart = per_minute(&counts, Some(5_000));
        let age = &chart.legend[0];
        assert_eq!(age.summary, "max 1 min");
        assert_eq!(chart.columns[59].values.split('|').next(), Some("5 s"), "the age now in the current minute");
        assert_eq!(chart.columns[0].values, "0|—|—");
        let p99 = chart.columns[20].values.split('|').nth(2).unwrap().to_owned();
        assert!(p99.ends_with(" s"), "{p99}");
        // Only minute 20 has a latency point: one `M`, no segment.
        assert_eq!(chart.legend[1].line.matches('M').count(), 1);
        assert_eq!(chart.rows.len(), 3, "minutes 59, 20 and 10 have something");
    }

    #[test]
    fn days_take_the_largest_sample_and_today_at_least_the_age_now() {
        let days: Vec<DailyCount> = (0..14)
            .map(|i| DailyCount {
                day: 20261117 + i,
                oldest_age_ms: (i == 13).then_some(1_000),
                ..DailyCount::default()
            })
            .collect();
        let chart = per_day(&days, Some(60_000));
        assert_eq!(chart.legend[0].summary, "max 1 min");
        assert_eq!(chart.ticks.last().unwrap().label, "Nov 30");
        assert_eq!(chart.ticks.len(), 7);
    }
}
