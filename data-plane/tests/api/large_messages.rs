//! The exact per-queue count of stored messages over 1 MiB and over 10 MiB (what a payload-size
//! downgrade waits for): kept by the scripts that store and delete messages, unchanged while a
//! message moves between ready, leased, delayed and dead.

use super::helpers::{TestApp, TestQueue, spawn_app, text};
use aqs_core::limits::MIB;
use serde_json::json;

async fn over(app: &TestApp, queue: &TestQueue) -> (u64, u64) {
    let engine = &app.state.engine;
    (
        engine.stored_larger_than(queue.id, MIB).await.unwrap(),
        engine.stored_larger_than(queue.id, 10 * MIB).await.unwrap(),
    )
}

#[tokio::test]
async fn large_messages_are_counted_while_stored_and_forgotten_when_deleted() {
    let app = spawn_app().await;
    let queue = app
        .queue_with(|m| {
            m.payload_limit = 50 * MIB;
            m.max_attempts = 1;
        })
        .await;
    let two_mib = "a".repeat(2 * MIB as usize);
    let eleven_mib = "b".repeat(11 * MIB as usize);
    let exactly_one_mib = "c".repeat(MIB as usize);

    // A single plain message, a delayed one, a batch, and small ones that never count.
    app.publish(&queue, json!({"body": two_mib})).await;
    app.publish(&queue, json!({"body": exactly_one_mib})).await;
    app.publish(&queue, json!({"body": "small"})).await;
    app.publish(&queue, json!({"body": eleven_mib, "delay_seconds": 3600})).await;
    let batch = json!({"messages": [{"body": two_mib}, {"body": "tiny"}]});
    let (status, body) = app.post(&queue.token, &app.url(&queue, "/messages/batch"), &batch).await;
    assert!(status.is_success(), "{body}");
    assert_eq!(over(&app, &queue).await, (3, 1));

    // Leased, then dead-lettered by a nack at max attempts: still stored, still counted.
    let leased = app.consume(&queue, json!({"max_messages": 2})).await;
    assert_eq!(leased.len(), 2);
    assert_eq!(over(&app, &queue).await, (3, 1));
    app.nack(&queue, json!({"receipts": [text(&leased[0], "receipt")]})).await;
    assert_eq!(app.dead_letters(&queue).await.len(), 1);
    assert_eq!(over(&app, &queue).await, (3, 1), "a dead letter is still stored");

    // The ack of the 1 MiB message changes nothing; the DLQ purge drops the first 2 MiB one.
    app.ack(&queue, &[&text(&leased[1], "receipt")]).await;
    assert_eq!(over(&app, &queue).await, (3, 1));
    let (status, body) = app.post(&queue.token, &app.url(&queue, "/dead-letters/purge"), &json!({"all": true})).await;
    assert!(status.is_success(), "{body}");
    assert_eq!(over(&app, &queue).await, (2, 1));

    // Consume and ack the batch's 2 MiB message (and the small ones).
    let rest = app.consume(&queue, json!({"max_messages": 10})).await;
    let receipts: Vec<String> = rest.iter().map(|m| text(m, "receipt")).collect();
    let receipts: Vec<&str> = receipts.iter().map(String::as_str).collect();
    app.ack(&queue, &receipts).await;
    assert_eq!(over(&app, &queue).await, (1, 1), "only the delayed 11 MiB message is left");
}

#[tokio::test]
async fn a_purge_forgets_the_large_messages_it_deletes() {
    let app = spawn_app().await;
    let queue = app.queue_with(|m| m.payload_limit = 10 * MIB).await;
    app.publish(&queue, json!({"body": "a".repeat(3 * MIB as usize)})).await;
    app.publish(&queue, json!({"body": "a".repeat(5 * MIB as usize)})).await;
    assert_eq!(over(&app, &queue).await, (2, 0));
    let (status, body) = app.post(&queue.token, &app.url(&queue, "/purge"), &json!({})).await;
    assert!(status.is_success(), "{body}");
    assert_eq!(over(&app, &queue).await, (0, 0));
}
