//! `spawn_app()` and typed helpers for the data plane's tests; what every crate's tests share
//! (the test Redis, namespaces, the production HTTP server, `eventually`) comes from `aqs_testkit`.

use aqs_core::config::Config;
use aqs_core::ids::QueueId;
use aqs_core::keys::Keys;
use aqs_core::projection::{QueueMeta, TokenRecord};
use aqs_core::redis_conn::{self, RedisConn};
use aqs_core::token::{Scope, TokenSecret};
use aqs_data_plane::DataPlane;
use aqs_engine::Engine;
use base64::Engine as _;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

pub use aqs_testkit::{closed_port, eventually, redis_url};

pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub state: DataPlane,
    pub redis: RedisConn,
    pub keys: Keys,
    pub namespace: String,
    shutdown: CancellationToken,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

pub struct TestQueue {
    pub id: QueueId,
    pub slug: String,
    /// A token with every scope.
    pub token: String,
    pub meta: QueueMeta,
}

pub fn default_meta(id: QueueId, slug: &str) -> QueueMeta {
    QueueMeta {
        id,
        slug: slug.to_owned(),
        paused: false,
        visibility_ms: 30_000,
        max_attempts: 5,
        payload_limit: 1 << 20,
        storage_limit: 1 << 30,
        revision: 1,
        suspended: None,
    }
}

pub async fn spawn_app() -> TestApp {
    spawn_app_in(&format!("t{}", hex::encode(rand::random::<[u8; 6]>()))).await
}

/// A second process sharing the namespace of another.
pub async fn spawn_app_in(namespace: &str) -> TestApp {
    spawn_app_with(namespace, |_| {}).await
}

/// An app whose configuration `adjust` changed (e.g. the push SSRF guard turned on).
pub async fn spawn_app_with(namespace: &str, adjust: impl FnOnce(&mut Config)) -> TestApp {
    let url = redis_url();
    let mut config = Config::for_tests("", &url, namespace);
    adjust(&mut config);
    let redis = redis_conn::connect(&[url]).await.expect("test Redis");
    let state = DataPlane::new(&config, Engine::loaded(redis.clone(), &config).await.expect("engine"));
    start_with(state, redis, namespace).await
}

/// An app whose data goes to the test Redis but whose wake-up subscriber cannot connect: its
/// configured Redis URL, which only the subscriber dials, points at a closed port.
pub async fn spawn_app_without_subscriber() -> TestApp {
    let namespace = format!("t{}", hex::encode(rand::random::<[u8; 6]>()));
    // Its subscriptions go to a closed port: the wake-up subscriber never listens, so nothing but
    // a publish through this process (or a poll's own timer) can wake its long polls.
    let config = Config::for_tests("", &redis_url(), &namespace);
    let RedisConn::Single(manager, _) = redis_conn::connect(&[redis_url()]).await.expect("test Redis") else {
        panic!("the test Redis is a single server")
    };
    let nowhere = redis::Client::open(format!("redis://127.0.0.1:{}", closed_port())).unwrap();
    let redis = RedisConn::Single(manager, std::sync::Arc::new(nowhere));
    let state = DataPlane::new(&config, Engine::loaded(redis.clone(), &config).await.expect("engine"));
    start_with(state, redis, &namespace).await
}

/// An app whose Redis URL points at a closed port.
pub async fn spawn_app_without_redis() -> TestApp {
    let url = format!("redis://127.0.0.1:{}", closed_port());
    let config = Config::for_tests("", &url, "tdead");
    let client = redis::Client::open(url.as_str()).unwrap();
    let manager_config = redis::aio::ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_millis(300)))
        .set_response_timeout(Some(Duration::from_secs(1)))
        .set_number_of_retries(0);
    let manager = redis::aio::ConnectionManager::new_lazy_with_config(client.clone(), manager_config).unwrap();
    let redis = RedisConn::Single(manager, std::sync::Arc::new(client));
    let state = DataPlane::new(&config, Engine::from_config(redis.clone(), &config));
    start_with(state, redis, "tdead").await
}

/// Serves `state` on 127.0.0.1:0 with its background tasks.
pub async fn start_with(state: DataPlane, redis: RedisConn, namespace: &str) -> TestApp {
    let shutdown = CancellationToken::new();
    let base = aqs_testkit::serve(aqs_data_plane::router(state.clone()), shutdown.clone()).await;
    aqs_data_plane::spawn_background(&state, shutdown.clone());
    TestApp {
        base,
        client: reqwest::Client::new(),
        keys: Keys::new(namespace),
        namespace: namespace.to_owned(),
        state,
        redis,
        shutdown,
    }
}

impl TestApp {
    /// Fires the shutdown signal the server and background tasks were given.
    pub fn shutdown(&self) {
        self.shutdown.cancel();
    }

    /// Waits until the wake-up subscriber listens.
    pub async fn listening(&self) {
        eventually("the wake-up subscriber listens", || async { self.state.is_listening() }).await;
    }

    pub async fn queue(&self) -> TestQueue {
        self.queue_with(|_| {}).await
    }

    /// A queue with settings changed by `edit`, projected the way the control plane does it.
    pub async fn queue_with(&self, edit: impl FnOnce(&mut QueueMeta)) -> TestQueue {
        let id = QueueId::new();
        let slug = format!("q-{}", &id.to_string()[..12]);
        let mut meta = default_meta(id, &slug);
        edit(&mut meta);
        self.write_meta(&meta).await;
        let mut conn = self.redis.clone();
        let _: () =
            redis::cmd("SET").arg(self.keys.slug(&slug)).arg(id.to_string()).query_async(&mut conn).await.unwrap();
        let _: () =
            redis::cmd("SADD").arg(self.keys.queues()).arg(id.to_string()).query_async(&mut conn).await.unwrap();
        let token = self.token(id, &Scope::ALL).await;
        TestQueue { id, slug, token, meta }
    }

    pub async fn write_meta(&self, meta: &QueueMeta) {
        let mut conn = self.redis.clone();
        let _: () = redis::cmd("HSET")
            .arg(self.keys.queue(meta.id).meta())
            .arg(meta.to_fields())
            .query_async(&mut conn)
            .await
            .unwrap();
    }

    /// Pauses or resumes, and waits out the settings cache.
    pub async fn set_paused(&self, queue: &TestQueue, paused: bool) {
        let mut meta = queue.meta.clone();
        meta.paused = paused;
        self.write_meta(&meta).await;
    }

    pub async fn token(&self, queue: QueueId, scopes: &[Scope]) -> String {
        let secret = TokenSecret::generate();
        let record = TokenRecord { token_id: uuid::Uuid::new_v4(), queue, scopes: scopes.to_vec() };
        let mut conn = self.redis.clone();
        let _: () = redis::cmd("HSET")
            .arg(self.keys.token(&secret.hash()))
            .arg(record.to_fields())
            .query_async(&mut conn)
            .await
            .unwrap();
        secret.expose().to_owned()
    }

    pub fn url(&self, queue: &TestQueue, path: &str) -> String {
        format!("{}/queue/v1/{}{}", self.base, queue.slug, path)
    }

    pub async fn post(&self, token: &str, url: &str, body: &Value) -> (StatusCode, Value) {
        let response = self.client.post(url).bearer_auth(token).json(body).send().await.unwrap();
        read(response).await
    }

    pub async fn post_raw(&self, token: &str, url: &str, content_type: &str, body: Vec<u8>) -> (StatusCode, Value) {
        let response = self
            .client
            .post(url)
            .bearer_auth(token)
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        read(response).await
    }

    pub async fn get(&self, token: &str, url: &str) -> (StatusCode, Value) {
        let response = self.client.get(url).bearer_auth(token).send().await.unwrap();
        read(response).await
    }

    /// Publishes and expects success; returns the response object.
    pub async fn publish(&self, queue: &TestQueue, request: Value) -> Value {
        let (status, body) = self.post(&queue.token, &self.url(queue, "/messages"), &request).await;
        assert!(status.is_success(), "publish: {status} {body}");
        body
    }

    pub async fn publish_text(&self, queue: &TestQueue, text: &str) -> String {
        self.publish(queue, json!({ "body": text })).await["id"].as_str().unwrap().to_owned()
    }

    pub async fn consume(&self, queue: &TestQueue, request: Value) -> Vec<Value> {
        let (status, body) = self.post(&queue.token, &self.url(queue, "/consume"), &request).await;
        assert_eq!(status, StatusCode::OK, "consume: {body}");
        body["messages"].as_array().unwrap().clone()
    }

    pub async fn ack(&self, queue: &TestQueue, receipts: &[&str]) -> Value {
        let (status, body) = self.post(&queue.token, &self.url(queue, "/ack"), &json!({ "receipts": receipts })).await;
        assert_eq!(status, StatusCode::OK, "ack: {body}");
        body
    }

    pub async fn nack(&self, queue: &TestQueue, request: Value) -> Value {
        let (status, body) = self.post(&queue.token, &self.url(queue, "/nack"), &request).await;
        assert_eq!(status, StatusCode::OK, "nack: {body}");
        body
    }

    pub async fn stats(&self, queue: &TestQueue) -> Value {
        let (status, body) = self.get(&queue.token, &self.url(queue, "/stats")).await;
        assert_eq!(status, StatusCode::OK, "stats: {body}");
        body
    }

    pub async fn dead_letters(&self, queue: &TestQueue) -> Vec<Value> {
        let (status, body) = self.get(&queue.token, &self.url(queue, "/dead-letters?limit=100")).await;
        assert_eq!(status, StatusCode::OK, "dead letters: {body}");
        body["dead_letters"].as_array().unwrap().clone()
    }
}

async fn read(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, body)
}

pub fn decode_body(message: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(message["body_base64"].as_str().unwrap()).unwrap()
}

pub fn text(message: &Value, field: &str) -> String {
    message[field].as_str().unwrap_or_else(|| panic!("{field} in {message}")).to_owned()
}

/// The receipts of consumed messages, in order.
pub fn receipts(messages: &[Value]) -> Vec<String> {
    messages.iter().map(|m| text(m, "receipt")).collect()
}

/// Starts a 10 s long poll on `waiting`, publishes through `publishing` once the poll waits, and
/// returns how long after the publish the poll answered, with the messages it received.
pub async fn wake_latency(waiting: &TestApp, publishing: &TestApp, queue: &TestQueue) -> (Duration, usize) {
    let waiter = {
        let (client, url, token) = (waiting.client.clone(), waiting.url(queue, "/consume"), queue.token.clone());
        tokio::spawn(async move {
            let response =
                client.post(url).bearer_auth(token).json(&json!({"max_wait_seconds": 10})).send().await.unwrap();
            (Instant::now(), response.json::<serde_json::Value>().await.unwrap())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let published_at = Instant::now();
    publishing.publish_text(queue, "wake up").await;
    let (received_at, body) = waiter.await.unwrap();
    (received_at.duration_since(published_at), body["messages"].as_array().unwrap().len())
}
