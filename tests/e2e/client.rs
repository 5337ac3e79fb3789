//! `aqs-client` against the real binary: every queue route through the typed client, errors by
//! code, and the consumer loop's batch semantics (checked through stats and dead letters).

use crate::harness::{Redis, Server, Tenant, fresh_database};
use aqs_client::consumer::{self, Counts};
use aqs_client::{Batch, Body, Client, ConsumeRequest, ConsumerOptions, Error, ErrorCode, NewMessage, Selection};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn consume_now(max: u32) -> ConsumeRequest {
    ConsumeRequest { max_messages: max, max_wait_seconds: 0, visibility_seconds: Some(60) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_speaks_every_queue_route() {
    let redis = Redis::start("everysec");
    let server = Server::start(&fresh_database().await, &redis.url(), &aqs_testkit::namespace()).await;
    let tenant = Tenant::sign_up(&server, json!({"name": "client-routes", "max_attempts": 2})).await;
    let client = Client::new(server.base(), &tenant.token);
    let queue = client.queue(&tenant.slug);

    assert!(client.health().await.unwrap().ok);
    let mut attributes = Map::new();
    attributes.insert("tenant".into(), json!("t-1"));
    let first = queue
        .publish(NewMessage::json(&json!({"type": "resize"})).unwrap().with_idempotency_key("resize-42"))
        .await
        .unwrap();
    assert!(!first.duplicate);
    let again = queue
        .publish(NewMessage::json(&json!({"type": "resize"})).unwrap().with_idempotency_key("resize-42"))
        .await
        .unwrap();
    assert!(again.duplicate && again.id == first.id);
    let conflict = queue.publish(NewMessage::text("other").with_idempotency_key("resize-42")).await.unwrap_err();
    assert_eq!(conflict.code(), Some(&ErrorCode::IdempotencyConflict));
    assert_eq!(conflict.status(), Some(409));
    queue.publish(NewMessage::text("hello").with_attributes(attributes.clone()).with_group_id("g-1")).await.unwrap();
    queue.publish(NewMessage::bytes(&[0, 159, 255])).await.unwrap();
    queue.publish(NewMessage::text("later").with_delay_seconds(600)).await.unwrap();

    let too_many = vec![NewMessage::text("x"); 101];
    assert!(matches!(queue.publish_batch(too_many).await, Err(Error::Invalid(_))));
    let published = queue.publish_batch(vec![NewMessage::text("b1"), NewMessage::raw_json("[1]")]).await.unwrap();
    assert_eq!(published.len(), 2);

    let stats = queue.stats().await.unwrap();
    assert_eq!((stats.depth.ready, stats.depth.delayed, stats.depth.total), (5, 1, 6));
    let peeked = queue.peek(100).await.unwrap();
    assert_eq!(peeked.len(), 5);
    assert_eq!(peeked[0].id, first.id);

    let batch = Batch::new(queue.slug(), queue.consume(&consume_now(10)).await.unwrap());
    let bodies: Vec<&Body> = batch.messages().iter().map(|m| &m.body).collect();
    assert_eq!(
        bodies,
        [
            &Body::Json(json!({"type": "resize"})),
            &Body::Text("hello".into()),
            &Body::Bytes(vec![0, 159, 255]),
            &Body::Text("b1".into()),
            &Body::Json(json!([1])),
        ]
    );
    let hello = &batch.messages()[1];
    assert_eq!((hello.attributes.clone(), hello.group_id.as_deref(), hello.attempts), (attributes, Some("g-1"), 1));

    let mut receipts: Vec<String> = batch.messages().iter().map(|m| m.receipt.clone()).collect();
    // A heartbeat: the lease moves and a fresh receipt replaces the old one; a bad receipt is
    // reported per entry.
    let extended = queue.extend(&[receipts[0].clone(), "not-a-receipt".into()], 600).await.unwrap();
    assert_eq!((extended.extended.len(), extended.failed[0].error.as_str()), (1, "receipt_invalid"));
    assert_eq!(extended.extended[0].receipt, receipts[0]);
    receipts[0] = extended.extended[0].new_receipt.clone();
    let too_long = queue.extend(&receipts[..1], 13 * 3600).await.unwrap_err();
    assert_eq!(too_long.code(), Some(&ErrorCode::InvalidRequest));
    assert_eq!(queue.ack(&receipts[..2]).await.unwrap().acked, 2);
    let stale = queue.ack(&receipts[..1]).await.unwrap();
    assert_eq!((stale.acked, stale.failed[0].error.as_str()), (0, "lease_lost"));
    assert_eq!(queue.nack(&receipts[2..], 0, Some("first try failed")).await.unwrap().nacked, 3);

    // The second delivery is the last of two attempts: a nack dead-letters with its reason.
    let second = queue.consume(&consume_now(10)).await.unwrap();
    assert_eq!(second.len(), 3);
    assert!(second.iter().all(|m| m.attempts == 2));
    let receipts: Vec<String> = second.iter().map(|m| m.receipt.clone()).collect();
    queue.nack(&receipts, 0, Some("gave up")).await.unwrap();
    let dead = queue.dead_letters(100).await.unwrap();
    assert_eq!(dead.len(), 3);
    assert!(dead.iter().all(|d| d.reason.contains("gave up") && d.attempts == 2), "{dead:?}");
    assert_eq!(queue.replay_dead_letters(&Selection::Ids(vec![dead[0].id.clone()])).await.unwrap(), 1);
    assert_eq!(queue.purge_dead_letters(&Selection::All).await.unwrap(), 2);
    assert_eq!(queue.purge().await.unwrap(), 1, "the replayed message is ready again");
    let stats = queue.stats().await.unwrap();
    assert_eq!((stats.depth.total, stats.dead_letters), (1, 0), "only the delayed message is left");

    // A consume that acknowledges the previous batch first: one request instead of two.
    queue.publish_batch(vec![NewMessage::text("c1"), NewMessage::text("c2")]).await.unwrap();
    let leased = queue.consume(&consume_now(1)).await.unwrap();
    let (next, acked) = queue.consume_acking(&consume_now(10), &[leased[0].receipt.clone()]).await.unwrap();
    assert_eq!((acked.acked, next.len()), (1, 1), "the acknowledged message is gone, the other leased");
    assert!(matches!(queue.consume_acking(&consume_now(1), &[]).await, Err(Error::Invalid(_))));

    let stranger = Client::builder(server.base(), "acq_notatoken").max_retries(0).build();
    let refused = stranger.queue(&tenant.slug).stats().await.unwrap_err();
    assert_eq!((refused.code(), refused.status()), (Some(&ErrorCode::Unauthorized), Some(401)));
    // The typed error is the wire's envelope, code for code.
    let (status, raw) = tenant.post("consume", json!({"max_messages": 0})).await;
    let typed = queue.consume(&ConsumeRequest { max_messages: 0, max_wait_seconds: 0, visibility_seconds: None }).await;
    let typed = typed.unwrap_err();
    assert_eq!((typed.status(), typed.code().map(ErrorCode::as_str)), (Some(status), raw["error"].as_str()));
    assert_eq!(typed.code(), Some(&ErrorCode::InvalidRequest));
    let other = Tenant::sign_up(&server, json!({"name": "client-other"})).await;
    let wrong = Client::new(server.base(), &other.token).queue(&tenant.slug).stats().await.unwrap_err();
    assert_eq!(wrong.code(), Some(&ErrorCode::NotFound));
}

/// Runs the consumer loop until `done(counts)` holds, then stops it.
async fn consume_until<F, Fut>(
    queue: &aqs_client::Queue,
    options: ConsumerOptions,
    done: impl Fn(&Counts) -> bool,
    handler: F,
) -> Arc<Counts>
where
    F: Fn(Batch) -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let counts = Arc::new(Counts::default());
    let stop = CancellationToken::new();
    let watch = async {
        while !done(&counts) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        stop.cancel();
    };
    tokio::join!(consumer::run(queue, &options, &stop, &counts, handler), watch);
    counts
}

fn number(message: &aqs_client::Message) -> u64 {
    match &message.body {
        Body::Json(Value::Object(map)) => map["n"].as_u64().unwrap(),
        other => panic!("unexpected body {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_consumer_loop_has_the_worker_trigger_semantics() {
    let redis = Redis::start("everysec");
    let server = Server::start(&fresh_database().await, &redis.url(), &aqs_testkit::namespace()).await;
    let tenant = Tenant::sign_up(&server, json!({"name": "client-loop"})).await;
    let queue = Client::new(server.base(), &tenant.token).queue(&tenant.slug);
    let last_try = Tenant::sign_up(&server, json!({"name": "client-last-try", "max_attempts": 1})).await;
    let last_try = Client::new(server.base(), &last_try.token).queue(&last_try.slug);
    let numbers = |range: std::ops::Range<u64>| -> Vec<NewMessage> {
        range.map(|n| NewMessage::json(&json!({"n": n})).unwrap()).collect()
    };
    let publish_numbers = |range| queue.publish_batch(numbers(range));
    let options = ConsumerOptions { messages_per_run: 10, wait_seconds: 1, ..ConsumerOptions::default() };

    // ack, retry and unmentioned.
    publish_numbers(0..3).await.unwrap();
    let counts = consume_until(
        &queue,
        options.clone(),
        |c| c.snapshot().0 >= 1,
        |batch: Batch| async move {
            for message in batch.messages() {
                match number(message) {
                    0 => message.ack(),
                    1 => message.retry(600),
                    _ => {}
                }
            }
            Ok(())
        },
    )
    .await;
    assert_eq!(counts.snapshot(), (1, 2, 1));
    let stats = queue.stats().await.unwrap();
    assert_eq!((stats.acked_today, stats.depth.total), (2, 1));

    // An error returns what the handler did not decide; on the last attempt that is a dead letter.
    last_try.publish_batch(numbers(10..13)).await.unwrap();
    let counts = consume_until(
        &last_try,
        options.clone(),
        |c| c.snapshot().0 >= 1,
        |batch: Batch| async move {
            for message in batch.messages() {
                if number(message) == 10 {
                    message.ack();
                }
            }
            Err("the handler failed on purpose".to_owned())
        },
    )
    .await;
    assert_eq!(counts.snapshot(), (1, 1, 2));
    let dead = last_try.dead_letters(100).await.unwrap();
    assert_eq!(dead.len(), 2);
    assert_eq!(last_try.stats().await.unwrap().acked_today, 1);
    assert!(dead.iter().all(|d| d.reason.contains("the handler failed on purpose")), "{dead:?}");

    // ack_all and retry_all: the last call for a message wins.
    publish_numbers(20..22).await.unwrap();
    let counts = consume_until(
        &queue,
        options.clone(),
        |c| c.snapshot().0 >= 1,
        |batch: Batch| async move {
            batch.retry_all(600);
            batch.ack_all();
            Ok(())
        },
    )
    .await;
    assert_eq!(counts.snapshot(), (1, 2, 0));

    // Many batches at once: every message handled and acknowledged, none lost.
    for start in (100..400).step_by(100) {
        publish_numbers(start..start + 100).await.unwrap();
    }
    let seen = Arc::new(std::sync::Mutex::new(std::collections::BTreeSet::new()));
    let concurrent = ConsumerOptions { concurrency: 4, ..options };
    let counts = consume_until(
        &queue,
        concurrent,
        |c| c.snapshot().1 >= 300,
        |batch: Batch| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().extend(batch.messages().iter().map(number));
                Ok(())
            }
        },
    )
    .await;
    assert_eq!(counts.snapshot().1, 300);
    assert_eq!(seen.lock().unwrap().len(), 300);
    let stats = queue.stats().await.unwrap();
    assert_eq!(stats.depth.total, 1, "only the message retried in 600 s is left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_refused_with_503_is_retried_after_retry_after_and_stored_once() {
    let mut redis = Redis::start("always");
    let server = Server::start(&fresh_database().await, &redis.url(), &aqs_testkit::namespace()).await;
    let tenant = Tenant::sign_up(&server, json!({"name": "client-outage"})).await;
    let retrying = Client::builder(server.base(), &tenant.token).max_retries(60).build().queue(&tenant.slug);

    redis.kill9();
    let publish = tokio::spawn(async move { retrying.publish(NewMessage::text("during the outage")).await });
    // The same request without retries is refused meanwhile: the outage is real.
    let (status, body) = tenant.publish("probe").await;
    assert_eq!((status, body["error"].as_str()), (503, Some("service_unavailable")), "{body}");
    assert!(!publish.is_finished(), "the retrying publish waits for Redis");
    tokio::task::block_in_place(|| redis.restart());

    let published = publish.await.unwrap().expect("retried until Redis was back");
    assert!(!published.duplicate);
    let stats = tenant.queue.stats().await.unwrap();
    assert_eq!(stats.depth.total, 1, "stored once");
}
