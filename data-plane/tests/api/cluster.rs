//! The data plane on a real three-node Redis Cluster: every key of a queue carries the queue's
//! hash tag, so each script runs whole on one node, and the wake-up subscriber (connected to one
//! node) hears publishes that ran on any node (classic pub/sub is broadcast to every node).

use crate::helpers::*;
use aqs_core::config::Config;
use aqs_core::redis_conn::{self, RedisConn};
use aqs_data_plane::DataPlane;
use aqs_engine::Engine;
use serde_json::json;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NODES: usize = 3;
const SLOTS: u16 = 16384;

/// Three redis-server processes in cluster mode, each serving a third of the slots.
struct Cluster {
    nodes: Vec<Child>,
    ports: Vec<u16>,
    dir: std::path::PathBuf,
}

impl Cluster {
    /// `None` when redis-server is not installed.
    async fn start() -> Option<Self> {
        let ports: Vec<u16> = (0..NODES)
            .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port())
            .collect();
        let dir = std::env::temp_dir().join(format!("aqs-dp-cluster-{}", ports[0]));
        std::fs::create_dir_all(&dir).unwrap();
        let mut cluster = Cluster { nodes: Vec::new(), ports: ports.clone(), dir };
        for port in &ports {
            let node = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""])
                .args(["--appendonly", "yes", "--appendfilename", &format!("aof-{port}")])
                .args(["--appenddirname", &format!("aof-{port}"), "--dir", cluster.dir.to_str().unwrap()])
                .args(["--cluster-enabled", "yes", "--cluster-config-file", &format!("nodes-{port}.conf")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .ok()?;
            cluster.nodes.push(node);
        }
        let mut conns = Vec::new();
        for url in cluster.urls() {
            conns.push(connect_when_up(&url).await);
        }
        for (i, conn) in conns.iter_mut().enumerate() {
            let (first, last) = slot_range(i);
            let _: () =
                redis::cmd("CLUSTER").arg("ADDSLOTSRANGE").arg(first).arg(last).query_async(conn).await.unwrap();
        }
        for port in &ports[1..] {
            let _: () =
                redis::cmd("CLUSTER").arg("MEET").arg("127.0.0.1").arg(*port).query_async(&mut conns[0]).await.unwrap();
        }
        let start = Instant::now();
        for conn in &mut conns {
            loop {
                let info: String = redis::cmd("CLUSTER").arg("INFO").query_async(conn).await.unwrap();
                if info.contains("cluster_state:ok") && info.contains(&format!("cluster_known_nodes:{NODES}")) {
                    break;
                }
                assert!(start.elapsed() < Duration::from_secs(30), "the cluster did not form: {info}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Some(cluster)
    }

    fn urls(&self) -> Vec<String> {
        self.ports.iter().map(|port| format!("redis://127.0.0.1:{port}")).collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            node.kill().ok();
            node.wait().ok();
        }
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

async fn connect_when_up(url: &str) -> redis::aio::MultiplexedConnection {
    let start = Instant::now();
    loop {
        if let Ok(mut conn) = redis::Client::open(url).unwrap().get_multiplexed_async_connection().await
            && redis::cmd("PING").query_async::<String>(&mut conn).await.is_ok()
        {
            return conn;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "cluster node {url} did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The slots node `i` serves.
fn slot_range(i: usize) -> (u16, u16) {
    let per = SLOTS / NODES as u16 + 1;
    (i as u16 * per, ((i as u16 + 1) * per).min(SLOTS) - 1)
}

/// Which node serves `key`.
async fn node_of(conn: &mut RedisConn, key: &str) -> usize {
    let slot: u16 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query_async(conn).await.unwrap();
    (0..NODES).find(|&i| (slot_range(i).0..=slot_range(i).1).contains(&slot)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_on_every_node_of_a_redis_cluster_publish_deliver_wake_and_dead_letter() {
    let Some(cluster) = Cluster::start().await else {
        eprintln!("redis-server not found; skipping the cluster test");
        return;
    };
    let urls = cluster.urls();
    let namespace = "tcluster";
    let conn = redis_conn::connect(&urls).await.unwrap();
    assert!(matches!(conn, RedisConn::Cluster(..)));
    let config = Config::for_tests("", &urls.join(","), namespace);
    let app = start_with(
        DataPlane::new(&config, Engine::loaded(conn.clone(), &config).await.unwrap()),
        conn.clone(),
        namespace,
    )
    .await;
    let other =
        start_with(DataPlane::new(&config, Engine::loaded(conn.clone(), &config).await.unwrap()), conn, namespace)
            .await;
    app.listening().await;

    // One queue per node (a queue's node follows from its id's hash slot), each with one attempt
    // so that a nack dead-letters.
    let mut queues = Vec::new();
    let mut on_node = [false; NODES];
    while on_node.contains(&false) {
        let queue = app.queue_with(|meta| meta.max_attempts = 1).await;
        let node = node_of(&mut app.redis.clone(), &app.keys.queue(queue.id).meta()).await;
        if !on_node[node] {
            on_node[node] = true;
            queues.push(queue);
        }
        assert!(queues.len() <= NODES);
    }

    for queue in &queues {
        let first = app.publish_text(queue, "one").await;
        let batch = json!({"messages": [
            {"body": "two", "idempotency_key": "k-2"},
            {"body": "three", "delay_seconds": 0, "attributes": {"n": 3}},
        ]});
        let (status, body) = app.post(&queue.token, &app.url(queue, "/messages/batch"), &batch).await;
        assert_eq!(status.as_u16(), 201, "{body}");
        let (status, again) = app.post(&queue.token, &app.url(queue, "/messages/batch"), &batch).await;
        assert_eq!(status.as_u16(), 201, "{again}");
        assert_eq!(again["messages"][0]["duplicate"], true, "the idempotency key holds on the cluster");

        // 4 messages: one, two, three and the second batch's three (its two was a duplicate).
        let delivered = app.consume(queue, json!({"max_messages": 10})).await;
        assert_eq!(delivered.len(), 4, "{delivered:?}");
        assert_eq!(delivered[0]["id"], first.as_str());
        let receipts: Vec<&str> = delivered[..3].iter().map(|m| m["receipt"].as_str().unwrap()).collect();
        assert_eq!(app.ack(queue, &receipts).await["acked"], 3);
        let last = delivered[3]["receipt"].as_str().unwrap();
        app.nack(queue, json!({"receipts": [last], "error": "handler failed"})).await;
        assert!(app.consume(queue, json!({})).await.is_empty());
        let dead = app.dead_letters(queue).await;
        assert_eq!(dead.len(), 1, "the nacked message, out of attempts, is a dead letter: {dead:?}");
        assert_eq!(dead[0]["reason"], "handler failed");

        // A long poll on the empty queue is woken by a publish through the other replica: its
        // PUBLISH ran on the queue's node, the subscriber listens on the first node.
        let (latency, received) = wake_latency(&app, &other, queue).await;
        assert_eq!(received, 1);
        assert!(latency < Duration::from_secs(5), "the long poll was not woken");
    }
    drop((app, other));
    drop(cluster);
}
