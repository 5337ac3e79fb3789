//! Queue statistics (`stats.lua`), the per-day history the console draws and the last hour per
//! minute (`minutes.lua`), each with its publish → ack times and oldest-message age.

use super::Engine;
use crate::error::StorageResult;
use crate::latency::{LATENCY_BUCKETS, Latency};
use aqs_core::ids::QueueId;
use aqs_core::time::utc_day;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueStats {
    /// Available to a consume now (never delivered, or lease expired / released and due).
    pub ready: u64,
    /// Under a live lease.
    pub in_flight: u64,
    /// Held by a publish delay or a nack delay.
    pub delayed: u64,
    pub total: u64,
    pub stored_bytes: u64,
    /// Published-at of the message at the head of the stream (ready or in flight).
    pub oldest_published_ms: Option<u64>,
    pub published_today: u64,
    pub delivered_today: u64,
    pub acked_today: u64,
    pub dead_letters: u64,
    pub storage_limit: u64,
    pub paused: bool,
}

/// One UTC day of counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DailyCount {
    /// `YYYYMMDD`.
    pub day: u32,
    pub published: u64,
    pub delivered: u64,
    pub acked: u64,
    /// Publish → ack times of the day's acknowledgements.
    pub latency: Latency,
    /// The largest of the day's once-a-minute samples of the oldest message's age (ms); `None`
    /// when no sample was taken (nothing waited, or no sweeper ran).
    pub oldest_age_ms: Option<u64>,
}

/// One minute of counters (`scripts/minutes.lua`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MinuteCount {
    /// Start of the minute, ms since the epoch (UTC).
    pub start_ms: u64,
    pub published: u64,
    pub delivered: u64,
    pub acked: u64,
    pub dead_lettered: u64,
    /// Publish → ack times of the minute's acknowledgements.
    pub latency: Latency,
    /// The oldest message's age (ms) as the sweeper sampled it in this minute; `None` when
    /// nothing waited (or no sweeper ran).
    pub oldest_age_ms: Option<u64>,
}

/// Minutes of per-minute history shown (`scripts/minutes.lua` keeps about this many).
pub const MINUTE_HISTORY: u64 = 60;

/// How many days of daily counters the sweeper keeps.
pub const DAILY_HISTORY_DAYS: u64 = 35;

impl Engine {
    /// `None` when the queue does not exist.
    pub async fn stats(&self, queue: QueueId, now_ms: u64) -> StorageResult<Option<QueueStats>> {
        let mut inv = self.invocation(&self.scripts.stats, queue);
        inv.arg(now_ms).arg(utc_day(now_ms));
        let _no_flush = self.ledger.read_gate().await;
        let Some(mut reply) = self.run_found(&inv, "stats.lua").await? else {
            return Ok(None);
        };
        let stream_len = reply.uint()?;
        let leases = reply.uint()?;
        let due_leases = reply.uint()?;
        let future_backoffs = reply.uint()?;
        let delayed = reply.uint()?;
        let stats = QueueStats {
            // Never-delivered entries are the stream minus the PEL (= the lease zset).
            ready: stream_len.saturating_sub(leases) + due_leases,
            in_flight: leases.saturating_sub(due_leases + future_backoffs),
            delayed: delayed + future_backoffs,
            total: stream_len + delayed,
            // Redis's figure may lag behind, or (a drawn publish acked before its flush) run ahead.
            stored_bytes: (reply.int()? + self.ledger.pending_bytes(queue)).max(0) as u64,
            oldest_published_ms: reply.opt_uint()?,
            published_today: plus_pending(reply.uint()?, self.ledger.pending_count(queue, utc_day(now_ms))),
            delivered_today: reply.uint()?,
            acked_today: reply.uint()?,
            dead_letters: reply.uint()?,
            storage_limit: reply.uint()?,
            paused: reply.int()? == 1,
        };
        Ok(Some(stats))
    }

    /// Counters of the last `days` UTC days, oldest first, today last (zeros where nothing
    /// happened). One HMGET; kept for `DAILY_HISTORY_DAYS`.
    pub async fn daily_counts(&self, queue: QueueId, days: u32, now_ms: u64) -> StorageResult<Vec<DailyCount>> {
        let days: Vec<u32> = (0..u64::from(days)).rev().map(|back| utc_day(now_ms - back * 86_400_000)).collect();
        // Per day: the three counts, the oldest age, then the latency buckets the sweeper folded.
        const PER_DAY: usize = 4 + LATENCY_BUCKETS;
        let fields: Vec<String> = days
            .iter()
            .flat_map(|d| {
                ["pub", "del", "ack", "age"]
                    .into_iter()
                    .map(move |kind| format!("{kind}:{d}"))
                    .chain((0..LATENCY_BUCKETS).map(move |k| format!("lh{k}:{d}")))
            })
            .collect();
        if fields.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.conn.clone();
        let q = self.keys.queue(queue);
        let _no_flush = self.ledger.read_gate().await;
        // One snapshot of both hashes: the sweeper moves a minute's buckets from one to the other
        // atomically, so each counts once.
        let (values, minutes): (Vec<Option<u64>>, Vec<(String, i64)>) = redis::pipe()
            .atomic()
            .cmd("HMGET")
            .arg(q.stats())
            .arg(&fields)
            .cmd("HGETALL")
            .arg(q.minutes())
            .query_async(&mut conn)
            .await?;
        let mut out: Vec<DailyCount> = days
            .iter()
            .zip(values.chunks(PER_DAY))
            .map(|(&day, v)| {
                let mut latency = Latency::default();
                for (k, n) in v[4..].iter().enumerate() {
                    latency.add(k, n.unwrap_or(0));
                }
                DailyCount {
                    day,
                    published: plus_pending(v[0].unwrap_or(0), self.ledger.pending_count(queue, day)),
                    delivered: v[1].unwrap_or(0),
                    acked: v[2].unwrap_or(0),
                    latency,
                    oldest_age_ms: v[3],
                }
            })
            .collect();
        // The minutes not folded yet (up to about 70 minutes of them) count in their days.
        for (field, count) in minutes {
            if let Some((Field::LatencyBucket(k), minute)) = parse_field(&field)
                && let Some(day) = out.iter_mut().find(|d| d.day == utc_day(minute * 60_000))
            {
                day.latency.add(k, count.max(0) as u64);
            }
        }
        Ok(out)
    }
}

impl Engine {
    /// The last `MINUTE_HISTORY` minutes, oldest first, the current (partial) minute last, zeros
    /// where nothing happened. One HGETALL; single publishes this process has not
    /// flushed yet count in the current minute.
    pub async fn minute_counts(&self, queue: QueueId, now_ms: u64) -> StorageResult<Vec<MinuteCount>> {
        let now_minute = now_ms / 60_000;
        let first = now_minute + 1 - MINUTE_HISTORY;
        let mut out: Vec<MinuteCount> = (first..=now_minute)
            .map(|minute| MinuteCount { start_ms: minute * 60_000, ..MinuteCount::default() })
            .collect();
        let mut conn = self.conn.clone();
        let _no_flush = self.ledger.read_gate().await;
        let fields: Vec<(String, i64)> =
            redis::cmd("HGETALL").arg(self.keys.queue(queue).minutes()).query_async(&mut conn).await?;
        for (field, count) in fields {
            let Some((kind, minute)) = parse_field(&field) else {
                return Err(anyhow::anyhow!("the minutes hash holds the field {field:?}").into());
            };
            let Some(slot) = minute.checked_sub(first).and_then(|i| out.get_mut(i as usize)) else {
                continue;
            };
            let count = count.max(0) as u64;
            match kind {
                Field::Published => slot.published = count,
                Field::Delivered => slot.delivered = count,
                Field::Acked => slot.acked = count,
                Field::DeadLettered => slot.dead_lettered = count,
                Field::LatencyBucket(k) => slot.latency.add(k, count),
                Field::OldestAge => slot.oldest_age_ms = Some(count),
            }
        }
        if let Some(current) = out.last_mut() {
            current.published = plus_pending(current.published, self.ledger.pending_count(queue, utc_day(now_ms)));
        }
        Ok(out)
    }
}

/// What a field of the minutes hash counts (`scripts/minutes.lua`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Published,
    Delivered,
    Acked,
    DeadLettered,
    LatencyBucket(usize),
    OldestAge,
}

/// A field of the minutes hash: `<kind><minute>`, kind one of `p`, `d`, `a`, `x`, `o` (oldest
/// age), or `lh<k>:<minute>` (latency bucket k).
fn parse_field(field: &str) -> Option<(Field, u64)> {
    if let Some(bucket) = field.strip_prefix("lh") {
        let (k, minute) = bucket.split_once(':')?;
        return Some((Field::LatencyBucket(k.parse().ok()?), minute.parse().ok()?));
    }
    let kind = match field.chars().next()? {
        'p' => Field::Published,
        'd' => Field::Delivered,
        'a' => Field::Acked,
        'x' => Field::DeadLettered,
        'o' => Field::OldestAge,
        _ => return None,
    };
    Some((kind, field[1..].parse().ok()?))
}

/// A Redis counter plus what this process has not flushed yet (negative after a refusal).
fn plus_pending(stored: u64, pending: i64) -> u64 {
    stored.saturating_add_signed(pending)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minute_field_names_its_kind_and_minute() {
        assert_eq!(parse_field("p29934824"), Some((Field::Published, 29_934_824)));
        assert_eq!(parse_field("x1"), Some((Field::DeadLettered, 1)));
        assert_eq!(parse_field("l7"), None);
        assert_eq!(parse_field("o7"), Some((Field::OldestAge, 7)));
        assert_eq!(parse_field("lh12:7"), Some((Field::LatencyBucket(12), 7)));
        assert_eq!(parse_field("lh12"), None);
        assert_eq!(parse_field("q1"), None);
        assert_eq!(parse_field("p"), None);
        assert_eq!(parse_field("p1.5"), None);
    }
}
