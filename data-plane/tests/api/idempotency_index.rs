//! The index of a queue's idempotency records (`idem_ix`), which lets a queue's deletion find them
//! without a keyspace scan: every record is in it while it exists, and leaves it when it expires.

use crate::helpers::spawn_app;
use aqs_engine::{ConsumeOutcome, NewMessage, PublishOutcome};
use redis::AsyncCommands;
use serde_json::json;

#[tokio::test]
async fn every_idempotency_record_is_indexed_until_it_expires() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let q = app.keys.queue(queue.id);
    for key in ["order-1", "order-2"] {
        app.publish(&queue, json!({"body": key, "idempotency_key": key})).await;
    }
    let mut redis = app.redis.clone();
    let indexed: Vec<(String, f64)> = redis.zrange_withscores(q.idempotency_index(), 0, -1).await.unwrap();
    assert_eq!(
        indexed,
        vec![("order-1".to_owned(), f64::INFINITY), ("order-2".to_owned(), f64::INFINITY)],
        "stored messages' records are indexed without an expiry"
    );

    // Acknowledged: the record lives on until 24 h after publish, and the index says until when.
    let engine = &app.state.engine;
    let now = aqs_core::time::now_ms();
    let ConsumeOutcome::Delivered { deliveries, .. } = engine.consume(queue.id, 1, 60_000, now, 0).await.unwrap()
    else {
        panic!("the queue exists");
    };
    let receipt = deliveries[0].receipt(queue.id, u64::MAX);
    assert_eq!(engine.ack(queue.id, &[receipt], now).await.unwrap(), vec![true]);
    let expiry: f64 = redis.zscore(q.idempotency_index(), "order-1").await.unwrap();
    let ttl_ms: i64 = redis.pttl(q.idempotency("order-1")).await.unwrap();
    assert!(expiry.is_finite() && ttl_ms > 0, "expiry {expiry}, ttl {ttl_ms}");

    // A sweep after that expiry drops it from the index; the stored message's entry stays.
    let after = expiry as u64 + 1;
    engine.sweep(queue.id, after, false).await.unwrap();
    let left: Vec<String> = redis.zrange(q.idempotency_index(), 0, -1).await.unwrap();
    assert_eq!(left, vec!["order-2".to_owned()]);

    // A duplicate publish adds nothing; a new key is indexed.
    let plain = |key: &str| NewMessage {
        body: b"\"x\"".to_vec(),
        content_type: "application/json".into(),
        attributes: String::new(),
        group_id: None,
        idempotency_key: Some(key.to_owned()),
        delay_ms: 0,
    };
    let outcome = engine.publish(queue.id, &[plain("order-3")], now).await.unwrap();
    assert!(matches!(outcome, PublishOutcome::Stored(_)), "{outcome:?}");
    let count: u64 = redis.zcard(q.idempotency_index()).await.unwrap();
    assert_eq!(count, 2);
}
