//! How numbers, sizes, durations and instants read on the pages.

use aqs_core::time::rfc3339;

/// 1536 → "1.5 KiB"; whole numbers print without decimals ("1 GiB").
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 || value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A duration in words: "45 s", "12 min", "3 h 5 min", "2 d 4 h".
pub(crate) fn duration_secs(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs} s"),
        60..3600 => format!("{} min", secs / 60),
        3600..86_400 => match secs % 3600 / 60 {
            0 => format!("{} h", secs / 3600),
            min => format!("{} h {min} min", secs / 3600),
        },
        _ => match secs % 86_400 / 3600 {
            0 => format!("{} d", secs / 86_400),
            h => format!("{} d {h} h", secs / 86_400),
        },
    }
}

/// A time in milliseconds, short enough for an axis: "0", "350 ms", "1.5 s", "12 s", "5 min",
/// "3 h 5 min", "2 d".
pub(crate) fn millis(ms: u64) -> String {
    match ms {
        0 => "0".into(),
        1..1_000 => format!("{ms} ms"),
        1_000..10_000 if !ms.is_multiple_of(1_000) => format!("{:.1} s", ms as f64 / 1_000.0),
        1_000..60_000 => format!("{} s", ms / 1_000),
        _ => duration_secs(ms / 1_000),
    }
}

/// 12345 → "12,345".
pub(crate) fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// 2900 cents → "$29.00".
pub(crate) fn cents(n: u64) -> String {
    format!("${}.{:02}", count(n / 100), n % 100)
}

/// An instant as pages show it, and as the `datetime` attribute of `<time>`.
#[derive(Clone, Debug)]
pub(crate) struct Instant {
    /// `2026-11-03T12:00:00Z`
    pub machine: String,
    /// `2026-11-03 12:00:00 UTC`
    pub human: String,
}

pub(crate) fn instant(ms: u64) -> Instant {
    let machine = rfc3339(ms);
    let human = format!("{} UTC", machine.trim_end_matches('Z').replacen('T', " ", 1));
    Instant { machine, human }
}

/// A stored timestamp as [`instant`] shows it (one before 1970 shows as 1970).
pub(crate) fn instant_at(at: &chrono::DateTime<chrono::Utc>) -> Instant {
    instant(at.timestamp_millis().max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_durations_and_counts_read_well() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(1 << 30), "1 GiB");
        assert_eq!(duration_secs(45), "45 s");
        assert_eq!(duration_secs(3600 * 3 + 300), "3 h 5 min");
        assert_eq!(duration_secs(86_400 * 2), "2 d");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(millis(0), "0");
        assert_eq!(millis(350), "350 ms");
        assert_eq!(millis(1_500), "1.5 s");
        assert_eq!(millis(12_345), "12 s");
        assert_eq!(millis(900_000), "15 min");
        assert_eq!(count(999), "999");
        assert_eq!(instant(1_793_707_200_000).human, "2026-11-03 12:00:00 UTC");
    }
}
