//! Long polls: woken by a publish through this process or another, or returning after the wait.

use crate::helpers::*;
use serde_json::json;
use std::time::{Duration, Instant};

/// Well inside the 10 s wait of `wake_latency`: the poll was woken by the publish, not ended by
/// its wait. How fast the wake-up is belongs to the benchmark, not to a test on a shared machine.
const WOKEN: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_wakes_a_waiting_consumer_quickly() {
    let app = spawn_app().await;
    app.listening().await;
    let queue = app.queue().await;
    let (latency, received) = wake_latency(&app, &app, &queue).await;
    assert_eq!(received, 1);
    assert!(latency < WOKEN, "woken after {latency:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_through_another_process_wakes_the_waiter() {
    let first = spawn_app().await;
    let second = spawn_app_in(&first.namespace).await;
    first.listening().await;
    let queue = first.queue().await;
    let (latency, received) = wake_latency(&first, &second, &queue).await;
    assert_eq!(received, 1);
    assert!(latency < WOKEN, "woken after {latency:?}");
}

/// The publishing replica wakes its own long polls when its script returns, not when its PUBLISH
/// comes back: with no wake-up subscriber at all, its poll is still woken by the publish (else it
/// would wait out its 10 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_wakes_the_waiter_on_its_own_replica_without_the_wake_channel() {
    let app = spawn_app_without_subscriber().await;
    let queue = app.queue().await;
    let (latency, received) = wake_latency(&app, &app, &queue).await;
    assert_eq!(received, 1);
    assert!(!app.state.is_listening());
    assert!(latency < WOKEN, "woken after {latency:?}");
}

#[tokio::test]
async fn an_empty_queue_answers_after_the_wait() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let start = Instant::now();
    let messages = app.consume(&queue, json!({"max_wait_seconds": 1})).await;
    let waited = start.elapsed();
    assert!(messages.is_empty());
    assert!(waited >= Duration::from_millis(950) && waited < WOKEN, "{waited:?}");
    let start = Instant::now();
    assert!(app.consume(&queue, json!({"max_wait_seconds": 0})).await.is_empty());
    assert!(start.elapsed() < Duration::from_millis(950), "a zero wait waited");
}

#[tokio::test]
async fn a_paused_queue_refuses_publishes_and_delivers_nothing() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    app.publish_text(&queue, "before pause").await;
    app.set_paused(&queue, true).await;
    let (status, body) = app.post(&queue.token, &app.url(&queue, "/messages"), &json!({"body": "x"})).await;
    assert_eq!(status, reqwest::StatusCode::CONFLICT);
    assert_eq!(body["error"], "queue_paused");
    let (status, body) =
        app.post(&queue.token, &app.url(&queue, "/messages/batch"), &json!({"messages": [{"body": "x"}]})).await;
    assert_eq!((status, &body["error"]), (reqwest::StatusCode::CONFLICT, &json!("queue_paused")));
    let start = Instant::now();
    assert!(app.consume(&queue, json!({"max_wait_seconds": 2})).await.is_empty());
    assert!(start.elapsed() < Duration::from_millis(1900), "a paused queue waited out its 2 s");
    assert_eq!(app.stats(&queue).await["paused"], true);
    app.set_paused(&queue, false).await;
    assert_eq!(app.consume(&queue, json!({})).await.len(), 1);
}

#[tokio::test]
async fn shutdown_ends_a_waiting_long_poll() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let waiter = {
        let (client, url, token) = (app.client.clone(), app.url(&queue, "/consume"), queue.token.clone());
        tokio::spawn(async move {
            let response =
                client.post(url).bearer_auth(token).json(&json!({"max_wait_seconds": 20})).send().await.unwrap();
            response.json::<serde_json::Value>().await.unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let start = Instant::now();
    app.shutdown();
    let body = tokio::time::timeout(WOKEN, waiter).await.expect("answered on shutdown").unwrap();
    assert_eq!(body["messages"], json!([]));
    assert!(start.elapsed() < WOKEN, "the 20 s wait was not cut short");
}

/// A publish PUBLISHes a wake-up only while a long poll may be waiting on the queue: the common
/// publish with nobody waiting costs Redis no PUBLISH, and a waiting poll is still woken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishes_signal_the_wake_channel_only_while_a_poll_waits() {
    use futures_util::StreamExt;
    let app = spawn_app().await;
    app.listening().await;
    let queue = app.queue().await;
    let mut pubsub = redis::Client::open(redis_url()).unwrap().get_async_pubsub().await.unwrap();
    pubsub.subscribe(app.keys.queue(queue.id).wake()).await.unwrap();
    let mut signals = pubsub.on_message();

    app.publish_text(&queue, "nobody waits").await;
    let quiet = tokio::time::timeout(Duration::from_millis(300), signals.next()).await;
    assert!(quiet.is_err(), "a publish with no waiting poll signalled the wake channel");
    assert_eq!(app.consume(&queue, json!({"max_messages": 10})).await.len(), 1);

    let (latency, received) = wake_latency(&app, &app, &queue).await;
    assert_eq!(received, 1);
    assert!(latency < WOKEN, "woken after {latency:?}");
    let signal = tokio::time::timeout(Duration::from_secs(1), signals.next()).await;
    let payload: String = signal.expect("no wake-up signal while a poll waited").unwrap().get_payload().unwrap();
    // Named for the publishing replica, whose subscriber skips it: that replica woke its own.
    assert_eq!(payload, format!("1:{}", app.state.engine.replica()));
}

/// A publish that does not come through the publish route (the console's "Send a message" form,
/// anything else calling the engine) wakes this process's long polls too: the engine wakes them
/// after its write, whoever called it. Its PUBLISH names this replica, whose subscriber skips it,
/// so when the route did the waking this poll slept to its deadline (measured: 18.8 s of 20).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_through_the_engine_wakes_the_waiter_on_its_own_replica() {
    let app = spawn_app().await;
    app.listening().await;
    let queue = app.queue().await;
    let deadline = Duration::from_secs(20);
    let waiter = {
        let (client, url, token) = (app.client.clone(), app.url(&queue, "/consume"), queue.token.clone());
        let body = json!({"max_wait_seconds": deadline.as_secs()});
        tokio::spawn(async move {
            let response = client.post(url).bearer_auth(token).json(&body).send().await.unwrap();
            response.json::<serde_json::Value>().await.unwrap()
        })
    };
    // The poll found nothing and marked the queue as waited on (`w` in its meta).
    let meta = app.keys.queue(queue.id).meta();
    eventually("the long poll waits", || {
        let (mut redis, meta) = (app.redis.clone(), meta.clone());
        async move { redis::cmd("HEXISTS").arg(&meta).arg("w").query_async::<bool>(&mut redis).await.unwrap() }
    })
    .await;
    let message = aqs_engine::NewMessage::text("sent from the console");
    let published = Instant::now();
    let outcome = app.state.engine.publish(queue.id, &[message], aqs_core::time::now_ms()).await.unwrap();
    assert!(matches!(outcome, aqs_engine::PublishOutcome::Stored(_)), "{outcome:?}");
    let body = tokio::time::timeout(deadline + WOKEN, waiter).await.expect("the poll answered").unwrap();
    assert_eq!(body["messages"].as_array().unwrap().len(), 1, "{body}");
    assert!(published.elapsed() < deadline / 2, "the poll returned at its deadline, not woken by the publish");
}
