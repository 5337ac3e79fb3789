//! A real HTTP handler for the push tests: an axum server on 127.0.0.1:0 that records every request
//! (time, headers, JSON body) and answers with a script the test gives, plus helpers that set a
//! queue's push target the way the control plane projects it.

use crate::helpers::{TestApp, TestQueue};
use aqs_core::projection::{PushMode, PushRecord};
use aqs_core::secret::Secret;
use aqs_core::time::now_ms;
use aqs_engine::DeadLetter;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request the handler received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub at: Instant,
    pub headers: HeaderMap,
    pub raw: Bytes,
    pub body: Value,
}

impl Seen {
    pub fn header(&self, name: &str) -> String {
        self.headers.get(name).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
    }
}

/// What to answer.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
    pub delay: Duration,
}

impl Reply {
    pub fn status(status: u16) -> Self {
        Self { status, headers: Vec::new(), body: String::new(), delay: Duration::ZERO }
    }
    pub fn body(mut self, body: &str) -> Self {
        self.body = body.to_owned();
        self
    }
    pub fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_owned()));
        self
    }
    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

type Script = dyn Fn(&Seen, usize) -> Reply + Send + Sync;

#[derive(Clone)]
pub struct Handler {
    pub url: String,
    pub port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    in_flight: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
}

/// Starts a handler; `script(request, index)` decides each answer (index counts from 0).
pub async fn handler(script: impl Fn(&Seen, usize) -> Reply + Send + Sync + 'static) -> Handler {
    let script: Arc<Script> = Arc::new(script);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let handler = Handler {
        url: format!("http://127.0.0.1:{port}/hook"),
        port,
        seen: Arc::default(),
        in_flight: Arc::default(),
        max_in_flight: Arc::default(),
    };
    let state = handler.clone();
    let app = axum::Router::new().fallback(move |headers: HeaderMap, raw: Bytes| {
        let (state, script) = (state.clone(), script.clone());
        async move { state.answer(&*script, headers, raw).await }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    handler
}

/// A handler that always answers `status`.
pub async fn always(status: u16) -> Handler {
    handler(move |_, _| Reply::status(status)).await
}

impl Handler {
    async fn answer(&self, script: &Script, headers: HeaderMap, raw: Bytes) -> Response {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
        let seen = Seen { at: Instant::now(), headers, raw, body };
        let index = {
            let mut all = self.seen.lock().unwrap();
            all.push(seen.clone());
            all.len() - 1
        };
        let reply = script(&seen, index);
        tokio::time::sleep(reply.delay).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        let mut response = (StatusCode::from_u16(reply.status).unwrap(), reply.body).into_response();
        for (name, value) in reply.headers {
            response.headers_mut().insert(name, value.parse().unwrap());
        }
        response
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight.load(Ordering::SeqCst)
    }

    /// Waits until at least `n` requests arrived (panics after `timeout`).
    pub async fn wait_for(&self, n: usize, timeout: Duration) -> Vec<Seen> {
        let start = Instant::now();
        loop {
            let seen = self.seen();
            if seen.len() >= n {
                return seen;
            }
            assert!(start.elapsed() < timeout, "handler saw {} of {n} requests in {timeout:?}", seen.len());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

pub const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// A message-mode target with a 5 s timeout (the data plane does not enforce the control plane's
/// 30 s floor, which keeps these tests short).
pub fn record(queue: &TestQueue, url: &str) -> PushRecord {
    PushRecord {
        queue: queue.slug.clone(),
        handler_url: url.to_owned(),
        mode: PushMode::Message,
        messages_per_run: 10,
        wait_seconds: 0,
        timeout_seconds: 5,
        concurrency: 10,
        secret: Secret::new(SECRET),
        previous_secret: None,
        previous_until_ms: 0,
    }
}

impl TestApp {
    /// Projects a push target the way the control plane does (record, then the set entry).
    pub async fn set_push(&self, queue: &TestQueue, record: &PushRecord) {
        let mut conn = self.redis.clone();
        let _: () = redis::cmd("HSET")
            .arg(self.keys.queue(queue.id).push())
            .arg(record.to_fields())
            .query_async(&mut conn)
            .await
            .unwrap();
        let _: () = redis::cmd("SADD")
            .arg(self.keys.push_queues())
            .arg(queue.id.to_string())
            .query_async(&mut conn)
            .await
            .unwrap();
    }

    /// The queue's push log, newest first.
    pub async fn push_log(&self, queue: &TestQueue) -> Vec<Value> {
        let lines: Vec<String> = redis::cmd("LRANGE")
            .arg(self.keys.queue(queue.id).push_log())
            .arg(0)
            .arg(-1)
            .query_async(&mut self.redis.clone())
            .await
            .unwrap();
        lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    /// Waits until the queue holds no ready or leased message.
    pub async fn wait_drained(&self, queue: &TestQueue, timeout: Duration) {
        let start = Instant::now();
        loop {
            let stats = self.state.engine.stats(queue.id, now_ms()).await.unwrap().unwrap();
            if stats.total == 0 {
                return;
            }
            assert!(start.elapsed() < timeout, "queue not drained: {stats:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until `n` dead letters are there.
    pub async fn wait_dead(&self, queue: &TestQueue, n: usize, timeout: Duration) -> Vec<DeadLetter> {
        let start = Instant::now();
        loop {
            let dead = self.state.engine.dead_letters(queue.id, 100).await.unwrap().unwrap();
            if dead.len() >= n {
                return dead;
            }
            assert!(start.elapsed() < timeout, "{} of {n} dead letters", dead.len());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
