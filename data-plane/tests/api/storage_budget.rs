//! The storage limit with single publishes drawn from per-replica storage leases (`budget.lua`):
//! exact across replicas, exact for a batch next to this replica's own lease, safe after a replica
//! crashed, and stored bytes that stay right across flushes.

use crate::helpers::*;
use aqs_core::time::now_ms;
use aqs_engine::NewMessage;
use reqwest::StatusCode;
use serde_json::json;

async fn flush(app: &TestApp) {
    app.state.engine.flush_ledger(false).await.unwrap();
}

/// Two replicas publishing in turn, each from its own lease, store exactly up to the limit.
#[tokio::test]
async fn replicas_fill_the_storage_limit_exactly_and_never_past_it() {
    let a = spawn_app().await;
    let b = spawn_app_in(&a.namespace).await;
    let queue = a.queue_with(|m| m.storage_limit = 10_000).await;
    let hundred = "x".repeat(100);
    let (mut stored, mut refused_in_a_row) = (0, 0);
    for turn in 0..400 {
        let app = if turn % 2 == 0 { &a } else { &b };
        let (status, body) = app.post(&queue.token, &app.url(&queue, "/messages"), &json!({"body": hundred})).await;
        match status {
            StatusCode::CREATED => (stored, refused_in_a_row) = (stored + 1, 0),
            StatusCode::INSUFFICIENT_STORAGE => refused_in_a_row += 1,
            other => panic!("{other}: {body}"),
        }
        if refused_in_a_row == 2 {
            break;
        }
    }
    assert_eq!(stored, 100, "10,000 bytes of room, 100 bytes each");
    flush(&a).await;
    flush(&b).await;
    let stats = a.stats(&queue).await;
    assert_eq!((stats["depth"]["total"].as_u64(), stats["stored_bytes"].as_u64()), (Some(100), Some(10_000)));
}

/// Publishes racing from two replicas never store past the limit, and what one replica's lease
/// held back is still there to fill afterwards.
#[tokio::test]
async fn racing_publishes_never_pass_the_limit() {
    let a = spawn_app().await;
    let b = spawn_app_in(&a.namespace).await;
    let queue = a.queue_with(|m| m.storage_limit = 10_000).await;
    let hundred = json!({"body": "x".repeat(100)});
    let (url_a, url_b) = (a.url(&queue, "/messages"), b.url(&queue, "/messages"));
    let publish = |app: &'static str| {
        let (app, url) = if app == "a" { (&a, &url_a) } else { (&b, &url_b) };
        app.post(&queue.token, url, &hundred)
    };
    let statuses = futures_util::future::join_all((0..300).map(|i| publish(if i % 2 == 0 { "a" } else { "b" }))).await;
    let created = statuses.iter().filter(|(status, _)| *status == StatusCode::CREATED).count();
    assert!(statuses.iter().all(|(s, _)| [StatusCode::CREATED, StatusCode::INSUFFICIENT_STORAGE].contains(s)));
    // At most the undrawn rest of one lease per replica (625 bytes here) is held back.
    assert!((88..=100).contains(&created), "{created} of the 100 that fit");
    let mut more = 0;
    for app in ["a", "b", "a", "b"] {
        while publish(app).await.0 == StatusCode::CREATED {
            more += 1;
        }
    }
    assert_eq!(created + more, 100);
    flush(&a).await;
    flush(&b).await;
    assert_eq!(a.stats(&queue).await["stored_bytes"], 10_000);
}

/// A lowered storage limit holds from the next flush on, whatever lease a replica held.
#[tokio::test]
async fn a_lowered_limit_stops_draws_on_a_lease_granted_under_the_old_one() {
    let app = spawn_app().await;
    let mut queue = app.queue_with(|m| m.storage_limit = 1 << 20).await;
    app.publish_text(&queue, &"x".repeat(100)).await;
    queue.meta.storage_limit = 1_000;
    app.write_meta(&queue.meta).await;
    flush(&app).await;
    let mut more = 0;
    while app.post(&queue.token, &app.url(&queue, "/messages"), &json!({"body": "y".repeat(100)})).await.0
        == StatusCode::CREATED
    {
        more += 1;
        assert!(more <= 9, "past the lowered limit");
    }
    assert_eq!(more, 9, "900 bytes of room under the new limit");
    flush(&app).await;
    assert_eq!(app.stats(&queue).await["stored_bytes"], 1_000);
}

/// A batch that fits is not refused because this replica holds lease it has not drawn.
#[tokio::test]
async fn a_batch_next_to_this_replicas_undrawn_lease_gets_all_the_room() {
    let app = spawn_app().await;
    let queue = app.queue_with(|m| m.storage_limit = 16_000).await;
    app.publish_text(&queue, &"x".repeat(100)).await;
    let lease: String = redis::cmd("HVALS")
        .arg(app.keys.queue(queue.id).budget())
        .query_async::<Vec<String>>(&mut app.redis.clone())
        .await
        .unwrap()
        .concat();
    assert!(lease.starts_with("1000:"), "a lease well beyond the first publish: {lease}");
    let batch: Vec<_> = (0..100).map(|_| json!({"body": "y".repeat(159)})).collect();
    let (status, body) = app.post(&queue.token, &app.url(&queue, "/messages/batch"), &json!({"messages": batch})).await;
    assert_eq!(status, StatusCode::CREATED, "the last 15,900 of 16,000 bytes: {body}");
    let (status, _) = app.post(&queue.token, &app.url(&queue, "/messages"), &json!({"body": "z"})).await;
    assert_eq!(status, StatusCode::INSUFFICIENT_STORAGE);
    assert_eq!(app.stats(&queue).await["stored_bytes"], 16_000);
}

/// A replica killed with its lease out: the lease expires into stored bytes (never fewer than
/// stored, so the limit holds), and the figure is exact again once the queue is empty.
#[tokio::test]
async fn a_crashed_replicas_lease_counts_as_stored_until_the_queue_empties() {
    let a = spawn_app().await;
    let queue = a.queue_with(|m| m.storage_limit = 1 << 20).await;
    let crashed = aqs_engine::Engine::new(a.redis.clone(), a.keys.clone());
    let now = now_ms();
    for i in 0..3 {
        let outcome = crashed.publish(queue.id, &[NewMessage::text(&format!("unflushed {i}"))], now).await.unwrap();
        assert!(matches!(outcome, aqs_engine::PublishOutcome::Stored(_)), "{outcome:?}");
    }
    drop(crashed); // no flush: its three publishes' bytes exist only in its lease
    let later = now + 31_000;
    a.state.engine.sweep(queue.id, later, false).await.unwrap();
    let stats = a.state.engine.stats(queue.id, later).await.unwrap().unwrap();
    assert_eq!(stats.total, 3);
    assert!(stats.stored_bytes >= 3 * 11, "the expired lease counts whole: {}", stats.stored_bytes);
    let budget = a.keys.queue(queue.id).budget();
    let exists: bool = redis::cmd("EXISTS").arg(&budget).query_async(&mut a.redis.clone()).await.unwrap();
    assert!(!exists, "the expired lease is settled");

    let leased = a.consume(&queue, json!({"max_messages": 10})).await;
    let receipts: Vec<String> = leased.iter().map(|m| text(m, "receipt")).collect();
    a.ack(&queue, &receipts.iter().map(String::as_str).collect::<Vec<_>>()).await;
    a.state.engine.sweep(queue.id, later, false).await.unwrap();
    let stats = a.state.engine.stats(queue.id, later).await.unwrap().unwrap();
    assert_eq!((stats.total, stats.stored_bytes), (0, 0));
}

/// A message acked before its publish was flushed: Redis's figure runs behind for a moment, the
/// stats do not, and the flush settles it.
#[tokio::test]
async fn stored_bytes_stay_right_when_an_ack_beats_the_flush() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    flush(&app).await;
    app.publish_text(&queue, "twelve bytes").await;
    app.publish_text(&queue, "kept").await;
    let leased = app.consume(&queue, json!({"max_messages": 1})).await;
    app.ack(&queue, &[text(&leased[0], "receipt").as_str()]).await;
    assert_eq!(app.stats(&queue).await["stored_bytes"], 4);
    flush(&app).await;
    let bytes: i64 = redis::cmd("HGET")
        .arg(app.keys.queue(queue.id).stats())
        .arg("bytes")
        .query_async(&mut app.redis.clone())
        .await
        .unwrap();
    assert_eq!(bytes, 4);
    assert_eq!(app.stats(&queue).await["stored_bytes"], 4);
}

/// A stopping replica gives its leases back instead of leaving them to expire.
#[tokio::test]
async fn the_last_flush_gives_the_leases_back() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    app.publish_text(&queue, "leased").await;
    let budget = app.keys.queue(queue.id).budget();
    let mut conn = app.redis.clone();
    let leases: u64 = redis::cmd("HLEN").arg(&budget).query_async(&mut conn).await.unwrap();
    assert_eq!(leases, 1);
    app.state.engine.flush_ledger(true).await.unwrap();
    let leases: u64 = redis::cmd("HLEN").arg(&budget).query_async(&mut conn).await.unwrap();
    assert_eq!(leases, 0);
    assert_eq!(app.stats(&queue).await["stored_bytes"], 6);
}
