//! Peek, purge, storage limit, and the sweeper's pruning of old daily counters.

use crate::helpers::*;
use aqs_core::time::{now_ms, utc_day};
use reqwest::StatusCode;
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn peek_reads_without_leasing() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    app.publish(&queue, json!({"body": "one", "attributes": {"k": "v"}, "group_id": "g"})).await;
    app.publish_text(&queue, "two").await;
    let leased = app.consume(&queue, json!({"max_messages": 1, "visibility_seconds": 1})).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let url = app.url(&queue, "/messages/peek?limit=10");
    for _ in 0..2 {
        let (status, body) = app.get(&queue.token, &url).await;
        assert_eq!(status, StatusCode::OK);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0]["id"], leased[0]["id"]);
        assert_eq!(messages[0]["attempts"], 1, "deliveries so far");
        assert_eq!(messages[0]["attributes"], json!({"k": "v"}));
        assert_eq!(messages[0]["group_id"], "g");
        assert_eq!(messages[0]["state"], "ready");
        assert_eq!(decode_body(&messages[1]), b"two");
        assert_eq!(messages[1]["attempts"], 0);
    }
    let (_, body) = app.get(&queue.token, &app.url(&queue, "/messages/peek?limit=1")).await;
    assert_eq!(body["messages"].as_array().unwrap().len(), 1);
    let delivered = app.consume(&queue, json!({"max_messages": 10})).await;
    let attempts: Vec<u64> = delivered.iter().map(|m| m["attempts"].as_u64().unwrap()).collect();
    assert_eq!(attempts, [2, 1], "peeking counted no attempt");
}

#[tokio::test]
async fn purge_removes_only_waiting_ready_messages() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    for i in 0..5 {
        app.publish_text(&queue, &format!("m{i}")).await;
    }
    app.publish(&queue, json!({"body": "held", "delay_seconds": 600})).await;
    let leased = app.consume(&queue, json!({"max_messages": 2})).await;
    let (status, body) = app.post(&queue.token, &app.url(&queue, "/purge"), &json!({})).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"purged": 3})));
    let stats = app.stats(&queue).await;
    assert_eq!(stats["depth"], json!({"ready": 0, "in_flight": 2, "delayed": 1, "total": 3}));
    assert_eq!(stats["stored_bytes"], 2 * 2 + 4);
    let receipts = receipts(&leased);
    assert_eq!(app.ack(&queue, &[&receipts[0], &receipts[1]]).await["acked"], 2, "leases survived the purge");
}

#[tokio::test]
async fn purge_of_a_big_queue_runs_in_chunks() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    for _ in 0..12 {
        let batch: Vec<_> = (0..100).map(|i| json!({"body": format!("{i}")})).collect();
        let (status, _) =
            app.post(&queue.token, &app.url(&queue, "/messages/batch"), &json!({"messages": batch})).await;
        assert_eq!(status, StatusCode::CREATED);
    }
    assert_eq!(app.state.engine.purge_ready(queue.id, now_ms()).await.unwrap(), 1200);
    assert_eq!(app.stats(&queue).await["depth"]["total"], 0);
}

#[tokio::test]
async fn the_storage_limit_refuses_and_never_evicts() {
    let app = spawn_app().await;
    let queue = app
        .queue_with(|m| {
            m.storage_limit = 100;
            m.max_attempts = 1;
        })
        .await;
    let forty = "x".repeat(40);
    let first = app.publish_text(&queue, &forty).await;
    app.publish_text(&queue, &forty).await;
    let (status, body) = app.post(&queue.token, &app.url(&queue, "/messages"), &json!({"body": forty})).await;
    assert_eq!(status, StatusCode::INSUFFICIENT_STORAGE, "{body}");
    assert_eq!(body["error"], "storage_limit_reached");
    let stats = app.stats(&queue).await;
    assert_eq!((stats["depth"]["total"].as_u64(), stats["stored_bytes"].as_u64()), (Some(2), Some(80)));
    // Dead letters still count: dead-letter one, the limit still holds.
    let leased = app.consume(&queue, json!({"max_messages": 1})).await;
    assert_eq!(leased[0]["id"], first.as_str());
    app.nack(&queue, json!({"receipts": [text(&leased[0], "receipt")]})).await;
    let (status, _) = app.post(&queue.token, &app.url(&queue, "/messages"), &json!({"body": forty})).await;
    assert_eq!(status, StatusCode::INSUFFICIENT_STORAGE);
    // Purging the dead letter makes room.
    app.post(&queue.token, &app.url(&queue, "/dead-letters/purge"), &json!({"all": true})).await;
    let (status, _) = app.post(&queue.token, &app.url(&queue, "/messages"), &json!({"body": forty})).await;
    assert_eq!(status, StatusCode::CREATED);
}

#[tokio::test]
async fn the_sweeper_prunes_old_daily_counters() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    app.publish_text(&queue, "today").await;
    let old_day = utc_day(now_ms() - 40 * 86_400_000);
    let recent_day = utc_day(now_ms() - 10 * 86_400_000);
    let stats_key = app.keys.queue(queue.id).stats();
    let mut conn = app.redis.clone();
    let _: () = redis::cmd("HSET")
        .arg(&stats_key)
        .arg(format!("pub:{old_day}"))
        .arg(3)
        .arg(format!("pub:{recent_day}"))
        .arg(4)
        .query_async(&mut conn)
        .await
        .unwrap();
    app.state.engine.sweep(queue.id, now_ms(), true).await.unwrap().unwrap();
    let fields: Vec<String> = redis::cmd("HKEYS").arg(&stats_key).query_async(&mut conn).await.unwrap();
    assert!(!fields.contains(&format!("pub:{old_day}")));
    assert!(fields.contains(&format!("pub:{recent_day}")));
    let days = app.state.engine.daily_counts(queue.id, 14, now_ms()).await.unwrap();
    assert_eq!(days[3].published, 4);
    assert_eq!(days[13].published, 1);
}

#[tokio::test]
async fn chunks_shrink_for_large_payload_limits() {
    let app = spawn_app().await;
    // 64 MiB / 16 MiB: four messages per script call.
    let queue = app.queue_with(|m| m.payload_limit = 16 << 20).await;
    for i in 0..10 {
        app.publish_text(&queue, &format!("m{i}")).await;
    }
    assert_eq!(app.state.engine.purge_ready(queue.id, now_ms()).await.unwrap(), 10);
    assert_eq!(app.stats(&queue).await["depth"]["total"], 0);
}
