//! One measured figure of one scenario, its target, and its JSON line. The JSON line carries
//! exactly the fields scripts read (`scenario`, `aqs`, `unit`, `baseline`, `baseline_value`,
//! `ratio`, `p50_ms`, `p99_ms`); the target, note and error are for the human table.

use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct ScenarioResult {
    pub scenario: String,
    pub aqs: Option<f64>,
    pub unit: String,
    pub baseline: Option<String>,
    pub baseline_value: Option<f64>,
    pub ratio: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    #[serde(skip)]
    pub target: Option<Target>,
    /// Context for the table: connections, counts, errors seen.
    #[serde(skip)]
    pub note: String,
    /// Why the scenario produced no figure; `None` when it ran.
    #[serde(skip)]
    pub error: Option<String>,
}

/// What a scenario is held to (`docs/performance.md`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// `ratio` at least this.
    RatioAtLeast(f64),
    /// `ratio` at most this (for figures where lower is better: latency, memory).
    RatioAtMost(f64),
    /// `aqs` at least this.
    AtLeast(f64),
    /// `aqs` at most this.
    AtMost(f64),
    /// `p50_ms` and `p99_ms` at most these.
    Latency { p50_ms: Option<f64>, p99_ms: f64 },
}

impl ScenarioResult {
    pub fn new(scenario: &str, aqs: f64, unit: &str) -> Self {
        Self {
            scenario: scenario.to_owned(),
            aqs: Some(round(aqs)),
            unit: unit.to_owned(),
            baseline: None,
            baseline_value: None,
            ratio: None,
            p50_ms: None,
            p99_ms: None,
            target: None,
            note: String::new(),
            error: None,
        }
    }

    /// A scenario that could not produce its figure.
    pub fn failed(scenario: &str, unit: &str, error: &anyhow::Error) -> Self {
        let mut r = Self::new(scenario, 0.0, unit);
        r.aqs = None;
        r.error = Some(format!("{error:#}"));
        r
    }

    /// Compares with a baseline measured in the same run; the ratio is `aqs / baseline` (higher
    /// is better for rates; for latency and memory lower is, and their targets say so).
    pub fn compared(mut self, baseline: &str, value: Option<f64>) -> Self {
        self.baseline = Some(baseline.to_owned());
        self.baseline_value = value.map(round);
        self.ratio = match (self.aqs, value) {
            (Some(a), Some(b)) if b > 0.0 => Some((a / b * 1000.0).round() / 1000.0),
            _ => None,
        };
        self
    }

    pub fn latency(mut self, p50_ms: Option<f64>, p99_ms: Option<f64>) -> Self {
        self.p50_ms = p50_ms.map(round);
        self.p99_ms = p99_ms.map(round);
        self
    }

    pub fn target(mut self, target: Target) -> Self {
        self.target = Some(target);
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = note.into();
        self
    }

    /// Whether the target is met; `None` without a target or without the figures it needs.
    pub fn met(&self) -> Option<bool> {
        match self.target? {
            Target::RatioAtLeast(min) => self.ratio.map(|r| r >= min),
            Target::RatioAtMost(max) => self.ratio.map(|r| r <= max),
            Target::AtLeast(min) => self.aqs.map(|v| v >= min),
            Target::AtMost(max) => self.aqs.map(|v| v <= max),
            Target::Latency { p50_ms, p99_ms } => {
                let p99_ok = self.p99_ms.map(|v| v <= p99_ms)?;
                let p50_ok = match p50_ms {
                    Some(max) => self.p50_ms.map(|v| v <= max)?,
                    None => true,
                };
                Some(p99_ok && p50_ok)
            }
        }
    }

    pub fn json_line(&self) -> String {
        serde_json::to_string(self).expect("a ScenarioResult always serialises")
    }
}

impl Target {
    pub fn describe(&self) -> String {
        match *self {
            Target::RatioAtLeast(min) => format!("≥ {min}×"),
            Target::RatioAtMost(max) => format!("≤ {max}×"),
            Target::AtLeast(min) => format!("≥ {min}"),
            Target::AtMost(max) => format!("≤ {max}"),
            Target::Latency { p50_ms: Some(p50), p99_ms } => format!("p50 ≤ {p50} ms, p99 ≤ {p99_ms} ms"),
            Target::Latency { p50_ms: None, p99_ms } => format!("p99 ≤ {p99_ms} ms"),
        }
    }
}

/// Three decimals are more than any of these figures can resolve.
fn round(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_line_has_exactly_the_documented_fields() {
        let r = ScenarioResult::new("publish_single", 41000.4, "msgs/s")
            .compared("floor", Some(50000.0))
            .latency(Some(1.2345), Some(9.0))
            .target(Target::RatioAtLeast(0.7))
            .note("64 connections");
        assert_eq!(
            r.json_line(),
            r#"{"scenario":"publish_single","aqs":41000.4,"unit":"msgs/s","baseline":"floor","baseline_value":50000.0,"ratio":0.82,"p50_ms":1.235,"p99_ms":9.0}"#
        );
        assert_eq!(r.met(), Some(true));
    }

    #[test]
    fn missing_figures_are_null() {
        let r = ScenarioResult::new("memory", 120.0, "B/msg").compared("bullmq", None);
        assert!(r.json_line().contains(r#""baseline_value":null,"ratio":null,"p50_ms":null"#));
        assert_eq!(r.met(), None);
    }

    #[test]
    fn latency_targets_need_both_percentiles() {
        let target = Target::Latency { p50_ms: Some(2.0), p99_ms: 10.0 };
        let ok = ScenarioResult::new("wake", 1.0, "ms").latency(Some(1.0), Some(9.0)).target(target);
        let slow = ScenarioResult::new("wake", 1.0, "ms").latency(Some(3.0), Some(9.0)).target(target);
        assert_eq!(ok.met(), Some(true));
        assert_eq!(slow.met(), Some(false));
    }

    #[test]
    fn ratio_at_most_holds_lower_is_better_figures() {
        let target = Target::RatioAtMost(1.0);
        let faster = ScenarioResult::new("e2e", 4.0, "ms").compared("peer", Some(8.0)).target(target);
        let slower = ScenarioResult::new("e2e", 9.0, "ms").compared("peer", Some(8.0)).target(target);
        assert_eq!((faster.ratio, faster.met()), (Some(0.5), Some(true)));
        assert_eq!(slower.met(), Some(false));
        assert_eq!(target.describe(), "≤ 1×");
    }

    #[test]
    fn failed_scenario_has_no_figure() {
        let r = ScenarioResult::failed("x", "msgs/s", &anyhow::anyhow!("boom")).target(Target::AtLeast(1.0));
        assert_eq!(r.aqs, None);
        assert_eq!(r.met(), None);
        assert_eq!(r.error.as_deref(), Some("boom"));
    }
}
