//! Publish → ack times as `ack.lua` records them (`scripts/minutes.lua`): per minute (and, folded
//! by the sweeper, per UTC day) a histogram of log-scale buckets, bucket `k` holding the times in
//! [2^k, 2^(k+1)) ms (bucket 0 also 0 and 1 ms; the last one everything longer). A percentile is
//! read back from the buckets, so it is approximate: it lies in the right bucket, hence within a
//! factor of 2 of the true value, and is placed inside the bucket by the rank's position there on
//! a log scale. No sum is kept, so there is no mean: one HINCRBY per ack call is the whole cost on
//! the ack path (docs/redis-model.md, "Age and latency").

/// Buckets of the histogram: `LATENCY_TOP + 1` in `minutes.lua`.
pub const LATENCY_BUCKETS: usize = 32;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Latency {
    /// How many times fell in each bucket.
    pub buckets: [u64; LATENCY_BUCKETS],
}

impl Latency {
    /// How many acknowledgements were timed.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// The `q` quantile (0 < q ≤ 1), ms, estimated from the buckets; `None` when nothing was
    /// timed. The rank ⌈q·count⌉ names a bucket; within it, the value is placed geometrically by
    /// the rank's position among the bucket's counts, taken at the middle of its share (linearly
    /// in bucket 0, which starts at 0): a bucket of one time reads as its geometric middle.
    pub fn quantile_ms(&self, q: f64) -> Option<u64> {
        let count = self.count();
        if count == 0 {
            return None;
        }
        let rank = ((q * count as f64).ceil() as u64).clamp(1, count);
        let mut before = 0;
        for (k, &n) in self.buckets.iter().enumerate() {
            if n == 0 || before + n < rank {
                before += n;
                continue;
            }
            let within = ((rank - before) as f64 - 0.5) / n as f64;
            let low = (1u64 << k) as f64;
            let value = if k == 0 { 2.0 * within } else { low * 2f64.powf(within) };
            return Some(value.round() as u64);
        }
        None
    }

    /// Adds one recorded count to bucket `k` (a field read back from Redis); an unknown bucket
    /// goes to the last one.
    pub fn add(&mut self, k: usize, n: u64) {
        self.buckets[k.min(LATENCY_BUCKETS - 1)] += n;
    }

    /// Adds every bucket of `other`: the histogram of both together.
    pub fn merge(&mut self, other: &Latency) {
        for (total, n) in self.buckets.iter_mut().zip(other.buckets) {
            *total += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(times: &[u64]) -> Latency {
        let mut l = Latency::default();
        for &ms in times {
            // As minutes.lua's latency_bucket.
            let k = if ms < 2 { 0 } else { 63 - ms.leading_zeros() as usize };
            l.add(k, 1);
        }
        l
    }

    #[test]
    fn empty_has_no_figures() {
        assert_eq!(Latency::default().quantile_ms(0.5), None);
    }

    #[test]
    fn percentiles_stay_within_their_bucket() {
        // 98 fast (~10 ms) and 2 slow (~5 s): p50 is fast, p99 is slow.
        let mut times = vec![10; 98];
        times.extend([5_000, 5_100]);
        let l = of(&times);
        assert_eq!(l.count(), 100);
        let p50 = l.quantile_ms(0.5).unwrap();
        assert!((8..16).contains(&p50), "{p50}");
        let p99 = l.quantile_ms(0.99).unwrap();
        assert!((4_096..8_192).contains(&p99), "{p99}");
        // Every estimate is within a factor of 2 of the truth.
        for ms in [0u64, 1, 3, 17, 999, 60_000, 86_400_000] {
            let got = of(&[ms]).quantile_ms(0.5).unwrap();
            assert!(got <= (ms * 2).max(2) && got * 2 >= ms, "{ms} read back as {got}");
        }
    }

    #[test]
    fn a_bucket_past_the_top_is_counted_in_the_last() {
        let mut l = Latency::default();
        l.add(40, 3);
        assert_eq!(l.buckets[LATENCY_BUCKETS - 1], 3);
    }
}
