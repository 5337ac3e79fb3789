//! Dead letters: by nack and by lease expiry at max attempts (the engine's clock set by the test,
//! not slept through), list, replay, purge.

use crate::helpers::*;
use aqs_core::receipt::Receipt;
use aqs_core::time::now_ms;
use aqs_engine::{ConsumeOutcome, Delivery};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test]
async fn a_message_nacked_on_its_last_attempt_is_dead_lettered_with_its_error() {
    let app = spawn_app().await;
    let queue = app.queue_with(|m| m.max_attempts = 3).await;
    let id = app.publish(&queue, json!({"body": "poison", "content_type": "text/plain"})).await["id"].clone();
    for attempt in 1..=3 {
        let leased = app.consume(&queue, json!({})).await;
        assert_eq!(leased[0]["attempts"], attempt);
        app.nack(&queue, json!({"receipts": [text(&leased[0], "receipt")], "error": format!("failure {attempt}")}))
            .await;
    }
    assert!(app.consume(&queue, json!({})).await.is_empty());
    let dead = app.dead_letters(&queue).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0]["id"], id);
    assert_eq!(dead[0]["reason"], "failure 3");
    assert_eq!(dead[0]["attempts"], 3);
    assert_eq!(dead[0]["body_preview"], "poison");
    assert_eq!(dead[0]["content_type"], "text/plain");
    assert!(dead[0]["dead_at"].is_string() && dead[0]["published_at"].is_string());

    // Replay: same id, attempts start again.
    let (status, body) =
        app.post(&queue.token, &app.url(&queue, "/dead-letters/replay"), &json!({"ids": [id.clone()]})).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"replayed": 1})));
    assert!(app.dead_letters(&queue).await.is_empty());
    let leased = app.consume(&queue, json!({})).await;
    assert_eq!(leased[0]["id"], id);
    assert_eq!(leased[0]["attempts"], 1);
}

#[tokio::test]
async fn a_long_nack_error_is_kept_to_one_kib() {
    let app = spawn_app().await;
    let queue = app.queue_with(|m| m.max_attempts = 1).await;
    app.publish_text(&queue, "x").await;
    let leased = app.consume(&queue, json!({})).await;
    let error = "é".repeat(1000);
    app.nack(&queue, json!({"receipts": [text(&leased[0], "receipt")], "error": error})).await;
    let reason = text(&app.dead_letters(&queue).await[0], "reason");
    assert_eq!(reason.len(), 1024);
    assert!(error.starts_with(&reason));
}

#[tokio::test]
async fn a_nack_without_error_is_recorded_as_nacked() {
    let app = spawn_app().await;
    let queue = app.queue_with(|m| m.max_attempts = 1).await;
    app.publish_text(&queue, "x").await;
    let leased = app.consume(&queue, json!({})).await;
    app.nack(&queue, json!({"receipts": [text(&leased[0], "receipt")]})).await;
    assert_eq!(app.dead_letters(&queue).await[0]["reason"], "nacked");
}

/// Leases one message for `lease_ms` at the test's clock `now` (the engine takes the time from its
/// caller, so expiries are reached by moving the clock, not by sleeping).
async fn lease_one(app: &TestApp, queue: &TestQueue, lease_ms: u64, now: u64) -> Vec<Delivery> {
    match app.state.engine.consume(queue.id, 1, lease_ms, now, 0).await.unwrap() {
        ConsumeOutcome::Delivered { deliveries, .. } => deliveries,
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_expired_lease_on_the_last_attempt_is_dead_lettered_by_the_sweeper() {
    let app = spawn_app().await;
    let queue = app.queue_with(|m| m.max_attempts = 2).await;
    app.publish_text(&queue, "slow").await;
    let t0 = now_ms();
    lease_one(&app, &queue, 1000, t0).await;
    let second = lease_one(&app, &queue, 1000, t0 + 1001).await;
    assert_eq!(second[0].attempts, 2);
    // Nobody consumes: the sweeper's pass after the second lease ends moves it.
    app.state.engine.sweep(queue.id, t0 + 2002, false).await.unwrap();
    let dead = app.dead_letters(&queue).await;
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0]["reason"], "visibility timeout expired");
    assert_eq!(dead[0]["attempts"], 2);
    let receipt = Receipt {
        queue: queue.id,
        stream_id: second[0].stream_id,
        message: second[0].message,
        delivery: 2,
        expires_at_ms: t0 + 2001,
    };
    assert_eq!(app.state.engine.ack(queue.id, &[receipt], t0 + 2003).await.unwrap(), vec![false]);
}

#[tokio::test]
async fn an_expired_lease_on_the_last_attempt_is_dead_lettered_by_the_next_consume() {
    let app = spawn_app().await;
    let queue = app.queue_with(|m| m.max_attempts = 1).await;
    // Hidden from the sweeper, so only the consume script can dead-letter it.
    let mut conn = app.redis.clone();
    let _: () =
        redis::cmd("SREM").arg(app.keys.queues()).arg(queue.id.to_string()).query_async(&mut conn).await.unwrap();
    app.publish_text(&queue, "slow").await;
    app.publish_text(&queue, "next").await;
    let t0 = now_ms();
    assert_eq!(lease_one(&app, &queue, 1000, t0).await.len(), 1);
    // Consume must not redeliver it: it goes to the dead-letter queue.
    let next = lease_one(&app, &queue, 30_000, t0 + 1001).await;
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].body, b"next");
    let dead = app.dead_letters(&queue).await;
    assert_eq!(dead[0]["reason"], "visibility timeout expired");
}

#[tokio::test]
async fn replay_all_and_purge_by_id_and_all() {
    let app = spawn_app().await;
    let queue = app.queue_with(|m| m.max_attempts = 1).await;
    let binary = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, [0xff, 0xfe, 0x00]);
    app.publish(&queue, json!({"body_base64": binary})).await;
    for i in 0..4 {
        app.publish_text(&queue, &format!("m{i}")).await;
    }
    let leased = app.consume(&queue, json!({"max_messages": 5})).await;
    let receipts = receipts(&leased);
    app.nack(&queue, json!({"receipts": receipts})).await;
    let dead = app.dead_letters(&queue).await;
    assert_eq!(dead.len(), 5);
    assert_eq!(dead[0]["body_preview_encoding"], "base64");
    assert_eq!(dead[0]["body_preview"], binary);
    let bytes_before = app.stats(&queue).await["stored_bytes"].as_u64().unwrap();
    assert_eq!(bytes_before, 3 + 4 * 2, "dead letters count toward stored bytes");

    let purge = app.url(&queue, "/dead-letters/purge");
    let (status, body) = app.post(&queue.token, &purge, &json!({"ids": [dead[0]["id"].clone()]})).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"purged": 1})));
    assert_eq!(app.stats(&queue).await["stored_bytes"], 8);
    let (_, body) = app.post(&queue.token, &app.url(&queue, "/dead-letters/replay"), &json!({"all": true})).await;
    assert_eq!(body, json!({"replayed": 4}));
    let back = app.consume(&queue, json!({"max_messages": 10})).await;
    assert_eq!(back.len(), 4);
    assert!(back.iter().all(|m| m["attempts"] == 1));
    app.nack(&queue, json!({"receipts": back.iter().map(|m| text(m, "receipt")).collect::<Vec<_>>()})).await;
    let (_, body) = app.post(&queue.token, &app.url(&queue, "/purge"), &json!({"state": "dead"})).await;
    assert_eq!(body, json!({"purged": 4}));
    let stats = app.stats(&queue).await;
    assert_eq!((stats["stored_bytes"].as_u64(), stats["dead_letters"].as_u64()), (Some(0), Some(0)));
}

/// Replaying or purging every dead letter must be asked for by name: an empty body, `{}` or
/// `{"all": false}` is a 400 that touches nothing.
#[tokio::test]
async fn acting_on_every_dead_letter_needs_an_explicit_all() {
    let app = spawn_app().await;
    let queue = app.queue_with(|m| m.max_attempts = 1).await;
    for i in 0..2 {
        app.publish_text(&queue, &format!("m{i}")).await;
    }
    let leased = app.consume(&queue, json!({"max_messages": 2})).await;
    app.nack(&queue, json!({"receipts": leased.iter().map(|m| text(m, "receipt")).collect::<Vec<_>>()})).await;
    assert_eq!(app.dead_letters(&queue).await.len(), 2);

    for action in ["replay", "purge"] {
        // A token per action: each is five requests of the six a token may send per minute.
        let token = app.token(queue.id, &[aqs_core::token::Scope::Manage]).await;
        let url = app.url(&queue, &format!("/dead-letters/{action}"));
        let empty = app.client.post(&url).bearer_auth(&token).send().await.unwrap();
        assert_eq!(empty.status(), StatusCode::BAD_REQUEST, "{action} with no body");
        let body: serde_json::Value = empty.json().await.unwrap();
        assert_eq!(body["error"], "invalid_request");
        assert!(body["message"].as_str().unwrap().contains("\"all\": true"), "{body}");
        let (status, body) = app.post_raw(&token, &url, "application/json", Vec::new()).await;
        assert_eq!(
            (status, &body["error"]),
            (StatusCode::BAD_REQUEST, &json!("invalid_request")),
            "{action} empty JSON"
        );
        for request in [json!({}), json!({"all": false}), json!({"all": null})] {
            let (status, body) = app.post(&token, &url, &request).await;
            assert_eq!(
                (status, &body["error"]),
                (StatusCode::BAD_REQUEST, &json!("invalid_request")),
                "{action} {request}"
            );
        }
        assert_eq!(app.dead_letters(&queue).await.len(), 2, "{action}: nothing was touched");
    }
    let (status, body) = app.post(&queue.token, &app.url(&queue, "/dead-letters/purge"), &json!({"all": true})).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"purged": 2})));
}
