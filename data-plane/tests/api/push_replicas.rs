//! Two data-plane processes sharing one Redis run a dispatcher each for the same pushed queue:
//! every message reaches the handler exactly once (no failures, so no redelivery).

use crate::helpers::{spawn_app, spawn_app_in};
use crate::push_handler::{Reply, handler, record};
use std::collections::HashMap;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_deliver_each_message_once() {
    let first = spawn_app().await;
    let second = spawn_app_in(&first.namespace).await;
    let queue = first.queue().await;
    let hook = handler(|_, i| Reply::status(200).after(Duration::from_millis(if i % 3 == 0 { 30 } else { 5 }))).await;
    let mut target = record(&queue, &hook.url);
    target.concurrency = 4;
    first.set_push(&queue, &target).await;
    let mut published = Vec::new();
    for i in 0..60 {
        published.push(first.publish_text(&queue, &format!("m{i}")).await);
    }
    let seen = hook.wait_for(60, Duration::from_secs(20)).await;
    first.wait_drained(&queue, Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut counts: HashMap<String, usize> = HashMap::new();
    for request in hook.seen() {
        *counts.entry(request.body["id"].as_str().unwrap().to_owned()).or_default() += 1;
    }
    assert_eq!(seen.len().max(hook.seen().len()), 60, "no message was sent twice");
    for id in &published {
        assert_eq!(counts.get(id), Some(&1), "{id}");
    }
    drop(second);
}
