//! Redis going away and coming back: scripts reloaded after a flush or restart (NOSCRIPT), the
//! wake-up subscriber re-subscribing, requests answering 503 meanwhile and recovering by themselves.

use crate::helpers::*;
use aqs_core::config::Config;
use aqs_core::redis_conn;
use aqs_data_plane::DataPlane;
use aqs_engine::Engine;
use reqwest::StatusCode;
use serde_json::json;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[tokio::test]
async fn a_flushed_script_cache_is_reloaded_transparently() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let mut conn = app.redis.clone();
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut conn).await.unwrap();
    app.publish_text(&queue, "after flush").await;
    assert_eq!(app.consume(&queue, json!({})).await.len(), 1);
}

/// A private redis-server with AOF on a free port, in its own directory.
struct PrivateRedis {
    child: Child,
    port: u16,
    dir: std::path::PathBuf,
}

impl PrivateRedis {
    /// On a free port in a new directory of its own, ready for commands; `None` when
    /// redis-server is not installed.
    async fn start_fresh() -> Option<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = std::env::temp_dir().join(format!("aqs-dp-redis-{port}"));
        std::fs::create_dir_all(&dir).unwrap();
        let redis = Self::start(port, &dir)?;
        redis.wait_ready().await;
        Some(redis)
    }

    fn start(port: u16, dir: &std::path::Path) -> Option<Self> {
        Self::start_with(port, dir, &[])
    }

    /// `extra`: further `--name value` settings.
    fn start_with(port: u16, dir: &std::path::Path, extra: &[&str]) -> Option<Self> {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes"])
            .args(["--appendfsync", "always", "--dir", dir.to_str().unwrap()])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        Some(Self { child, port, dir: dir.to_owned() })
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    async fn wait_ready(&self) {
        let start = Instant::now();
        loop {
            if let Ok(client) = redis::Client::open(self.url())
                && let Ok(mut conn) = client.get_multiplexed_async_connection().await
                && redis::cmd("PING").query_async::<String>(&mut conn).await.is_ok()
            {
                return;
            }
            assert!(start.elapsed() < Duration::from_secs(10), "private redis-server did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn kill(&mut self) {
        self.child.kill().expect("kill redis-server");
        self.child.wait().expect("reap redis-server");
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            self.kill();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_recovers_when_redis_restarts() {
    let Some(mut redis) = PrivateRedis::start_fresh().await else {
        eprintln!("redis-server not found; skipping the restart test");
        return;
    };
    let (port, dir) = (redis.port, redis.dir.clone());

    let namespace = "trestart";
    let config = Config::for_tests("", &redis.url(), namespace);
    let conn = redis_conn::connect(&[redis.url()]).await.unwrap();
    let state = DataPlane::new(&config, Engine::loaded(conn.clone(), &config).await.unwrap());
    let app = start_with(state, conn, namespace).await;
    app.listening().await;
    let queue = app.queue().await;
    let kept = app.publish_text(&queue, "survives").await;

    redis.kill();
    let health = format!("{}/queue/v1/health", app.base);
    let response = app.client.get(&health).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let (status, body) = app.post(&queue.token, &app.url(&queue, "/messages"), &json!({"body": "x"})).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    eventually("the subscriber notices Redis went away", || async { !app.state.is_listening() }).await;

    let redis = PrivateRedis::start(port, &dir).unwrap();
    redis.wait_ready().await;
    let restarted = Instant::now();
    loop {
        let (status, _) = app.post(&queue.token, &app.url(&queue, "/messages"), &json!({"body": "back"})).await;
        if status == StatusCode::CREATED {
            break;
        }
        assert!(restarted.elapsed() < Duration::from_secs(5), "not recovered within 5 s: {status}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(app.client.get(&health).send().await.unwrap().status(), StatusCode::OK);
    app.listening().await;

    // The AOF kept the first message; the subscriber wakes long polls again.
    let messages = app.consume(&queue, json!({"max_messages": 10})).await;
    assert_eq!(messages[0]["id"], kept.as_str());
    let (latency, received) = wake_latency(&app, &app, &queue).await;
    assert_eq!(received, 1);
    assert!(latency < Duration::from_secs(5), "the long poll was not woken by the publish");
    drop(redis);
    std::fs::remove_dir_all(&dir).ok();
}

/// A process that starts while Redis is still loading its dataset (replaying a large AOF after a
/// restart) waits for it, instead of failing on its first command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_waits_for_a_redis_still_loading_its_dataset() {
    const KEYS: usize = 2000;
    let Some(mut redis) = PrivateRedis::start_fresh().await else {
        eprintln!("redis-server not found; skipping the loading test");
        return;
    };
    let (port, dir) = (redis.port, redis.dir.clone());
    let mut conn = redis::Client::open(redis.url()).unwrap().get_multiplexed_async_connection().await.unwrap();
    let mut pipe = redis::pipe();
    for i in 0..KEYS {
        pipe.set(format!("k{i}"), i).ignore();
    }
    let _: () = pipe.query_async(&mut conn).await.unwrap();
    // A rewrite puts the keys in an RDB base file, whose loading `key-load-delay` slows down.
    let _: () = redis::cmd("BGREWRITEAOF").query_async(&mut conn).await.unwrap();
    eventually("the AOF rewrite finishes", || async {
        let info: String = redis::cmd("INFO").arg("persistence").query_async(&mut conn.clone()).await.unwrap();
        // The base file is in place once its size is known.
        info.contains("aof_rewrite_in_progress:0") && !info.contains("aof_base_size:0\r")
    })
    .await;
    redis.kill();

    // 1 ms per key: about 2 s of loading, answering clients (LOADING) every kilobyte read.
    let slow = ["--key-load-delay", "1000", "--loading-process-events-interval-bytes", "1024"];
    let redis = PrivateRedis::start_with(port, &dir, &slow).unwrap();
    let start = Instant::now();
    let mut raw = loop {
        if let Ok(conn) = redis::Client::open(redis.url()).unwrap().get_multiplexed_async_connection().await {
            break conn;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "private redis-server did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let loading = redis::cmd("PING").query_async::<String>(&mut raw).await.unwrap_err();
    let busy_loading = redis::ErrorKind::Server(redis::ServerErrorKind::BusyLoading);
    assert_eq!(loading.kind(), busy_loading, "Redis was not loading ({loading}): the test proves nothing");

    let conn = redis_conn::connect(&[redis.url()]).await.expect("connect waits for the dataset");
    let config = Config::for_tests("", &redis.url(), "tloading");
    Engine::loaded(conn.clone(), &config).await.expect("the engine starts once Redis has loaded");
    let size: usize = redis::cmd("DBSIZE").query_async(&mut conn.clone()).await.unwrap();
    assert_eq!(size, KEYS);
    drop(redis);
    std::fs::remove_dir_all(&dir).ok();
}
