//! The console's engine views: browsing every state with a cursor, one message whole, dead letters
//! paged and filtered by reason (and replayed or purged by that filter, also through the API), and
//! the last hour per minute.

use crate::helpers::*;
use aqs_core::time::now_ms;
use aqs_engine::{MessageRef, MessageState, Selection};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test]
async fn browsing_shows_every_state_with_its_time_and_pages_through_the_whole_queue() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let before = now_ms();
    let leased_id = app.publish_text(&queue, "leased").await;
    for i in 0..6 {
        app.publish_text(&queue, &format!("ready {i}")).await;
    }
    let delayed = app.publish(&queue, json!({"body": "later", "delay_seconds": 600})).await;
    let leased = app.consume(&queue, json!({"max_messages": 1, "visibility_seconds": 120})).await;
    assert_eq!(leased[0]["id"], leased_id.as_str());

    let engine = &app.state.engine;
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = engine.browse(queue.id, cursor.as_deref(), 3, 64, now_ms()).await.unwrap().unwrap();
        pages += 1;
        seen.extend(page.messages);
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert!(pages >= 3, "8 messages at 3 a page");
    assert_eq!(seen.len(), 8, "every message once: {seen:?}");
    let ids: std::collections::HashSet<_> = seen.iter().map(|m| m.id.clone()).collect();
    assert_eq!(ids.len(), 8);

    let lease = seen.iter().find(|m| m.id == leased_id).unwrap();
    assert_eq!(lease.state, MessageState::InFlight);
    assert!(lease.at_ms >= before + 120_000 && lease.at_ms <= now_ms() + 120_000, "the lease deadline");
    assert_eq!(lease.attempts, 1);
    let ready: Vec<_> = seen.iter().filter(|m| m.state == MessageState::Ready).collect();
    assert_eq!(ready.len(), 6);
    assert!(ready.iter().all(|m| m.attempts == 0 && m.at_ms >= before));
    let later = seen.last().unwrap();
    assert_eq!((later.state, later.id.as_str()), (MessageState::Delayed, delayed["id"].as_str().unwrap()));
    assert!(later.at_ms >= before + 600_000);
    assert_eq!(later.body, b"later");

    // An extend moves the deadline the view shows.
    app.post(
        &queue.token,
        &app.url(&queue, "/extend"),
        &json!({"receipts": [text(&leased[0], "receipt")], "visibility_seconds": 3600}),
    )
    .await;
    let again = engine.message(queue.id, &lease.reference(), now_ms()).await.unwrap().unwrap();
    assert!(again.at_ms >= before + 3_600_000, "extended: {}", again.at_ms);

    // A nack with a delay is a retry, due then.
    app.nack(&queue, json!({"receipts": [text(&leased[0], "receipt")], "delay_seconds": 300})).await;
    let retry = engine.message(queue.id, &lease.reference(), now_ms()).await.unwrap().unwrap();
    assert_eq!(retry.state, MessageState::Retry);
    assert!(retry.at_ms >= before + 300_000 && retry.at_ms < before + 3_600_000);
}

#[tokio::test]
async fn one_message_comes_back_byte_for_byte_with_its_attributes_and_group() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let body = r#"{"b":1,  "a":2}"#;
    let id = app
        .publish(
            &queue,
            json!({"body": body, "attributes": {"kind": "test"}, "group_id": "g-1", "idempotency_key": "k-1"}),
        )
        .await["id"]
        .clone();
    let page = app.state.engine.browse(queue.id, None, 10, 4, now_ms()).await.unwrap().unwrap();
    assert_eq!(page.messages[0].body, br#"{"b""#, "a page carries a preview only");
    let whole = app.state.engine.message(queue.id, &page.messages[0].reference(), now_ms()).await.unwrap().unwrap();
    assert_eq!(whole.id, id.as_str().unwrap());
    assert_eq!(whole.body, body.as_bytes());
    assert_eq!(whole.body_bytes, body.len() as u64);
    assert_eq!(whole.attributes, r#"{"kind":"test"}"#);
    assert_eq!(whole.group_id.as_deref(), Some("g-1"));
    assert_eq!(whole.idempotency_key.as_deref(), Some("k-1"));
    let gone = MessageRef::Stream("1-0".into());
    assert!(app.state.engine.message(queue.id, &gone, now_ms()).await.unwrap().is_none());
}

/// Dead-letters every ready message with `reason` (one attempt each).
async fn fail_with(app: &TestApp, queue: &TestQueue, n: usize, reason: &str) {
    for i in 0..n {
        app.publish_text(queue, &format!("{reason} {i}")).await;
    }
    let leased = app.consume(queue, json!({"max_messages": n})).await;
    let receipts = receipts(&leased);
    app.nack(queue, json!({"receipts": receipts, "error": reason})).await;
}

#[tokio::test]
async fn dead_letters_page_by_cursor_filter_by_reason_and_replay_only_what_the_filter_selects() {
    let app = spawn_app().await;
    let queue = app.queue_with(|m| m.max_attempts = 1).await;
    fail_with(&app, &queue, 4, "timeout talking to db").await;
    fail_with(&app, &queue, 3, "bad input").await;
    let engine = &app.state.engine;
    assert_eq!(engine.count_dead_letters(queue.id, "").await.unwrap(), 7);
    assert_eq!(engine.count_dead_letters(queue.id, "timeout").await.unwrap(), 4);

    let first = engine.dead_letter_page(queue.id, None, 3, "timeout").await.unwrap().unwrap();
    assert_eq!(first.letters.len(), 3);
    assert!(first.letters.iter().all(|d| d.reason == "timeout talking to db"));
    let second = engine.dead_letter_page(queue.id, first.next.as_deref(), 3, "timeout").await.unwrap().unwrap();
    assert_eq!(second.letters.len(), 1, "the fourth, then the end");
    assert!(second.next.is_none());
    let all = engine.dead_letter_page(queue.id, None, 100, "").await.unwrap().unwrap();
    assert_eq!((all.letters.len(), all.next), (7, None));

    let replayed = engine.replay_dead_letters(queue.id, &Selection::ReasonContains("bad".into())).await.unwrap();
    assert_eq!(replayed, 3);
    let left = engine.dead_letter_page(queue.id, None, 100, "").await.unwrap().unwrap();
    assert!(left.letters.iter().all(|d| d.reason.starts_with("timeout")) && left.letters.len() == 4);
    assert_eq!(engine.stats(queue.id, now_ms()).await.unwrap().unwrap().ready, 3);

    // The API takes the same filter.
    let (status, body) =
        app.post(&queue.token, &app.url(&queue, "/dead-letters/purge"), &json!({"reason": "talking"})).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"purged": 4})));
    let (status, body) =
        app.post(&queue.token, &app.url(&queue, "/dead-letters/replay"), &json!({"reason": "", "all": true})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"], "invalid_request");
}

#[tokio::test]
async fn a_filtered_replay_walks_past_a_whole_chunk_of_other_reasons() {
    let app = spawn_app().await;
    let queue = app.queue_with(|m| m.max_attempts = 1).await;
    // More dead letters than one chunk (500) that the filter skips, then one it selects.
    let engine = &app.state.engine;
    for _ in 0..6 {
        fail_with(&app, &queue, 100, "other").await;
    }
    fail_with(&app, &queue, 1, "needle").await;
    assert_eq!(engine.count_dead_letters(queue.id, "needle").await.unwrap(), 1);
    let page = engine.dead_letter_page(queue.id, None, 10, "needle").await.unwrap().unwrap();
    assert!(page.letters.is_empty() && page.next.is_some(), "a short page that goes on");
    assert_eq!(engine.replay_dead_letters(queue.id, &Selection::ReasonContains("needle".into())).await.unwrap(), 1);
    assert_eq!(engine.count_dead_letters(queue.id, "").await.unwrap(), 600);
}

#[tokio::test]
async fn the_last_hour_counts_every_kind_per_minute() {
    let app = spawn_app().await;
    let queue = app.queue_with(|m| m.max_attempts = 1).await;
    for i in 0..3 {
        app.publish_text(&queue, &format!("single {i}")).await;
    }
    let (status, _) = app
        .post(&queue.token, &app.url(&queue, "/messages/batch"), &json!({"messages": [{"body": "a"}, {"body": "b"}]}))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let leased = app.consume(&queue, json!({"max_messages": 5})).await;
    assert_eq!(leased.len(), 5);
    let acked: Vec<String> = leased[..3].iter().map(|m| text(m, "receipt")).collect();
    app.ack(&queue, &acked.iter().map(String::as_str).collect::<Vec<_>>()).await;
    let failed: Vec<String> = leased[3..].iter().map(|m| text(m, "receipt")).collect();
    app.nack(&queue, json!({"receipts": failed, "error": "no"})).await;

    // Single publishes reach Redis with the next flush; this process counts them meanwhile.
    eventually("the minutes add up", || async {
        let minutes = app.state.engine.minute_counts(queue.id, now_ms()).await.unwrap();
        assert_eq!(minutes.len(), 60);
        let sum = |f: fn(&aqs_engine::MinuteCount) -> u64| minutes.iter().map(f).sum::<u64>();
        (sum(|m| m.published), sum(|m| m.delivered), sum(|m| m.acked), sum(|m| m.dead_lettered)) == (5, 5, 3, 2)
    })
    .await;
    let mut conn = app.redis.clone();
    let ttl: i64 = redis::cmd("PTTL").arg(app.keys.queue(queue.id).minutes()).query_async(&mut conn).await.unwrap();
    assert!(ttl > 0 && ttl <= 7_260_000, "the ring expires: {ttl}");
}
