//! Leases: expiry and redelivery, stale receipts, nack delays, receipts of another queue.

use crate::helpers::*;
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test]
async fn an_expired_lease_is_redelivered_and_the_old_receipt_is_refused() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let id = app.publish_text(&queue, "work").await;
    let first = app.consume(&queue, json!({"visibility_seconds": 1})).await;
    assert_eq!(first[0]["attempts"], 1);
    assert!(app.consume(&queue, json!({})).await.is_empty(), "leased: invisible");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let second = app.consume(&queue, json!({"visibility_seconds": 30})).await;
    assert_eq!(second.len(), 1);
    assert_eq!(second[0]["id"], id.as_str());
    assert_eq!(second[0]["attempts"], 2);
    assert_ne!(second[0]["receipt"], first[0]["receipt"]);
    // The first delivery's receipt cannot ack (or nack) the second delivery.
    let stale = app.ack(&queue, &[&text(&first[0], "receipt")]).await;
    assert_eq!(stale["acked"], 0);
    assert_eq!(stale["failed"][0]["error"], "lease_lost");
    let stale = app.nack(&queue, json!({"receipts": [text(&first[0], "receipt")]})).await;
    assert_eq!(stale["failed"][0]["error"], "lease_lost");
    assert_eq!(app.ack(&queue, &[&text(&second[0], "receipt")]).await["acked"], 1);
}

#[tokio::test]
async fn an_expired_but_not_redelivered_lease_can_still_be_acked() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    app.publish_text(&queue, "slow work").await;
    let leased = app.consume(&queue, json!({"visibility_seconds": 1})).await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(app.ack(&queue, &[&text(&leased[0], "receipt")]).await["acked"], 1);
    assert!(app.consume(&queue, json!({})).await.is_empty());
}

#[tokio::test]
async fn a_nack_returns_the_message_after_its_delay() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    app.publish_text(&queue, "retry me").await;
    let leased = app.consume(&queue, json!({})).await;
    let receipt = text(&leased[0], "receipt");
    let nacked = app.nack(&queue, json!({"receipts": [receipt], "delay_seconds": 2, "error": "db down"})).await;
    assert_eq!(nacked, json!({"nacked": 1, "failed": []}));
    // Released: the receipt cannot ack any more, and the message is delayed, not in flight.
    assert_eq!(app.ack(&queue, &[&receipt]).await["failed"][0]["error"], "lease_lost");
    let depth = app.stats(&queue).await["depth"].clone();
    assert_eq!(depth, json!({"ready": 0, "in_flight": 0, "delayed": 1, "total": 1}));
    let start = Instant::now();
    let again = app.consume(&queue, json!({"max_wait_seconds": 5})).await;
    let waited = start.elapsed();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0]["attempts"], 2);
    assert!(waited >= Duration::from_millis(1800) && waited <= Duration::from_millis(3000), "{waited:?}");
    // A nack without delay makes it available at once.
    app.nack(&queue, json!({"receipts": [text(&again[0], "receipt")]})).await;
    let third = app.consume(&queue, json!({})).await;
    assert_eq!(third[0]["attempts"], 3);
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
    assert_eq!(app.consume(&queue, json!({})).await.len(), 1);
    assert!(app.consume(&queue, json!({})).await.is_empty());
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let again = app.consume(&queue, json!({})).await;
    assert_eq!(again[0]["attempts"], 2);
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
    let receipts: Vec<String> = leased.iter().map(|m| text(m, "receipt")).collect();
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
