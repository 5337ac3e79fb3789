//! Push delivery in message mode against real handlers on loopback: what each class of answer does,
//! Retry-After, timeouts, redirects, the request body, pausing, and consume refused on a pushed queue.

use crate::helpers::spawn_app;
use crate::push_handler::{Reply, always, handler, record};
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_2xx_acknowledges_and_the_body_follows_the_push_contract() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let hook = always(200).await;
    app.set_push(&queue, &record(&queue, &hook.url)).await;
    // What `sdk.queue.push("emails", {to: "a@b.com"})` sends: body = JSON.stringify(payload).
    let id = app.publish(&queue, json!({ "body": "{\"to\":\"a@b.com\"}" })).await["id"].as_str().unwrap().to_owned();
    let seen = hook.wait_for(1, WAIT).await;
    assert_eq!(
        seen[0].body,
        json!({ "id": id, "queue": queue.slug, "payload": "{\"to\":\"a@b.com\"}", "attempts": 0 }),
        "payload arrives as the JSON string the producer serialised"
    );
    assert!(seen[0].body["payload"].is_string());
    assert_eq!(seen[0].header("content-type"), "application/json");
    assert_eq!(seen[0].header("webhook-id"), id);
    app.wait_drained(&queue, WAIT).await;
    let stats = app.state.engine.stats(queue.id, aqs_core::time::now_ms()).await.unwrap().unwrap();
    assert_eq!((stats.delivered_today, stats.acked_today), (1, 1), "a push counts as a delivery");
    let log = app.push_log(&queue).await;
    assert_eq!(log[0]["outcome"], "acked");
    assert_eq!(log[0]["status"], 200);
    assert_eq!(log[0]["message_id"], id);
}

#[tokio::test]
async fn a_body_that_is_not_utf8_arrives_as_payload_base64() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let hook = always(204).await;
    app.set_push(&queue, &record(&queue, &hook.url)).await;
    app.publish(&queue, json!({ "body_base64": "/wD+" })).await;
    let seen = hook.wait_for(1, WAIT).await;
    assert_eq!(seen[0].body["payload_base64"], "/wD+");
    assert!(seen[0].body.get("payload").is_none());
}

#[tokio::test]
async fn retryable_statuses_are_retried_with_attempts_counting_previous_deliveries() {
    let app = spawn_app().await;
    let mut hooks = Vec::new();
    for status in [500, 408, 429, 503] {
        let queue = app.queue().await;
        let hook =
            handler(move |_, i| if i == 0 { Reply::status(status).body("busy") } else { Reply::status(200) }).await;
        app.set_push(&queue, &record(&queue, &hook.url)).await;
        app.publish_text(&queue, "job").await;
        hooks.push((status, queue, hook));
    }
    for (status, queue, hook) in &hooks {
        let seen = hook.wait_for(2, WAIT).await;
        assert_eq!(seen[0].body["attempts"], 0, "{status}");
        assert_eq!(seen[1].body["attempts"], 1, "{status}");
        assert_eq!(seen[0].body["id"], seen[1].body["id"]);
        app.wait_drained(queue, WAIT).await;
        assert!(app.state.engine.dead_letters(queue.id, 10).await.unwrap().unwrap().is_empty());
        let log = app.push_log(queue).await;
        assert_eq!((log[1]["outcome"].as_str(), log[1]["status"].as_u64()), (Some("retried"), Some(*status as u64)));
        assert_eq!(log[0]["outcome"], "acked");
    }
}

#[tokio::test]
async fn other_4xx_and_3xx_dead_letter_at_once_with_status_and_body_and_redirects_are_not_followed() {
    let app = spawn_app().await;
    let elsewhere = always(200).await;
    let mut cases = Vec::new();
    for status in [400, 404, 301] {
        let queue = app.queue().await;
        let location = elsewhere.url.clone();
        let hook = handler(move |_, _| {
            Reply::status(status).body(&format!("no thanks {}", "x".repeat(2000))).header("location", &location)
        })
        .await;
        app.set_push(&queue, &record(&queue, &hook.url)).await;
        let id = app.publish_text(&queue, "job").await;
        cases.push((status, queue, hook, id));
    }
    for (status, queue, hook, id) in &cases {
        let dead = app.wait_dead(queue, 1, WAIT).await;
        assert_eq!(dead[0].id, *id);
        assert_eq!(dead[0].attempts, 1, "{status}: dead-lettered at once");
        let expected = format!("handler answered {status}: no thanks {}", "x".repeat(1024 - 10));
        assert_eq!(dead[0].reason, expected, "{status}: status and the first KiB of the body");
        assert_eq!(hook.seen().len(), 1, "{status}: never retried");
        assert_eq!(app.push_log(queue).await[0]["outcome"], "dead_lettered");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(elsewhere.seen().is_empty(), "the 301 was not followed");
}

#[tokio::test]
async fn the_last_attempt_dead_letters_with_the_handlers_answer() {
    let app = spawn_app().await;
    let queue = app.queue_with(|m| m.max_attempts = 2).await;
    let hook = handler(|_, _| Reply::status(500).body("boom")).await;
    app.set_push(&queue, &record(&queue, &hook.url)).await;
    app.publish_text(&queue, "job").await;
    let dead = app.wait_dead(&queue, 1, WAIT).await;
    assert_eq!((dead[0].attempts, dead[0].reason.as_str()), (2, "handler answered 500: boom"));
    assert_eq!(hook.seen().len(), 2);
}

#[tokio::test]
async fn a_numeric_retry_after_is_honoured() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let hook =
        handler(|_, i| if i == 0 { Reply::status(503).header("retry-after", "3") } else { Reply::status(200) }).await;
    app.set_push(&queue, &record(&queue, &hook.url)).await;
    app.publish_text(&queue, "job").await;
    let seen = hook.wait_for(2, WAIT).await;
    let gap = seen[1].at - seen[0].at;
    assert!(gap >= Duration::from_secs(2) && gap <= Duration::from_secs(4), "retried after {gap:?}, asked 3 s");
}

#[tokio::test]
async fn an_http_date_retry_after_is_ignored_for_the_default_backoff() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let hook = handler(|_, i| {
        if i == 0 {
            Reply::status(429).header("retry-after", "Fri, 31 Dec 2099 23:59:59 GMT")
        } else {
            Reply::status(200)
        }
    })
    .await;
    app.set_push(&queue, &record(&queue, &hook.url)).await;
    app.publish_text(&queue, "job").await;
    let seen = hook.wait_for(2, WAIT).await;
    let gap = seen[1].at - seen[0].at;
    // The first default backoff is 0.5 to 1 s.
    assert!(gap >= Duration::from_millis(400) && gap <= Duration::from_secs(3), "retried after {gap:?}");
}

#[tokio::test]
async fn a_handler_timeout_is_retried_and_counts_as_an_attempt() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let hook =
        handler(|_, i| if i == 0 { Reply::status(200).after(Duration::from_secs(3)) } else { Reply::status(200) })
            .await;
    let mut target = record(&queue, &hook.url);
    target.timeout_seconds = 1;
    app.set_push(&queue, &target).await;
    app.publish_text(&queue, "slow").await;
    let seen = hook.wait_for(2, WAIT).await;
    assert_eq!((seen[0].body["attempts"].as_u64(), seen[1].body["attempts"].as_u64()), (Some(0), Some(1)));
    app.wait_drained(&queue, WAIT).await;
    let log = app.push_log(&queue).await;
    assert_eq!(log[1]["outcome"], "retried");
    assert!(log[1]["status"].is_null(), "a timeout has no status");
    assert!(log[1]["detail"].as_str().unwrap().contains("did not answer"));
}

#[tokio::test]
async fn a_paused_queue_delivers_nothing_until_resumed() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let hook = always(200).await;
    app.publish_text(&queue, "waiting").await;
    app.set_paused(&queue, true).await;
    app.set_push(&queue, &record(&queue, &hook.url)).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(hook.seen().is_empty(), "a paused queue sent something");
    app.set_paused(&queue, false).await;
    hook.wait_for(1, WAIT).await;
    app.wait_drained(&queue, WAIT).await;
}

#[tokio::test]
async fn consume_on_a_pushed_queue_is_409_push_enabled() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let hook = always(200).await;
    app.set_push(&queue, &record(&queue, &hook.url)).await;
    let (status, body) = app.post(&queue.token, &app.url(&queue, "/consume"), &json!({})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"], "push_enabled");
}

#[tokio::test]
async fn at_most_concurrency_requests_are_in_flight() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let hook = handler(|_, _| Reply::status(200).after(Duration::from_millis(200))).await;
    let mut target = record(&queue, &hook.url);
    target.concurrency = 2;
    for i in 0..8 {
        app.publish_text(&queue, &format!("m{i}")).await;
    }
    app.set_push(&queue, &target).await;
    hook.wait_for(8, WAIT).await;
    app.wait_drained(&queue, WAIT).await;
    assert!(hook.max_in_flight() <= 2, "{} in flight", hook.max_in_flight());
    assert_eq!(hook.max_in_flight(), 2, "the cap is used");
}

/// Deliveries reuse their connections; a handler that closes its connection after every answer
/// still gets each message once, and each is acknowledged: no delivery fails on a connection the
/// handler had closed.
#[tokio::test]
async fn a_handler_that_closes_every_connection_gets_each_message_once() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let hook = handler(|_, _| Reply::status(200).header("connection", "close")).await;
    app.set_push(&queue, &record(&queue, &hook.url)).await;
    for i in 0..30 {
        app.publish_text(&queue, &format!("job {i}")).await;
    }
    let seen = hook.wait_for(30, WAIT).await;
    app.wait_drained(&queue, WAIT).await;
    let ids: std::collections::HashSet<String> =
        seen.iter().map(|s| s.body["id"].as_str().unwrap().to_owned()).collect();
    assert_eq!((seen.len(), ids.len()), (30, 30), "each message once");
    // A delivery that failed would have been delivered again: 31 deliveries or more.
    let stats = app.state.engine.stats(queue.id, aqs_core::time::now_ms()).await.unwrap().unwrap();
    assert_eq!((stats.delivered_today, stats.acked_today), (30, 30));
    let log = app.push_log(&queue).await;
    assert!(log.iter().all(|line| line["outcome"] == "acked"), "{log:?}");
}
