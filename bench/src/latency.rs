//! Latency samples and their percentiles. Samples are kept whole (microseconds as `u32`) rather
//! than in a histogram: a run records at most a few million, and exact percentiles are easier to
//! trust than bucketed ones.

use std::time::Duration;

#[derive(Debug, Default, Clone)]
pub struct Latencies {
    micros: Vec<u32>,
}

impl Latencies {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn record(&mut self, latency: Duration) {
        // Saturate instead of wrapping: a 71-minute latency is already a failed run.
        self.micros.push(u32::try_from(latency.as_micros()).unwrap_or(u32::MAX));
    }

    pub fn merge(&mut self, other: Latencies) {
        self.micros.extend(other.micros);
    }

    pub fn len(&self) -> usize {
        self.micros.len()
    }

    pub fn is_empty(&self) -> bool {
        self.micros.is_empty()
    }

    /// The percentiles asked for, in milliseconds, by the nearest-rank method (the smallest sample
    /// with at least p% of the samples at or below it); `None` when there are no samples.
    pub fn percentiles_ms(&mut self, ps: &[f64]) -> Vec<Option<f64>> {
        self.micros.sort_unstable();
        ps.iter().map(|&p| nearest_rank(&self.micros, p).map(|us| f64::from(us) / 1000.0)).collect()
    }

    /// p50 and p99 in milliseconds.
    pub fn p50_p99_ms(&mut self) -> (Option<f64>, Option<f64>) {
        let v = self.percentiles_ms(&[50.0, 99.0]);
        (v[0], v[1])
    }

    /// `"p50 … / p99 … ms"` for a note; `None` when there are no samples.
    pub fn p50_p99_text(&mut self) -> Option<String> {
        match self.p50_p99_ms() {
            (Some(p50), Some(p99)) => Some(format!("p50 {p50:.2} / p99 {p99:.2} ms")),
            _ => None,
        }
    }
}

/// Nearest-rank percentile of sorted samples.
fn nearest_rank(sorted: &[u32], p: f64) -> Option<u32> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(values: &[u32]) -> Latencies {
        let mut l = Latencies::new();
        for &v in values {
            l.record(Duration::from_micros(u64::from(v)));
        }
        l
    }

    #[test]
    fn nearest_rank_percentiles() {
        let mut l = of(&(1..=100).rev().collect::<Vec<_>>());
        assert_eq!(l.percentiles_ms(&[50.0, 99.0, 100.0, 0.0]), vec![Some(0.05), Some(0.099), Some(0.1), Some(0.001)]);
    }

    #[test]
    fn one_sample_is_every_percentile() {
        let mut l = of(&[2500]);
        assert_eq!(l.p50_p99_ms(), (Some(2.5), Some(2.5)));
    }

    #[test]
    fn empty_has_no_percentiles() {
        assert_eq!(Latencies::new().p50_p99_ms(), (None, None));
        assert_eq!(Latencies::new().p50_p99_text(), None);
    }

    #[test]
    fn the_text_gives_both_percentiles() {
        assert_eq!(of(&[2500]).p50_p99_text().as_deref(), Some("p50 2.50 / p99 2.50 ms"));
    }

    #[test]
    fn merge_keeps_all_samples() {
        let mut a = of(&[1, 2]);
        a.merge(of(&[3]));
        assert_eq!(a.len(), 3);
        assert_eq!(a.percentiles_ms(&[100.0]), vec![Some(0.003)]);
    }
}
