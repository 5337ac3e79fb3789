//! `spawn_app`: starts the control-plane router on 127.0.0.1:0 (with the production HTTP server)
//! over the test's database and a unique Redis namespace, and returns typed helpers for calling it
//! and inspecting Redis. What every crate's tests share comes from `aqs_testkit`.

use aqs_control_plane::{ControlPlane, router};
use aqs_core::config::Config;
use aqs_core::keys::Keys;
use aqs_core::redis_conn::{self, RedisConn};
use aqs_engine::Engine;
use redis::AsyncCommands;
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::collections::HashMap;

pub use aqs_testkit::{PASSWORD, redis_url};

pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub cp: ControlPlane,
    pub keys: Keys,
    pub redis: RedisConn,
    pub config: Config,
}

/// An answer: status and JSON body (`Value::Null` when empty).
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub text: String,
}

impl Reply {
    /// Asserts the status, and for errors that the body is in our `{error, message}` format.
    #[track_caller]
    pub fn expect(self, status: u16) -> Value {
        assert_eq!(self.status, status, "unexpected answer: {}", self.text);
        if status >= 400 {
            assert!(self.body["error"].is_string() && self.body["message"].is_string(), "{}", self.text);
        }
        self.body
    }

    /// Asserts an error status and code, returning the message.
    #[track_caller]
    pub fn expect_error(self, status: u16, code: &str) -> String {
        let body = self.expect(status);
        assert_eq!(body["error"], code, "{body}");
        body["message"].as_str().unwrap().to_owned()
    }
}

pub async fn spawn_app(db: PgPool) -> TestApp {
    spawn_app_with(db, |_| {}).await
}

pub async fn spawn_app_with(db: PgPool, adjust: impl FnOnce(&mut Config)) -> TestApp {
    let namespace = aqs_testkit::namespace();
    let mut config = Config::for_tests("", &redis_url(), &namespace);
    adjust(&mut config);
    let redis = redis_conn::connect(&config.redis_urls()).await.expect("test Redis");
    let cp = ControlPlane::new(&config, db, Engine::from_config(redis.clone(), &config)).await.expect("control plane");
    let base = aqs_testkit::serve(router(cp.clone()), tokio_util::sync::CancellationToken::new()).await;
    TestApp { base, client: reqwest::Client::new(), cp, keys: Keys::new(&namespace), redis, config }
}

impl TestApp {
    pub async fn call(&self, method: Method, path: &str, session: Option<&str>, body: Option<Value>) -> Reply {
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if let Some(session) = session {
            request = request.bearer_auth(session);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        into_reply(request.send().await.expect("request")).await
    }

    pub async fn raw(&self, request: reqwest::RequestBuilder) -> Reply {
        into_reply(request.send().await.expect("request")).await
    }

    pub async fn get(&self, session: &str, path: &str) -> Reply {
        self.call(Method::GET, path, Some(session), None).await
    }

    pub async fn post(&self, session: &str, path: &str, body: Value) -> Reply {
        self.call(Method::POST, path, Some(session), Some(body)).await
    }

    pub async fn patch(&self, session: &str, path: &str, body: Value) -> Reply {
        self.call(Method::PATCH, path, Some(session), Some(body)).await
    }

    pub async fn delete(&self, session: &str, path: &str) -> Reply {
        self.call(Method::DELETE, path, Some(session), None).await
    }

    pub async fn signup(&self, email: &str, password: &str) -> Reply {
        self.call(Method::POST, "/api/v1/auth/signup", None, Some(json!({"email": email, "password": password}))).await
    }

    pub async fn login(&self, email: &str, password: &str) -> Reply {
        self.call(Method::POST, "/api/v1/auth/login", None, Some(json!({"email": email, "password": password}))).await
    }

    /// Signs up a member and returns their session.
    pub async fn member(&self, email: &str) -> String {
        let body = self.signup(email, PASSWORD).await.expect(201);
        body["session"].as_str().unwrap().to_owned()
    }

    /// Creates a queue named `name` and returns `{queue, token}`.
    pub async fn queue(&self, session: &str, name: &str) -> Value {
        self.post(session, "/api/v1/queues", json!({"name": name})).await.expect(201)
    }

    pub async fn hash(&self, key: &str) -> HashMap<String, String> {
        self.redis.clone().hgetall(key).await.expect("HGETALL")
    }

    pub async fn string(&self, key: &str) -> Option<String> {
        self.redis.clone().get(key).await.expect("GET")
    }

    pub async fn exists(&self, key: &str) -> bool {
        self.redis.clone().exists(key).await.expect("EXISTS")
    }

    pub async fn live_queue_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.redis.clone().smembers(self.keys.queues()).await.expect("SMEMBERS");
        ids.sort();
        ids
    }

    /// Every key of this test's namespace.
    pub async fn namespace_keys(&self) -> Vec<String> {
        let mut conn = self.redis.clone();
        let pattern = format!("{}:*", self.keys.namespace());
        let mut iter: redis::AsyncIter<String> = conn.scan_match(&pattern).await.expect("SCAN");
        let mut keys = Vec::new();
        while let Some(key) = iter.next_item().await {
            keys.push(key.expect("SCAN item"));
        }
        keys
    }
}

async fn into_reply(response: reqwest::Response) -> Reply {
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    let body = if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::Null) };
    Reply { status, body, text }
}
