//! Per-token rate limits hold for the whole deployment: two data-plane processes sharing one Redis
//! draw on one budget per token and class, and a refused request changes nothing.

use crate::helpers::{TestApp, TestQueue, spawn_app, spawn_app_in};
use aqs_core::projection::TokenRecord;
use aqs_core::time::now_ms;
use aqs_core::token::{Scope, TokenSecret};
use aqs_engine::{Charge, Class, NewMessage, PublishOutcome, StorageError};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Sends `body` to `path` and answers the status, the `Retry-After` and `RateLimit-*` headers
/// (absent ones as ""), and the body.
async fn call(app: &TestApp, token: &str, queue: &TestQueue, path: &str, body: &Value) -> Answer {
    let response = app.client.post(app.url(queue, path)).bearer_auth(token).json(body).send().await.unwrap();
    let header = |name: &str| response.headers().get(name).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    let headers =
        [header("retry-after"), header("ratelimit-limit"), header("ratelimit-remaining"), header("ratelimit-reset")];
    let status = response.status();
    Answer { status, headers, body: response.json().await.unwrap_or(Value::Null) }
}

struct Answer {
    status: StatusCode,
    /// Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset.
    headers: [String; 4],
    body: Value,
}

impl Answer {
    /// Asserts a 429 `rate_limited` with a Retry-After of 1 to `max_retry` seconds, the same
    /// RateLimit-Reset, the budget `limit` and nothing remaining.
    fn assert_refused(&self, limit: u64, max_retry: u64) {
        assert_eq!(self.status, StatusCode::TOO_MANY_REQUESTS, "{}", self.body);
        assert_eq!(self.body["error"], "rate_limited", "{}", self.body);
        let [retry, budget, remaining, reset] = &self.headers;
        let retry: u64 = retry.parse().expect("a Retry-After in whole seconds");
        assert!((1..=max_retry).contains(&retry), "Retry-After {retry}");
        assert_eq!(reset, &retry.to_string(), "RateLimit-Reset says when, as Retry-After does");
        assert_eq!(budget, &limit.to_string());
        assert_eq!(remaining, "0");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_token_is_held_to_its_budget_across_two_replicas() {
    let first = spawn_app().await;
    let second = spawn_app_in(&first.namespace).await;
    let queue = first.queue().await;
    let (token, token_id) = token_with_id(&first, &queue).await;
    let replicas = [&first, &second];
    // Purges and dead-letter actions: 6 a minute per token, taken in turn on either replica.
    for i in 0..6 {
        let path = if i % 3 == 2 { "/dead-letters/purge" } else { "/purge" };
        let body = if i % 3 == 2 { json!({"all": true}) } else { json!({}) };
        let answer = call(replicas[i % 2], &token, &queue, path, &body).await;
        assert_eq!(answer.status, StatusCode::OK, "action {i} on replica {}: {}", i % 2, answer.body);
    }
    // The seventh is refused whichever replica it reaches (one action per 10 s refills the budget).
    for app in replicas {
        call(app, &token, &queue, "/purge", &json!({})).await.assert_refused(6, 10);
        call(app, &token, &queue, "/dead-letters/replay", &json!({"all": true})).await.assert_refused(6, 10);
    }
    // One bucket in Redis, in the queue's hash slot; it expires once full again.
    let ttl: i64 = redis::cmd("PTTL")
        .arg(first.keys.rate_bucket(queue.id, token_id, "a"))
        .query_async(&mut first.redis.clone())
        .await
        .unwrap();
    assert!(ttl > 0 && ttl <= 60_000, "PTTL {ttl}");
    // Budgets are per token and per class.
    let other = first.token(queue.id, &[Scope::Manage]).await;
    assert_eq!(call(&second, &other, &queue, "/purge", &json!({})).await.status, StatusCode::OK);
    let (status, _) = second.get(&token, &second.url(&queue, "/stats")).await;
    assert_eq!(status, StatusCode::OK, "reads have a budget of their own");
}

#[tokio::test]
async fn a_refused_publish_stores_nothing() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let (token, token_id) = token_with_id(&app, &queue).await;
    let first = call(&app, &token, &queue, "/messages", &json!({"body": "kept"})).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    let before = app.stats(&queue).await;

    // The token's message budget is spent for the next minute, as if another replica had spent it.
    let bucket = app.keys.rate_bucket(queue.id, token_id, "m");
    let spent_until = now_ms() + 60_000;
    let _: () = redis::cmd("SET")
        .arg(&bucket)
        .arg(spent_until)
        .arg("PX")
        .arg(60_000)
        .query_async(&mut app.redis.clone())
        .await
        .unwrap();
    let refused = [
        call(&app, &token, &queue, "/messages", &json!({"body": "plain"})).await,
        call(&app, &token, &queue, "/messages", &json!({"body": "keyed", "idempotency_key": "k1"})).await,
        call(&app, &token, &queue, "/messages", &json!({"body": "later", "delay_seconds": 30})).await,
        call(&app, &token, &queue, "/messages/batch", &json!({"messages": [{"body": "a"}, {"body": "b"}]})).await,
        call(&app, &token, &queue, "/consume", &json!({})).await,
    ];
    for answer in &refused {
        answer.assert_refused(1000, 60);
    }
    let after = app.stats(&queue).await;
    for field in ["depth", "stored_bytes", "published_today", "delivered_today"] {
        assert_eq!(after[field], before[field], "{field}: {after}");
    }
    let idempotency_record: Option<String> = redis::cmd("GET")
        .arg(app.keys.queue(queue.id).idempotency("k1"))
        .query_async(&mut app.redis.clone())
        .await
        .unwrap();
    assert_eq!(idempotency_record, None, "a refused publish leaves no idempotency record");
    let tat: u64 = redis::cmd("GET").arg(&bucket).query_async(&mut app.redis.clone()).await.unwrap();
    assert_eq!(tat, spent_until, "a refused request does not move the bucket either");

    // With the budget back, the same publishes go through: the refusal was the budget's.
    let _: () = redis::cmd("DEL").arg(&bucket).query_async(&mut app.redis.clone()).await.unwrap();
    let keyed = call(&app, &token, &queue, "/messages", &json!({"body": "keyed", "idempotency_key": "k1"})).await;
    assert_eq!(keyed.status, StatusCode::CREATED, "{}", keyed.body);
    assert_eq!(keyed.body["duplicate"], false);
}

/// A token with every scope on `queue`, and its id (the rate bucket's name carries it).
async fn token_with_id(app: &TestApp, queue: &TestQueue) -> (String, uuid::Uuid) {
    let secret = TokenSecret::generate();
    let record = TokenRecord { token_id: uuid::Uuid::new_v4(), queue: queue.id, scopes: Scope::ALL.to_vec() };
    let _: () = redis::cmd("HSET")
        .arg(app.keys.token(&secret.hash()))
        .arg(record.to_fields())
        .query_async(&mut app.redis.clone())
        .await
        .unwrap();
    (secret.expose().to_owned(), record.token_id)
}

/// Replicas claim slices of a busy token's message budget (`engine/src/slices.rs`) and admit from
/// them without charging Redis again; every slice is taken from the one budget first, so with the
/// clock held still (no refill), two replicas in turn admit exactly what is left of the budget
/// between them and refuse the rest, whoever still holds a slice.
#[tokio::test]
async fn slices_held_by_two_replicas_never_pass_the_budget() {
    let a = spawn_app().await;
    let b = spawn_app_in(&a.namespace).await;
    let queue = a.queue().await;
    let token = uuid::Uuid::new_v4();
    let now = now_ms();
    // 900 of the 1,000 spent: 100 left. (The bucket's expiry runs on the real clock.)
    let bucket = a.keys.rate_bucket(queue.id, token, "m");
    let _: () = redis::cmd("SET")
        .arg(&bucket)
        .arg(now + 900)
        .arg("PX")
        .arg(60_000)
        .query_async(&mut a.redis.clone())
        .await
        .unwrap();
    let message = NewMessage::text("x");
    let (mut admitted, mut refused) = (0, 0);
    for turn in 0..160 {
        let app = if turn % 2 == 0 { &a } else { &b };
        let engine = app.state.engine.charged(Charge::new(queue.id, token, Class::Messages, now));
        match engine.publish(queue.id, std::slice::from_ref(&message), now).await {
            Ok(PublishOutcome::Stored(_)) => admitted += 1,
            Err(StorageError::RateLimited { .. }) => refused += 1,
            other => panic!("turn {turn}: {other:?}"),
        }
    }
    assert_eq!(admitted, 100, "100 requests were left and the clock stood still");
    assert_eq!(refused, 60);
    // The bucket says the whole budget is spent: every slice was taken from it.
    let tat: u64 = redis::cmd("GET").arg(&bucket).query_async(&mut a.redis.clone()).await.unwrap();
    assert_eq!(tat, now + 1_000);
}

/// A burst of concurrent requests within the budget is admitted whole: while one grown claim is
/// on its way, the token's other requests on this replica claim one each (an earlier version grew
/// the claim once per request in flight and spent the budget on slices it then dropped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_burst_within_the_budget_is_admitted_whole() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let url = app.url(&queue, "/messages");
    for round in 0..3 {
        let bodies: Vec<Value> = (0..200).map(|i| json!({"body": format!("{round}-{i}")})).collect();
        let calls = bodies.iter().map(|body| app.post(&queue.token, &url, body));
        let results = futures_util::future::join_all(calls).await;
        let refused: Vec<_> = results.iter().filter(|(status, _)| *status != StatusCode::CREATED).collect();
        assert!(refused.is_empty(), "round {round}: {} of 200 not stored: {:?}", refused.len(), refused.first());
    }
    assert_eq!(app.stats(&queue).await["depth"]["total"], 600);
}
