//! Wall-clock helpers. Redis scripts take the time as an argument (scripts must be deterministic
//! about it and every replica must agree), so the data plane reads the clock here, once per call.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// The UTC day of a millisecond timestamp as `YYYYMMDD`, the suffix of the daily stats counters.
pub fn utc_day(ms: u64) -> u32 {
    let days = (ms / 86_400_000) as i64;
    let (y, m, d) = civil_from_days(days);
    (y as u32) * 10_000 + m * 100 + d
}

/// RFC 3339 in UTC with second precision, as the API shows timestamps (`2026-11-03T12:00:00Z`).
/// Every publish answers with two of these: written digit by digit, not with `format!`.
pub fn rfc3339(ms: u64) -> String {
    let secs = ms / 1000;
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    let mut out = *b"0000-00-00T00:00:00Z";
    let mut put = |at: usize, width: usize, mut value: u64| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + (value % 10) as u8;
            value /= 10;
        }
    };
    put(0, 4, y.clamp(0, 9999) as u64);
    put(5, 2, u64::from(m));
    put(8, 2, u64::from(d));
    put(11, 2, rem / 3600);
    put(14, 2, rem % 3600 / 60);
    put(17, 2, rem % 60);
    std::str::from_utf8(&out).expect("ASCII digits").to_owned()
}

/// Howard Hinnant's days-to-civil algorithm: no calendar crate on the hot path.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        // 2026-11-03T12:00:00Z
        let ms = 1_793_707_200_000;
        assert_eq!(rfc3339(ms), "2026-11-03T12:00:00Z");
        assert_eq!(utc_day(ms), 20261103);
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_day(951_782_400_000), 20000229);
    }
}
