//! Publish, idempotency, batches, delays, and the stats after a known sequence.

use crate::helpers::*;
use aqs_core::time::now_ms;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn is_rfc3339(text: &str) -> bool {
    text.len() == 20 && text.ends_with('Z') && text.as_bytes()[10] == b'T'
}

#[tokio::test]
async fn publish_consume_ack_round_trip() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let (status, published) = app
        .post(
            &queue.token,
            &app.url(&queue, "/messages"),
            &json!({"body": "{\"type\":\"resize\"}", "attributes": {"b": 2, "a": "x"}, "group_id": "user-42"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{published}");
    let id = text(&published, "id");
    assert_eq!(id.len(), 32);
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    assert!(is_rfc3339(&text(&published, "published_at")));
    assert_eq!(published["published_at"], published["available_at"]);
    assert_eq!(published["duplicate"], false);

    let binary: Vec<u8> = (0..=255u8).collect();
    let encoded = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &binary);
    let binary_id = text(
        &app.publish(&queue, json!({"body_base64": encoded, "content_type": "application/octet-stream"})).await,
        "id",
    );

    let messages = app.consume(&queue, json!({"max_messages": 10})).await;
    assert_eq!(messages.len(), 2);
    let first = &messages[0];
    let mut fields: Vec<&str> = first.as_object().unwrap().keys().map(String::as_str).collect();
    fields.sort();
    assert_eq!(
        fields,
        ["attempts", "attributes", "body_base64", "content_type", "group_id", "id", "published_at", "receipt"]
    );
    assert_eq!(first["id"], id.as_str());
    assert_eq!(decode_body(first), b"{\"type\":\"resize\"}");
    let decoded: Value = serde_json::from_slice(&decode_body(first)).unwrap();
    assert_eq!(decoded["type"], "resize");
    assert_eq!(first["content_type"], "application/json");
    assert_eq!(first["attributes"], json!({"a": "x", "b": 2}));
    assert_eq!(first["attempts"], 1);
    assert_eq!(first["group_id"], "user-42");
    assert_eq!(first["published_at"], published["published_at"]);
    let second = &messages[1];
    assert_eq!(second["id"], binary_id.as_str());
    assert_eq!(decode_body(second), binary);
    assert_eq!(second["group_id"], Value::Null);
    assert_eq!(second["attributes"], json!({}));

    let receipts = [text(first, "receipt"), text(second, "receipt")];
    let acked = app.ack(&queue, &[&receipts[0], &receipts[1]]).await;
    assert_eq!(acked, json!({"acked": 2, "failed": []}));
    // Acked messages are gone; acking again is a lost lease.
    assert!(app.consume(&queue, json!({})).await.is_empty());
    let again = app.ack(&queue, &[&receipts[0]]).await;
    assert_eq!(again["failed"][0]["error"], "lease_lost");
    let stats = app.stats(&queue).await;
    assert_eq!(stats["stored_bytes"], 0);
    assert_eq!(stats["depth"]["total"], 0);
}

#[tokio::test]
async fn idempotency_key_returns_the_first_message_or_conflicts() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let url = app.url(&queue, "/messages");
    let request = json!({"body": "hello", "idempotency_key": "k-1", "attributes": {"x": 1}});
    let (status, first) = app.post(&queue.token, &url, &request).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, again) = app.post(&queue.token, &url, &request).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again["id"], first["id"]);
    assert_eq!(again["published_at"], first["published_at"]);
    assert_eq!(again["duplicate"], true);
    for changed in [
        json!({"body": "hello!", "idempotency_key": "k-1", "attributes": {"x": 1}}),
        json!({"body": "hello", "idempotency_key": "k-1", "attributes": {"x": 2}}),
        json!({"body": "hello", "idempotency_key": "k-1", "attributes": {"x": 1}, "content_type": "text/plain"}),
    ] {
        let (status, body) = app.post(&queue.token, &url, &changed).await;
        assert_eq!(status, StatusCode::CONFLICT, "{body}");
        assert_eq!(body["error"], "idempotency_conflict");
    }
    assert_eq!(app.stats(&queue).await["depth"]["total"], 1);

    // After the ack the key is still remembered, now with a TTL of at most 24 h.
    let messages = app.consume(&queue, json!({})).await;
    app.ack(&queue, &[&text(&messages[0], "receipt")]).await;
    let (status, after) = app.post(&queue.token, &url, &request).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(after["id"], first["id"]);
    let mut conn = app.redis.clone();
    let ttl: i64 =
        redis::cmd("PTTL").arg(app.keys.queue(queue.id).idempotency("k-1")).query_async(&mut conn).await.unwrap();
    assert!(ttl > 23 * 3_600_000 && ttl <= 24 * 3_600_000, "ttl {ttl}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_concurrent_identical_publishes_store_one() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let url = app.url(&queue, "/messages");
    let request = json!({"body": "once", "idempotency_key": "same"});
    let calls = (0..100).map(|_| app.post(&queue.token, &url, &request));
    let results = futures_util::future::join_all(calls).await;
    let created = results.iter().filter(|(s, _)| *s == StatusCode::CREATED).count();
    let duplicates = results.iter().filter(|(s, b)| *s == StatusCode::OK && b["duplicate"] == true).count();
    assert_eq!((created, duplicates), (1, 99));
    let ids: std::collections::HashSet<&Value> = results.iter().map(|(_, b)| &b["id"]).collect();
    assert_eq!(ids.len(), 1);
    assert_eq!(app.stats(&queue).await["depth"]["total"], 1);
    let (status, _) = app.post(&queue.token, &url, &json!({"body": "other", "idempotency_key": "same"})).await;
    assert_eq!(status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn a_batch_is_stored_whole_or_not_at_all() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let url = app.url(&queue, "/messages/batch");
    app.publish(&queue, json!({"body": "taken", "idempotency_key": "used"})).await;
    // Entry 2 conflicts with a stored key: nothing of the batch is stored.
    let batch = json!({"messages": [
        {"body": "a"}, {"body": "b", "idempotency_key": "fresh"}, {"body": "different", "idempotency_key": "used"}
    ]});
    let (status, body) = app.post(&queue.token, &url, &batch).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"], "idempotency_conflict");
    assert_eq!(body["index"], 2);
    assert_eq!(app.stats(&queue).await["depth"]["total"], 1);
    let (status, _) =
        app.post(&queue.token, &app.url(&queue, "/messages"), &json!({"body": "c", "idempotency_key": "fresh"})).await;
    assert_eq!(status, StatusCode::CREATED, "the failed batch did not claim its keys");

    let batch = json!({"messages": [
        {"body": "1"}, {"body": "taken", "idempotency_key": "used"}, {"body_base64": "AAE=", "delay_seconds": 60},
        {"body": "4", "idempotency_key": "in-batch"}, {"body": "4", "idempotency_key": "in-batch"}
    ]});
    let (status, body) = app.post(&queue.token, &url, &batch).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let entries = body["messages"].as_array().unwrap();
    assert_eq!(entries.len(), 5);
    let dup: Vec<bool> = entries.iter().map(|e| e["duplicate"].as_bool().unwrap()).collect();
    assert_eq!(dup, [false, true, false, false, true]);
    assert_eq!(entries[3]["id"], entries[4]["id"]);
    assert_ne!(entries[2]["published_at"], entries[2]["available_at"]);
    let stats = app.stats(&queue).await;
    assert_eq!(stats["depth"]["ready"], 4, "{stats}");
    assert_eq!(stats["depth"]["delayed"], 1, "{stats}");
}

/// A batch's stream entries carry no published time of their own (it is the stream id's, as for a
/// single publish): the reply, a duplicate in the same batch, a later duplicate and the consumer
/// all give the same one.
#[tokio::test]
async fn a_batch_gives_each_message_one_published_time() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let batch = json!({"messages": [
        {"body": "a"}, {"body": "b", "idempotency_key": "k"}, {"body": "b", "idempotency_key": "k"},
        {"body": "later", "idempotency_key": "d", "delay_seconds": 60}, {"body": "later", "idempotency_key": "d", "delay_seconds": 60}
    ]});
    let (status, body) = app.post(&queue.token, &app.url(&queue, "/messages/batch"), &batch).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let entries = body["messages"].as_array().unwrap();
    for (original, duplicate) in [(1, 2), (3, 4)] {
        assert_eq!(entries[duplicate]["duplicate"], true);
        for field in ["id", "published_at", "available_at"] {
            assert_eq!(entries[duplicate][field], entries[original][field], "{field} of entry {duplicate}");
        }
    }
    assert_eq!(entries[1]["published_at"], entries[1]["available_at"]);
    assert_ne!(entries[3]["published_at"], entries[3]["available_at"]);

    let (status, again) =
        app.post(&queue.token, &app.url(&queue, "/messages"), &json!({"body": "b", "idempotency_key": "k"})).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!((&again["id"], &again["published_at"]), (&entries[1]["id"], &entries[1]["published_at"]));

    let consumed = app.consume(&queue, json!({"max_messages": 10})).await;
    assert_eq!(consumed.len(), 2);
    for (message, entry) in consumed.iter().zip([&entries[0], &entries[1]]) {
        assert_eq!((&message["id"], &message["published_at"]), (&entry["id"], &entry["published_at"]));
    }
    let fields: Vec<String> = redis::cmd("XRANGE")
        .arg(app.keys.queue(queue.id).stream())
        .arg("-")
        .arg("+")
        .query_async::<Vec<(String, Vec<String>)>>(&mut app.redis.clone())
        .await
        .unwrap()
        .into_iter()
        .flat_map(|(_, flat)| flat.into_iter().step_by(2))
        .collect();
    assert_eq!(fields, ["id", "b", "id", "b", "ik"], "a batch's stream entries hold only what they need");
}

#[tokio::test]
async fn a_delayed_message_becomes_available_on_time() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let start = Instant::now();
    let published = app.publish(&queue, json!({"body": "later", "delay_seconds": 2})).await;
    assert!(app.consume(&queue, json!({})).await.is_empty());
    let messages = app.consume(&queue, json!({"max_wait_seconds": 5})).await;
    let waited = start.elapsed();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["id"], published["id"]);
    assert!(waited >= Duration::from_millis(1900) && waited <= Duration::from_millis(3000), "{waited:?}");
}

#[tokio::test]
async fn stats_after_a_known_sequence() {
    let app = spawn_app().await;
    let queue = app.queue_with(|m| m.max_attempts = 1).await;
    for i in 0..5 {
        app.publish(&queue, json!({"body": format!("m{i}"), "attributes": {"n": i}})).await;
    }
    app.publish(&queue, json!({"body": "later", "delay_seconds": 600})).await;
    let leased = app.consume(&queue, json!({"max_messages": 3})).await;
    app.ack(&queue, &[&text(&leased[0], "receipt")]).await;
    app.nack(&queue, json!({"receipts": [text(&leased[1], "receipt")], "error": "boom"})).await;
    let stats = app.stats(&queue).await;
    // m0 acked, m1 dead-lettered (max attempts 1), m2 leased, m3 m4 ready, one delayed.
    assert_eq!(stats["depth"], json!({"ready": 2, "in_flight": 1, "delayed": 1, "total": 4}), "{stats}");
    // bytes: bodies (2 + 5) plus attributes ({"n":i} = 7 bytes) per message.
    assert_eq!(stats["stored_bytes"], 4 * (2 + 7) + 5, "{stats}");
    assert_eq!(stats["published_today"], 6);
    assert_eq!(stats["delivered_today"], 3);
    assert_eq!(stats["acked_today"], 1);
    assert_eq!(stats["dead_letters"], 1);
    assert_eq!(stats["storage_limit"], 1u64 << 30);
    assert_eq!(stats["paused"], false);
    assert!(stats["oldest_message_at"].is_string());
    assert!(stats["oldest_message_age_seconds"].as_u64().unwrap() < 5);

    let days = app.state.engine.daily_counts(queue.id, 14, now_ms()).await.unwrap();
    assert_eq!(days.len(), 14);
    let today = days.last().unwrap();
    assert_eq!((today.published, today.delivered, today.acked), (6, 3, 1));
    assert_eq!(today.day, aqs_core::time::utc_day(now_ms()));
    assert!(days[..13].iter().all(|d| d.published == 0));
}

/// Single publishes are counted in process and flushed to Redis a few times a second: the count
/// shows at once, once, before and after the flush, and next to batch publishes (counted in Lua).
#[tokio::test]
async fn published_today_counts_each_publish_once_across_a_flush() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    for i in 0..3 {
        app.publish_text(&queue, &format!("m{i}")).await;
    }
    let (status, _) = app
        .post(&queue.token, &app.url(&queue, "/messages/batch"), &json!({"messages": [{"body": "a"}, {"body": "b"}]}))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(app.stats(&queue).await["published_today"], 5);

    app.state.engine.flush_ledger(false).await.unwrap();
    let field = format!("pub:{}", aqs_core::time::utc_day(now_ms()));
    let stored: Option<u64> = redis::cmd("HGET")
        .arg(app.keys.queue(queue.id).stats())
        .arg(&field)
        .query_async(&mut app.redis.clone())
        .await
        .unwrap();
    assert_eq!(stored, Some(5));
    assert_eq!(app.stats(&queue).await["published_today"], 5);
    let today = app.state.engine.daily_counts(queue.id, 1, now_ms()).await.unwrap();
    assert_eq!(today[0].published, 5);
}

/// A flush after the queue was deleted must not leave its stats or storage leases behind.
#[tokio::test]
async fn a_flush_does_not_revive_a_deleted_queues_stats() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    app.state.engine.flush_ledger(false).await.unwrap();
    app.publish_text(&queue, "soon orphaned").await;
    let q = app.keys.queue(queue.id);
    let mut conn = app.redis.clone();
    let _: () = redis::cmd("DEL").arg(q.meta()).arg(q.stats()).arg(q.budget()).query_async(&mut conn).await.unwrap();
    app.state.engine.flush_ledger(false).await.unwrap();
    let exists: u64 = redis::cmd("EXISTS").arg(q.stats()).arg(q.budget()).query_async(&mut conn).await.unwrap();
    assert_eq!(exists, 0, "the flush recreated the deleted queue's stats or lease");
}

/// Queue responses carry messages and receipts: no cache in between may keep one, answer or error.
#[tokio::test]
async fn queue_responses_are_never_cached() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    for token in [queue.token.as_str(), "acq_unknown"] {
        let response = app
            .client
            .post(app.url(&queue, "/messages"))
            .bearer_auth(token)
            .json(&json!({"body": "x"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.headers()["cache-control"], "no-store", "{}", response.status());
    }
}
