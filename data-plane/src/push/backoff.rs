//! When a failed push is tried again: a numeric `Retry-After` (seconds, capped at 12 h) when the
//! handler gave one, else exponential backoff with jitter. An HTTP-date `Retry-After` is ignored, as
//! `docs/push-delivery.md` says.

use aqs_core::push::RETRY_AFTER_MAX_SECS;
use std::time::Duration;

/// The first retry waits about this long; each further attempt doubles it.
pub const BASE: Duration = Duration::from_secs(1);
/// No default backoff is longer than this.
pub const CAP: Duration = Duration::from_secs(3600);

/// The default delay after the delivery numbered `attempts` (1 = the first) failed: "equal jitter",
/// a uniformly random point in the upper half of `BASE · 2^(attempts-1)` (capped), so retries of many
/// messages that failed together spread out.
pub fn delay(attempts: u32) -> Duration {
    let exp = attempts.saturating_sub(1).min(20);
    let full = BASE.saturating_mul(1 << exp).min(CAP);
    let half = full / 2;
    half + half.mul_f64(rand::random::<f64>())
}

/// A `Retry-After` header that is a whole number of seconds, capped at 12 h; `None` for an
/// HTTP date or anything else.
pub fn retry_after(value: Option<&str>) -> Option<Duration> {
    let text = value?.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs = text.parse::<u64>().unwrap_or(RETRY_AFTER_MAX_SECS).min(RETRY_AFTER_MAX_SECS);
    Some(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_in_the_upper_half() {
        for attempts in 1..=6 {
            let full = BASE * (1 << (attempts - 1));
            let d = delay(attempts);
            assert!(d >= full / 2 && d <= full, "{attempts}: {d:?}");
        }
        assert!(delay(40) <= CAP);
    }

    #[test]
    fn retry_after_takes_seconds_only() {
        assert_eq!(retry_after(Some("7")), Some(Duration::from_secs(7)));
        assert_eq!(retry_after(Some(" 0 ")), Some(Duration::ZERO));
        assert_eq!(retry_after(Some("999999999999999999999")), Some(Duration::from_secs(RETRY_AFTER_MAX_SECS)));
        assert_eq!(retry_after(Some("86400")), Some(Duration::from_secs(RETRY_AFTER_MAX_SECS)));
        assert_eq!(retry_after(Some("Wed, 21 Oct 2015 07:28:00 GMT")), None);
        assert_eq!(retry_after(Some("-1")), None);
        assert_eq!(retry_after(None), None);
    }
}
