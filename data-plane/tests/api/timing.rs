//! What the Overview's age and latency graphs read: each ack's publish → ack time in the minute's
//! histogram (`ack.lua`), folded into its day's by the sweeper's pruning, the sweeper's
//! once-a-minute sample of the oldest message's age and the day's largest (`sweep.lua`).

use crate::helpers::*;
use aqs_core::receipt::Receipt;
use aqs_core::time::{now_ms, utc_day};
use aqs_engine::{ConsumeOutcome, NewMessage};

/// Publishes `n` messages now and leases them: their receipts.
async fn leased(app: &TestApp, queue: &TestQueue, n: usize) -> Vec<Receipt> {
    let engine = &app.state.engine;
    let now = now_ms();
    let batch: Vec<NewMessage> = (0..n).map(|i| NewMessage::text(&format!("m{i}"))).collect();
    engine.publish(queue.id, &batch, now).await.unwrap();
    let ConsumeOutcome::Delivered { deliveries, .. } =
        engine.consume(queue.id, n as u32, 600_000, now, 0).await.unwrap()
    else {
        panic!("nothing delivered");
    };
    deliveries.iter().map(|d| d.receipt(queue.id, u64::MAX)).collect()
}

#[tokio::test]
async fn each_ack_records_its_publish_to_ack_time_per_minute_and_per_day() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let engine = &app.state.engine;
    let receipts = leased(&app, &queue, 3).await;
    // Two acknowledged 5 s after their publish, one 5 minutes after (a later minute).
    let soon = now_ms() + 5_000;
    let late = soon + 300_000;
    assert_eq!(engine.ack(queue.id, &receipts[..2], soon).await.unwrap(), vec![true, true]);
    assert_eq!(engine.ack(queue.id, &receipts[2..], late).await.unwrap(), vec![true]);
    // A receipt acknowledged twice is timed once.
    assert_eq!(engine.ack(queue.id, &receipts[2..], late).await.unwrap(), vec![false]);

    let minutes = engine.minute_counts(queue.id, late).await.unwrap();
    let minute = |at: u64| minutes.iter().find(|m| m.start_ms == at / 60_000 * 60_000).unwrap();
    let first = &minute(soon).latency;
    assert_eq!(first.count(), 2);
    // About 5 s each: [4096, 8192) ms, bucket 12.
    assert_eq!(first.buckets[12], 2, "{:?}", first.buckets);
    let p50 = first.quantile_ms(0.5).unwrap();
    assert!((4_096..8_192).contains(&p50), "{p50}");
    assert_eq!(minute(late).latency.buckets[18], 1, "300 s falls in [2^18, 2^19) ms");

    // The days read the minutes the sweeper has not folded yet.
    let days = engine.daily_counts(queue.id, 2, late).await.unwrap();
    let day = days.iter().map(|d| d.latency.count()).sum::<u64>();
    assert_eq!(day, 3, "the days hold every timed ack");
    if days[1].day == utc_day(soon) {
        let p99 = days[1].latency.quantile_ms(0.99).unwrap();
        assert!((262_144..524_288).contains(&p99), "{p99}");
    }
}

#[tokio::test]
async fn the_sweeper_samples_the_oldest_age_once_a_minute_and_keeps_the_days_largest() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let idle = app.queue().await;
    let engine = &app.state.engine;
    let published = now_ms();
    engine.publish(queue.id, &[NewMessage::text("waits")], published).await.unwrap();
    // Minutes ahead of the real sweeper, which samples the real minute.
    let base = (published / 60_000 + 3) * 60_000;
    engine.sweep(queue.id, base + 1_000, false).await.unwrap().unwrap();
    engine.sweep(queue.id, base + 2_000, false).await.unwrap().unwrap();
    engine.sweep(queue.id, base + 61_000, false).await.unwrap().unwrap();
    engine.sweep(idle.id, base + 1_000, false).await.unwrap().unwrap();

    let minutes = engine.minute_counts(queue.id, base + 61_000).await.unwrap();
    let age_at = |at: u64| minutes.iter().find(|m| m.start_ms == at / 60_000 * 60_000).unwrap().oldest_age_ms;
    let first = age_at(base).expect("a sample");
    // The minute's first sweep took it (the second one left it), about 1 s after `base`.
    let expected = base + 1_000 - published;
    assert!(first.abs_diff(expected) < 500, "{first} vs {expected}");
    let second = age_at(base + 60_000).expect("the next minute's sample");
    assert!(second.abs_diff(expected + 60_000) < 500, "{second}");
    let days = engine.daily_counts(queue.id, 3, base + 61_000).await.unwrap();
    let largest = days.iter().filter_map(|d| d.oldest_age_ms).max();
    assert_eq!(largest, Some(second), "the day keeps its largest sample");

    // Nothing waiting, nothing written: an idle queue's minutes expire as before.
    let idle_minutes = engine.minute_counts(idle.id, base + 1_000).await.unwrap();
    assert!(idle_minutes.iter().all(|m| m.oldest_age_ms.is_none()));
}

#[tokio::test]
async fn pruning_drops_old_latency_and_age_fields_with_the_counts() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let now = now_ms();
    let (old_minute, recent_minute) = (now / 60_000 - 90, now / 60_000 - 5);
    let (old_day, recent_day) = (utc_day(now - 40 * 86_400_000), utc_day(now - 10 * 86_400_000));
    let q = app.keys.queue(queue.id);
    let mut conn = app.redis.clone();
    let minute_fields: Vec<String> = [old_minute, recent_minute]
        .iter()
        .flat_map(|m| [format!("lh3:{m}"), format!("lh5:{m}"), format!("o{m}"), format!("a{m}")])
        .collect();
    let day_fields: Vec<String> = [old_day, recent_day]
        .iter()
        .flat_map(|d| [format!("ack:{d}"), format!("lh3:{d}"), format!("age:{d}")])
        .collect();
    for (key, fields) in [(q.minutes(), &minute_fields), (q.stats(), &day_fields)] {
        let mut cmd = redis::cmd("HSET");
        cmd.arg(&key);
        for f in fields {
            cmd.arg(f).arg(7);
        }
        let _: () = cmd.query_async(&mut conn).await.unwrap();
    }
    let today = |days: &[aqs_engine::DailyCount]| days.last().unwrap().latency.clone();
    let before = today(&app.state.engine.daily_counts(queue.id, 14, now).await.unwrap());
    app.state.engine.sweep(queue.id, now, true).await.unwrap().unwrap();
    // The old minute's buckets moved to its day: the day reads the same before and after.
    let after = app.state.engine.daily_counts(queue.id, 14, now).await.unwrap();
    if utc_day(old_minute * 60_000) == utc_day(now) {
        assert_eq!(today(&after), before, "a folded minute counts once");
    }
    let folded: Option<u64> = redis::cmd("HGET")
        .arg(q.stats())
        .arg(format!("lh5:{}", utc_day(old_minute * 60_000)))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(folded, Some(7), "the old minute's bucket 5 is folded into its day");
    let left: Vec<String> = redis::cmd("HKEYS").arg(q.minutes()).query_async(&mut conn).await.unwrap();
    assert!(minute_fields[..4].iter().all(|f| !left.contains(f)), "old minutes stay: {left:?}");
    assert!(minute_fields[4..].iter().all(|f| left.contains(f)), "recent minutes gone: {left:?}");
    let left: Vec<String> = redis::cmd("HKEYS").arg(q.stats()).query_async(&mut conn).await.unwrap();
    assert!(day_fields[..3].iter().all(|f| !left.contains(f)), "old days stay: {left:?}");
    assert!(day_fields[3..].iter().all(|f| left.contains(f)), "recent days gone: {left:?}");
    // And they read back: the recent minute's sum and bucket, the recent day's age.
    let minutes = app.state.engine.minute_counts(queue.id, now).await.unwrap();
    let recent = minutes.iter().find(|m| m.start_ms == recent_minute * 60_000).unwrap();
    assert_eq!((recent.latency.buckets[3], recent.acked, recent.oldest_age_ms), (7, 7, Some(7)));
    assert_eq!((after[3].latency.buckets[3], after[3].oldest_age_ms), (7, Some(7)));
}

/// The ack script's cost as Redis counts it (`INFO commandstats`, EVALSHA's usec_per_call): 20,000
/// messages published and leased first, then acknowledged 1, 10 or 100 receipts a call, with only
/// the acks counted. Ignored: it resets the test Redis's statistics, so run it alone on a private
/// Redis, on two commits to compare them (docs/redis-model.md, "Age and latency").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn ack_script_cost() {
    let app = spawn_app().await;
    // No sweeper: its calls are EVALSHA too.
    app.shutdown();
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let engine = &app.state.engine;
    for batch in [1usize, 10, 100] {
        let queue = app.queue().await;
        let now = now_ms();
        for chunk in 0..200 {
            let messages: Vec<NewMessage> =
                (0..100).map(|i| NewMessage::text(&format!("message {chunk}-{i}"))).collect();
            engine.publish(queue.id, &messages, now).await.unwrap();
        }
        let mut deliveries = Vec::new();
        while deliveries.len() < 20_000 {
            let ConsumeOutcome::Delivered { deliveries: more, .. } =
                engine.consume(queue.id, 100, 3_600_000, now_ms(), 0).await.unwrap()
            else {
                panic!("nothing delivered");
            };
            deliveries.extend(more);
        }
        let mut conn = app.redis.clone();
        let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query_async(&mut conn).await.unwrap();
        for chunk in deliveries.chunks(batch) {
            let receipts: Vec<Receipt> = chunk.iter().map(|d| d.receipt(queue.id, u64::MAX)).collect();
            let hints: Vec<_> = chunk.iter().map(|d| Some(d.hint)).collect();
            let acked = engine.ack_hinted(queue.id, &receipts, &hints, now_ms()).await.unwrap();
            assert!(acked.iter().all(|&a| a));
        }
        let info: String = redis::cmd("INFO").arg("commandstats").query_async(&mut conn).await.unwrap();
        let line = info.lines().find(|l| l.starts_with("cmdstat_evalsha:")).expect("EVALSHA counted");
        println!("ack of {batch:>3} receipts a call: {line}");
    }
}
