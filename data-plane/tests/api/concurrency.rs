//! 50 concurrent consumers over 10,000 messages: each message acked exactly once and never leased
//! to two consumers at once.

use crate::helpers::*;
use aqs_core::token::Scope;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const MESSAGES: usize = 10_000;
const CONSUMERS: usize = 50;

/// One delivery seen by a consumer: which message, when it was received and when its ack returned.
struct Seen {
    id: String,
    consumer: usize,
    received: Instant,
    acked: Instant,
    ack_ok: bool,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_consumers_ack_every_message_exactly_once() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let batch_url = app.url(&queue, "/messages/batch");
    for chunk in 0..MESSAGES / 100 {
        let batch: Vec<Value> = (0..100).map(|i| json!({"body": format!("{}", chunk * 100 + i)})).collect();
        let (status, body) = app.post(&queue.token, &batch_url, &json!({"messages": batch})).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }

    let acked = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for consumer in 0..CONSUMERS {
        // One token per consumer: each has its own rate budget, as separate applications would.
        let token = app.token(queue.id, &[Scope::Consume]).await;
        let (client, consume_url, ack_url) = (app.client.clone(), app.url(&queue, "/consume"), app.url(&queue, "/ack"));
        let acked = acked.clone();
        tasks.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(90);
            while acked.load(Ordering::SeqCst) < MESSAGES && Instant::now() < deadline {
                let response = client
                    .post(&consume_url)
                    .bearer_auth(&token)
                    .json(&json!({"max_messages": 20, "max_wait_seconds": 1, "visibility_seconds": 120}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), StatusCode::OK);
                let body: Value = response.json().await.unwrap();
                let messages = body["messages"].as_array().unwrap();
                if messages.is_empty() {
                    continue;
                }
                let received = Instant::now();
                let receipts: Vec<&str> = messages.iter().map(|m| m["receipt"].as_str().unwrap()).collect();
                let response = client
                    .post(&ack_url)
                    .bearer_auth(&token)
                    .json(&json!({"receipts": receipts}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), StatusCode::OK);
                let result: Value = response.json().await.unwrap();
                let ack_time = Instant::now();
                let failed: Vec<&str> =
                    result["failed"].as_array().unwrap().iter().map(|f| f["receipt"].as_str().unwrap()).collect();
                acked.fetch_add(result["acked"].as_u64().unwrap() as usize, Ordering::SeqCst);
                for m in messages {
                    seen.push(Seen {
                        id: text(m, "id"),
                        consumer,
                        received,
                        acked: ack_time,
                        ack_ok: !failed.contains(&m["receipt"].as_str().unwrap()),
                    });
                }
            }
            seen
        }));
    }
    let mut by_id: HashMap<String, Vec<Seen>> = HashMap::new();
    for task in tasks {
        for seen in task.await.unwrap() {
            by_id.entry(seen.id.clone()).or_default().push(seen);
        }
    }
    assert_eq!(by_id.len(), MESSAGES, "every message was delivered");
    for (id, deliveries) in &by_id {
        let acks = deliveries.iter().filter(|d| d.ack_ok).count();
        assert_eq!(acks, 1, "message {id} acked {acks} times");
        for (i, a) in deliveries.iter().enumerate() {
            for b in &deliveries[i + 1..] {
                let overlap = a.received < b.acked && b.received < a.acked;
                assert!(!overlap, "message {id} leased to consumers {} and {} at once", a.consumer, b.consumer);
            }
        }
    }
    assert_eq!(acked.load(Ordering::SeqCst), MESSAGES);
    let stats = app.stats(&queue).await;
    assert_eq!(stats["depth"]["total"], 0);
    assert_eq!(stats["stored_bytes"], 0);
}
