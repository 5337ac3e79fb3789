//! Push delivery in batch mode (the Worker-trigger contract): one POST per batch, unmentioned
//! messages acknowledged on 2xx, `retry` / `retry_all` honoured, a non-2xx retries the whole batch.

use crate::helpers::spawn_app;
use crate::push_handler::{Reply, handler, record};
use aqs_core::projection::PushMode;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

fn ids(batch: &Value) -> BTreeSet<String> {
    batch["messages"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn a_partial_retry_returns_only_the_named_messages() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let mut published = Vec::new();
    for i in 0..3 {
        published.push(app.publish(&queue, json!({"body": format!("{{\"n\":{i}}}"), "attributes": {"k": i}})).await);
    }
    let retry_id = published[1]["id"].as_str().unwrap().to_owned();
    let named = retry_id.clone();
    let hook = handler(move |_, i| {
        if i == 0 {
            Reply::status(200).body(&json!({"retry": [{"id": named, "delay_seconds": 1}]}).to_string())
        } else {
            Reply::status(200)
        }
    })
    .await;
    let mut target = record(&queue, &hook.url);
    target.mode = PushMode::Batch;
    target.messages_per_run = 10;
    target.wait_seconds = 1;
    app.set_push(&queue, &target).await;

    let seen = hook.wait_for(2, WAIT).await;
    let first = &seen[0].body;
    assert_eq!(first["queue"], queue.slug);
    assert_eq!(ids(first).len(), 3, "one POST for the batch: {first}");
    let entry = first["messages"].as_array().unwrap().iter().find(|m| m["id"] == retry_id.as_str()).unwrap();
    assert_eq!(entry["body"], "{\"n\":1}");
    assert_eq!(entry["content_type"], "application/json");
    assert_eq!(entry["attributes"], json!({"k": 1}));
    assert_eq!(entry["attempts"], 1, "batch attempts count this delivery, like a consumer's");
    assert!(entry["timestamp"].as_str().unwrap().ends_with('Z'));
    assert!(!seen[0].header("webhook-id").is_empty());
    assert_ne!(seen[0].header("webhook-id"), retry_id, "a batch is signed under its own id");

    let second = &seen[1].body;
    assert_eq!(ids(second), BTreeSet::from([retry_id.clone()]));
    assert_eq!(second["messages"][0]["attempts"], 2);
    let gap = seen[1].at - seen[0].at;
    assert!(gap >= Duration::from_millis(900), "the asked delay was kept: {gap:?}");
    app.wait_drained(&queue, WAIT).await;
    let log = app.push_log(&queue).await;
    assert_eq!((log[1]["outcome"].as_str(), log[1]["messages"].as_u64()), (Some("partially_retried"), Some(3)));
    assert_eq!(log[0]["outcome"], "acked");
}

#[tokio::test]
async fn a_non_2xx_retries_the_whole_batch_and_retry_all_does_too() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    for i in 0..2 {
        app.publish_text(&queue, &format!("m{i}")).await;
    }
    let hook = handler(|_, i| match i {
        0 => Reply::status(404).body("not yet"),
        1 => Reply::status(200).body(r#"{"retry_all": {"delay_seconds": 0}}"#),
        _ => Reply::status(200),
    })
    .await;
    let mut target = record(&queue, &hook.url);
    target.mode = PushMode::Batch;
    target.messages_per_run = 2;
    target.wait_seconds = 1;
    app.set_push(&queue, &target).await;
    let seen = hook.wait_for(3, WAIT).await;
    assert_eq!(ids(&seen[0].body), ids(&seen[1].body));
    assert_eq!(ids(&seen[1].body), ids(&seen[2].body));
    assert_eq!(seen[2].body["messages"][0]["attempts"], 3);
    app.wait_drained(&queue, WAIT).await;
    assert!(app.state.engine.dead_letters(queue.id, 10).await.unwrap().unwrap().is_empty());
}

#[tokio::test]
async fn a_batch_fills_up_to_messages_per_run() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let sizes = Arc::new(Mutex::new(Vec::new()));
    let record_sizes = sizes.clone();
    let hook = handler(move |seen, _| {
        record_sizes.lock().unwrap().push(seen.body["messages"].as_array().unwrap().len());
        Reply::status(200)
    })
    .await;
    let mut target = record(&queue, &hook.url);
    target.mode = PushMode::Batch;
    target.messages_per_run = 4;
    target.wait_seconds = 0;
    for i in 0..10 {
        app.publish_text(&queue, &format!("m{i}")).await;
    }
    app.set_push(&queue, &target).await;
    app.wait_drained(&queue, WAIT).await;
    let sizes = sizes.lock().unwrap().clone();
    assert_eq!(sizes.iter().sum::<usize>(), 10);
    assert!(sizes.iter().all(|n| *n <= 4), "{sizes:?}");
}

/// A dispatcher stopped while it fills a batch (the target changed) hands the messages it leased
/// back at once and uncounted: the new target gets them with the attempts they had, and a queue
/// with one attempt does not dead-letter a message no handler ever saw.
#[tokio::test]
async fn a_changed_target_gets_what_the_old_batch_held_at_once_and_uncounted() {
    let app = spawn_app().await;
    let queue = app.queue_with(|meta| meta.max_attempts = 1).await;
    let old = handler(|_, _| Reply::status(200)).await;
    let mut filling = record(&queue, &old.url);
    filling.mode = PushMode::Batch;
    filling.messages_per_run = 10;
    // The old dispatcher keeps filling its batch far beyond the test's patience.
    filling.wait_seconds = 60;
    app.set_push(&queue, &filling).await;
    let id = app.publish_text(&queue, "leased by the old target").await;
    let start = std::time::Instant::now();
    while app.state.engine.stats(queue.id, aqs_core::time::now_ms()).await.unwrap().unwrap().in_flight == 0 {
        assert!(start.elapsed() < WAIT, "the old dispatcher never leased the message");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let new = handler(|_, _| Reply::status(200)).await;
    app.set_push(&queue, &record(&queue, &new.url)).await;
    // The old lease (fill wait + timeout + margin, 70 s) would outlast this wait many times over.
    let seen = new.wait_for(1, WAIT).await;
    assert_eq!(seen[0].body["id"], id.as_str());
    assert_eq!(seen[0].body["attempts"], 0, "the handed-back lease was not a delivery");
    app.wait_drained(&queue, WAIT).await;
    assert!(old.seen().is_empty(), "the stopped dispatcher sent nothing");
    assert!(app.state.engine.dead_letters(queue.id, 10).await.unwrap().unwrap().is_empty());
    let start = std::time::Instant::now();
    let log = loop {
        let log = app.push_log(&queue).await;
        if !log.is_empty() || start.elapsed() > WAIT {
            break log;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(log.len(), 1, "one delivery, one log entry: {log:?}");
    assert_eq!(log[0]["outcome"], "acked");
}
