//! Leases: expiry and redelivery, stale receipts, nack delays, receipts of another queue. Expiries
//! and delays are reached by setting the engine's clock (every engine call takes `now_ms`), never by
//! sleeping.

use crate::helpers::*;
use aqs_core::ids::{MessageId, QueueId};
use aqs_core::receipt::{Receipt, StreamId};
use aqs_core::time::now_ms;
use aqs_engine::{ConsumeOutcome, Delivery, Engine, NackResult};
use serde_json::json;

/// Leases up to `max` messages for `lease_ms` (0: the queue's visibility) at the test's clock
/// `now`: the engine takes the time from its caller, so expiries are reached by moving the clock,
/// not by sleeping.
async fn leased_up_to(
    engine: &Engine,
    queue: QueueId,
    max: u32,
    lease_ms: u64,
    now: u64,
) -> (Vec<Delivery>, u64, Option<u64>) {
    match engine.consume(queue, max, lease_ms, now, 0).await.unwrap() {
        ConsumeOutcome::Delivered { deliveries, lease_ms, next_due_ms } => (deliveries, lease_ms, next_due_ms),
        other => panic!("{other:?}"),
    }
}

/// [`leased_up_to`] 10 messages.
async fn leased(engine: &Engine, queue: QueueId, lease_ms: u64, now: u64) -> (Vec<Delivery>, u64, Option<u64>) {
    leased_up_to(engine, queue, 10, lease_ms, now).await
}

#[tokio::test]
async fn an_expired_lease_is_redelivered_and_the_old_receipt_is_refused() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let id = app.publish_text(&queue, "work").await;
    let (engine, t0) = (&app.state.engine, now_ms());
    let (first, ..) = leased(engine, queue.id, 1000, t0).await;
    assert_eq!(first[0].attempts, 1);
    assert!(leased(engine, queue.id, 30_000, t0 + 500).await.0.is_empty(), "leased: invisible");
    let (second, ..) = leased(engine, queue.id, 30_000, t0 + 1001).await;
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].message.to_string(), id);
    assert_eq!(second[0].attempts, 2);
    // The first delivery's receipt cannot ack (or nack) the second delivery.
    let stale = first[0].receipt(queue.id, t0 + 1000);
    assert_eq!(engine.ack(queue.id, std::slice::from_ref(&stale), t0 + 1002).await.unwrap(), vec![false]);
    let nacked = engine.nack(queue.id, &[stale], 0, "", t0 + 1002).await.unwrap();
    assert_eq!(nacked, vec![NackResult::LeaseLost]);
    let current = second[0].receipt(queue.id, t0 + 31_001);
    assert_eq!(engine.ack(queue.id, &[current], t0 + 1003).await.unwrap(), vec![true]);
}

#[tokio::test]
async fn an_expired_but_not_redelivered_lease_can_still_be_acked() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    app.publish_text(&queue, "slow work").await;
    let (engine, t0) = (&app.state.engine, now_ms());
    let (leased_now, ..) = leased(engine, queue.id, 1000, t0).await;
    let late = leased_now[0].receipt(queue.id, t0 + 1000);
    assert_eq!(engine.ack(queue.id, &[late], t0 + 1200).await.unwrap(), vec![true]);
    assert!(leased(engine, queue.id, 0, t0 + 1300).await.0.is_empty());
}

#[tokio::test]
async fn a_nack_returns_the_message_after_its_delay() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    app.publish_text(&queue, "retry me").await;
    let (engine, t0) = (&app.state.engine, now_ms());
    let (leased_now, ..) = leased(engine, queue.id, 0, t0).await;
    let receipt = leased_now[0].receipt(queue.id, t0 + 30_000);
    let nacked = engine.nack(queue.id, std::slice::from_ref(&receipt), 2000, "db down", t0).await.unwrap();
    assert_eq!(nacked, vec![NackResult::Returned]);
    // Released: the receipt cannot ack any more, and the message is delayed, not in flight.
    assert_eq!(engine.ack(queue.id, &[receipt], t0 + 1).await.unwrap(), vec![false]);
    let depth = app.stats(&queue).await["depth"].clone();
    assert_eq!(depth, json!({"ready": 0, "in_flight": 0, "delayed": 1, "total": 1}));
    // Not before its delay; a poll that finds nothing is told when to look again.
    let (early, _, next_due_ms) = leased(engine, queue.id, 0, t0 + 1999).await;
    assert!(early.is_empty());
    assert_eq!(next_due_ms, Some(t0 + 2000));
    let (again, ..) = leased(engine, queue.id, 0, t0 + 2000).await;
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].attempts, 2);
    // A nack without delay makes it available at once.
    let receipt = again[0].receipt(queue.id, t0 + 32_000);
    engine.nack(queue.id, &[receipt], 0, "", t0 + 2001).await.unwrap();
    let (third, ..) = leased(engine, queue.id, 0, t0 + 2001).await;
    assert_eq!(third[0].attempts, 3);
}

#[tokio::test]
async fn a_poll_is_told_when_its_first_lease_or_delay_falls_due() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let before = now_ms();
    app.publish_text(&queue, "now").await;
    app.publish(&queue, json!({"body": "later", "delay_seconds": 60})).await;
    let (engine, t0) = (&app.state.engine, now_ms());
    // The only lease is the one just taken.
    let (first, _, next_due_ms) = leased(engine, queue.id, 2000, t0).await;
    assert_eq!(first.len(), 1);
    assert_eq!(next_due_ms, Some(t0 + 2000));
    // Leased for longer, the delay comes first.
    let (first, _, _) = leased(engine, queue.id, 120_000, t0 + 2000).await;
    assert_eq!(first[0].attempts, 2);
    let (none, _, next_due_ms) = leased(engine, queue.id, 0, t0 + 2001).await;
    assert!(none.is_empty());
    let delay_due = next_due_ms.unwrap();
    assert!(
        (before + 60_000..=t0 + 60_000).contains(&delay_due),
        "{delay_due} not 60 s after publishing at {before}..{t0}"
    );
    // Once due, the delayed message is delivered, and its lease is what falls due next.
    let (later, _, next_due_ms) = leased(engine, queue.id, 1000, delay_due).await;
    assert_eq!(later.len(), 1);
    assert!(later[0].body == "later".as_bytes());
    assert_eq!(next_due_ms, Some(delay_due + 1000));
    // Both leases expired: both are delivered again, and nothing falls due before the new leases.
    let (again, lease_ms, next_due_ms) = leased(engine, queue.id, 0, t0 + 130_000).await;
    assert_eq!(again.len(), 2);
    assert_eq!(next_due_ms, Some(t0 + 130_000 + lease_ms));
}

#[tokio::test]
async fn nack_each_returns_each_message_after_its_own_delay() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let soon = app.publish_text(&queue, "soon").await;
    let later = app.publish_text(&queue, "later").await;
    let (engine, t0) = (&app.state.engine, now_ms());
    let (leased_now, ..) = leased(engine, queue.id, 0, t0).await;
    let receipt_of = |body: &str| {
        let d = leased_now.iter().find(|d| d.body == body.as_bytes()).unwrap();
        d.receipt(queue.id, t0 + 30_000)
    };
    let retries = [(receipt_of("soon"), 1000), (receipt_of("later"), 3000)];
    let nacked = engine.nack_each(queue.id, &retries, "handler down", t0).await.unwrap();
    assert_eq!(nacked, vec![NackResult::Returned, NackResult::Returned]);
    let (first, _, next_due_ms) = leased(engine, queue.id, 0, t0 + 1000).await;
    assert_eq!(first.iter().map(|d| d.message.to_string()).collect::<Vec<_>>(), [soon]);
    assert_eq!(next_due_ms, Some(t0 + 3000), "the other is due at its own delay");
    assert!(leased(engine, queue.id, 0, t0 + 2999).await.0.is_empty(), "not before its own delay");
    let (second, ..) = leased(engine, queue.id, 0, t0 + 3000).await;
    assert_eq!(second.iter().map(|d| d.message.to_string()).collect::<Vec<_>>(), [later]);
    assert_eq!(second[0].attempts, 2);
    // A receipt nacked twice is refused the second time.
    assert_eq!(
        engine.nack_each(queue.id, &retries[..1], "again", t0 + 3001).await.unwrap(),
        vec![NackResult::LeaseLost]
    );
}

#[tokio::test]
async fn a_receipt_of_another_queue_is_invalid() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let other = app.queue().await;
    app.publish_text(&other, "theirs").await;
    let leased = app.consume(&other, json!({})).await;
    let receipt = text(&leased[0], "receipt");
    let body = app.ack(&queue, &[&receipt]).await;
    assert_eq!(body["acked"], 0);
    assert_eq!(body["failed"][0]["error"], "receipt_invalid");
    let body = app.nack(&queue, json!({"receipts": [receipt]})).await;
    assert_eq!(body["failed"][0]["error"], "receipt_invalid");
    assert_eq!(app.ack(&other, &[&receipt]).await["acked"], 1, "untouched in its own queue");
}

#[tokio::test]
async fn consume_visibility_defaults_to_the_queue_setting() {
    let app = spawn_app().await;
    let queue = app.queue_with(|m| m.visibility_ms = 1000).await;
    app.publish_text(&queue, "short lease").await;
    let (engine, t0) = (&app.state.engine, now_ms());
    let (first, lease_ms, _) = leased(engine, queue.id, 0, t0).await;
    assert_eq!((first.len(), lease_ms), (1, 1000));
    assert!(leased(engine, queue.id, 0, t0 + 999).await.0.is_empty());
    let (again, ..) = leased(engine, queue.id, 0, t0 + 1001).await;
    assert_eq!(again[0].attempts, 2);
}

#[tokio::test]
async fn one_ack_batch_frees_each_message_once_and_keeps_idempotency_for_a_day() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    app.publish_text(&queue, "one").await;
    app.publish(&queue, json!({"body": "two", "idempotency_key": "k-2"})).await;
    app.publish(&queue, json!({"body": "three", "attributes": {"a": "b"}})).await;
    let leased = app.consume(&queue, json!({"max_messages": 10})).await;
    assert_eq!(leased.len(), 3);
    let receipts = receipts(&leased);
    // The same receipt twice in one batch acknowledges once.
    let acked = app.ack(&queue, &[&receipts[0], &receipts[0], &receipts[1], &receipts[2]]).await;
    assert_eq!(acked["acked"], 3);
    assert_eq!(acked["failed"].as_array().map(Vec::len), Some(1));
    assert_eq!(acked["failed"][0]["error"], "lease_lost");
    let stats = app.stats(&queue).await;
    assert_eq!(stats["stored_bytes"], 0);
    assert_eq!(stats["depth"]["total"], 0);
    // The acknowledged message's idempotency key still answers with it (for 24 h after publish).
    let again = app.publish(&queue, json!({"body": "two", "idempotency_key": "k-2"})).await;
    assert_eq!(again["duplicate"], true);
    assert_eq!(again["id"], leased[1]["id"]);
}

/// ack.lua deletes with XTRIM when nothing older than the newest acknowledged entry is still
/// leased, and with XDEL otherwise: acknowledgements in any order delete exactly what they
/// acknowledge, never an older lease or a newer ready message.
#[tokio::test]
async fn acks_in_any_order_delete_exactly_the_acknowledged_messages() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    for i in 0..8 {
        app.publish_text(&queue, &format!("m{i}")).await;
    }
    let a = receipts(&app.consume(&queue, json!({"max_messages": 2})).await);
    let b = receipts(&app.consume(&queue, json!({"max_messages": 2})).await);
    let c = receipts(&app.consume(&queue, json!({"max_messages": 2})).await);
    let depth = |stats: serde_json::Value| {
        let d = &stats["depth"];
        (d["total"].as_u64().unwrap(), d["in_flight"].as_u64().unwrap(), d["ready"].as_u64().unwrap())
    };

    // A newer batch while an older one is leased, then the newer half of the older batch.
    assert_eq!(app.ack(&queue, &[&b[0], &b[1]]).await["acked"], 2);
    assert_eq!(depth(app.stats(&queue).await), (6, 4, 2));
    assert_eq!(app.ack(&queue, &[&a[1]]).await["acked"], 1);
    assert_eq!(depth(app.stats(&queue).await), (5, 3, 2));
    // The oldest lease, with only newer ones left; then the newest, with nothing older leased.
    assert_eq!(app.ack(&queue, &[&a[0]]).await["acked"], 1);
    assert_eq!(depth(app.stats(&queue).await), (4, 2, 2));
    assert_eq!(app.ack(&queue, &[&c[1], &c[0]]).await["acked"], 2);
    assert_eq!(depth(app.stats(&queue).await), (2, 0, 2));

    let rest = app.consume(&queue, json!({"max_messages": 10})).await;
    let bodies: Vec<Vec<u8>> = rest.iter().map(decode_body).collect();
    assert_eq!(bodies, [b"m6".to_vec(), b"m7".to_vec()]);
    assert!(rest.iter().all(|m| m["attempts"] == 1), "{rest:?}");
    assert_eq!(app.ack(&queue, &[&a[0], &c[0]]).await["acked"], 0, "acknowledged already");
}

/// The stream's `max-deleted-entry-id`: XDEL raises it, a trim from the head leaves it.
async fn max_deleted(app: &TestApp, queue: QueueId) -> String {
    let info: Vec<redis::Value> = redis::cmd("XINFO")
        .arg("STREAM")
        .arg(app.keys.queue(queue).stream())
        .query_async(&mut app.redis.clone())
        .await
        .unwrap();
    let at =
        info.iter().position(|v| matches!(v, redis::Value::BulkString(b) if b == b"max-deleted-entry-id")).unwrap();
    redis::from_redis_value(info[at + 1].clone()).unwrap()
}

/// How many records the consumer group's PEL holds.
async fn pel_size(app: &TestApp, queue: QueueId) -> u64 {
    let summary: (u64, redis::Value, redis::Value, redis::Value) = redis::cmd("XPENDING")
        .arg(app.keys.queue(queue).stream())
        .arg("g")
        .query_async(&mut app.redis.clone())
        .await
        .unwrap();
    summary.0
}

async fn stream_len(app: &TestApp, queue: QueueId) -> u64 {
    redis::cmd("XLEN").arg(app.keys.queue(queue).stream()).query_async(&mut app.redis.clone()).await.unwrap()
}

/// Acknowledges `deliveries` with the hints their receipts carry (their runs among them).
async fn ack_hinted(engine: &Engine, queue: QueueId, deliveries: &[&Delivery], now: u64) -> Vec<bool> {
    let receipts: Vec<_> = deliveries.iter().map(|d| d.receipt(queue, now + 3_600_000)).collect();
    let hints: Vec<_> = deliveries.iter().map(|d| Some(d.hint)).collect();
    engine.ack_hinted(queue, &receipts, &hints, now).await.unwrap()
}

/// A consume's first deliveries form a run: acknowledged whole at the stream's head, they are
/// trimmed in one command (XDEL would raise the stream's max-deleted id). Anywhere else, or with
/// one of them no longer the receipt's, the ack deletes exactly what it acknowledged by id.
#[tokio::test]
async fn a_run_acknowledged_whole_at_the_head_is_trimmed_and_nothing_else_is() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    for i in 0..8 {
        app.publish_text(&queue, &format!("m{i}")).await;
    }
    let (engine, t0) = (&app.state.engine, now_ms());
    let lease = |max: u32, now: u64| async move { leased_up_to(engine, queue.id, max, 30_000, now).await.0 };
    let (a, b, c) = (lease(2, t0).await, lease(2, t0).await, lease(2, t0).await);
    assert!(a.iter().all(|d| d.hint.run.is_some_and(|r| r.first == a[0].stream_id && r.len == 2)), "{a:?}");

    assert_eq!(ack_hinted(engine, queue.id, &[&a[1], &a[0]], t0).await, [true, true]);
    assert_eq!((stream_len(&app, queue.id).await, max_deleted(&app, queue.id).await), (6, "0-0".to_owned()));
    // A whole run behind a lease: deleted by id.
    assert_eq!(ack_hinted(engine, queue.id, &[&c[0], &c[1]], t0).await, [true, true]);
    assert_eq!((stream_len(&app, queue.id).await, max_deleted(&app, queue.id).await), (4, c[1].stream_id.to_string()));

    // b's leases run out and one of them is delivered again: b's receipts name their run whole,
    // but one is stale, so nothing is trimmed and the redelivered message stays.
    let again = lease(1, t0 + 30_001).await;
    assert_eq!((again.len(), again[0].attempts, again[0].hint.run), (1, 2, None));
    let acked = ack_hinted(engine, queue.id, &[&b[0], &b[1]], t0 + 30_002).await;
    assert_eq!(acked.iter().filter(|ok| **ok).count(), 1, "{acked:?}");
    assert!(!acked[b.iter().position(|d| d.stream_id == again[0].stream_id).unwrap()], "the redelivered one is lost");
    assert_eq!(stream_len(&app, queue.id).await, 3);
    assert_eq!(ack_hinted(engine, queue.id, &[&again[0]], t0 + 30_003).await, [true]);

    let rest = lease(10, t0 + 30_004).await;
    assert_eq!(rest.iter().map(|d| d.body.clone()).collect::<Vec<_>>(), [b"m6".to_vec(), b"m7".to_vec()]);
    assert_eq!(ack_hinted(engine, queue.id, &[&rest[0], &rest[1]], t0 + 30_005).await, [true, true]);
    assert_eq!(stream_len(&app, queue.id).await, 0);
}

/// A receipt named twice makes its run look whole to the caller (as many receipts as entries): the
/// ack acknowledges it once, trims nothing, and the run's other entry stays until it is
/// acknowledged itself.
#[tokio::test]
async fn a_receipt_named_twice_never_trims_its_run() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    for i in 0..2 {
        app.publish_text(&queue, &format!("m{i}")).await;
    }
    let (engine, t0) = (&app.state.engine, now_ms());
    let a = leased_up_to(engine, queue.id, 2, 30_000, t0).await.0;
    assert!(a.iter().all(|d| d.hint.run.is_some_and(|r| r.len == 2)), "{a:?}");

    assert_eq!(ack_hinted(engine, queue.id, &[&a[0], &a[0]], t0).await, [true, false]);
    assert_eq!(stream_len(&app, queue.id).await, 1, "only the acknowledged entry is gone");
    assert_eq!(ack_hinted(engine, queue.id, &[&a[1]], t0).await, [true]);
    assert_eq!(stream_len(&app, queue.id).await, 0);
}

/// A queue leased by an earlier version holds its leases in the consumer group's PEL: the engine
/// still acknowledges, extends, nacks and redelivers them with their counts, and moves each out
/// of the PEL as it settles it.
#[tokio::test]
async fn leases_an_earlier_version_left_in_the_pel_are_still_honoured() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    for i in 0..3 {
        app.publish_text(&queue, &format!("old{i}")).await;
    }
    let (engine, t0, keys) = (&app.state.engine, now_ms(), app.keys.queue(queue.id));
    let mut conn = app.redis.clone();
    // The earlier consume: XREADGROUP with a PEL record (delivery counter 1) and the lease.
    let read: redis::streams::StreamReadReply = redis::cmd("XREADGROUP")
        .arg("GROUP")
        .arg("g")
        .arg("c")
        .arg("COUNT")
        .arg(3)
        .arg("STREAMS")
        .arg(keys.stream())
        .arg(">")
        .query_async(&mut conn)
        .await
        .unwrap();
    // Their deliveries so far: the first three times (two redeliveries, each an XCLAIM that
    // bumped its counter), the second twice, the third once.
    let mut receipts = Vec::new();
    for (entry, delivery) in read.keys[0].ids.iter().zip([3u32, 2, 1]) {
        let _: () =
            redis::cmd("ZADD").arg(keys.lease()).arg(t0 + 30_000).arg(&entry.id).query_async(&mut conn).await.unwrap();
        for _ in 1..delivery {
            let _: redis::Value = redis::cmd("XCLAIM")
                .arg(keys.stream())
                .arg("g")
                .arg("c")
                .arg(0)
                .arg(&entry.id)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
        let message: String = entry.get("id").unwrap();
        receipts.push(Receipt {
            queue: queue.id,
            stream_id: StreamId::parse(&entry.id).unwrap(),
            message: MessageId::parse(&message).unwrap(),
            delivery,
            expires_at_ms: t0 + 3_600_000,
        });
    }
    assert_eq!(pel_size(&app, queue.id).await, 3);

    assert_eq!(engine.ack(queue.id, &receipts[..1], t0 + 1).await.unwrap(), [true]);
    assert_eq!(engine.extend(queue.id, &receipts[1..2], &[None], 60_000, t0 + 2).await.unwrap(), [true]);
    assert_eq!(engine.nack(queue.id, &receipts[1..2], 0, "again", t0 + 3).await.unwrap(), [NackResult::Returned]);
    assert_eq!(pel_size(&app, queue.id).await, 2);

    // The nacked one is due now, the third once its lease runs out: both come back, counted.
    let (again, ..) = leased(engine, queue.id, 30_000, t0 + 30_001).await;
    let mut attempts: Vec<_> = again.iter().map(|d| (d.stream_id, d.attempts)).collect();
    attempts.sort_by_key(|(sid, _)| receipts.iter().position(|r| r.stream_id == *sid));
    assert_eq!(attempts.iter().map(|(_, n)| *n).collect::<Vec<_>>(), [3, 2], "{again:?}");
    assert_eq!(pel_size(&app, queue.id).await, 0, "moved out of the PEL as they were redelivered");
    assert_eq!(engine.ack(queue.id, &receipts[2..], t0 + 30_002).await.unwrap(), [false], "stale");
    assert_eq!(ack_hinted(engine, queue.id, &[&again[0], &again[1]], t0 + 30_003).await, [true, true]);
    assert_eq!(stream_len(&app, queue.id).await, 0);
}
