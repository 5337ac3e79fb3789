//! A Redis primary dies under load and a replica takes over, as Sentinel or Cluster failover does:
//! with `AQS_REDIS_REPLICA_ACKS=1` nothing acknowledged is lost and nothing acknowledged is
//! delivered again; without it the same run loses acknowledged writes (measured and printed: how
//! much depends on how far behind the replica was, so it is not asserted).
//!
//! The replica is made to fall behind first (`DEBUG SLEEP` on it: replication stops while the
//! primary goes on answering), then the primary is `kill -9`ed while the replica still sleeps. The
//! Sentinels (or the cluster) promote the replica once it wakes; the killed server is started again
//! and rejoins as a replica of the new primary. No `aqs` process is restarted.
//!
//! The load: producers publishing with idempotency keys (a 503 is retried with the same key),
//! consumers receiving batches and acknowledging them (an ack that fails is retried). Afterwards
//! the queue is drained. Lost: a publish answered 2xx whose message no consume ever returned (an
//! ack answered 503 may still have acted, so an unconfirmed ack is no loss; the drain receives
//! everything still stored). Delivered again: a message returned by a consume that was sent after
//! its ack was answered 2xx.

use crate::harness::{Redis, Server, Tenant, fresh_database};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the replica stops replicating; its primary dies before it wakes.
const REPLICA_SLEEP_S: u32 = 6;
/// How far the replica must be behind when its primary dies, unless time runs out first: more
/// than the loopback sockets between them can hold, so that some of it never left the primary.
const LAG_BYTES: u64 = 24 << 20;
const PRODUCERS: usize = 3;
const BODY_BYTES: usize = 256 * 1024;
const CONSUMERS: usize = 2;

/// What the load saw, for the checker.
#[derive(Default)]
struct Ledger {
    /// Message id of every publish answered 2xx.
    published: HashSet<String>,
    /// Every message a consume returned.
    delivered: HashSet<String>,
    /// When each message's ack was answered 2xx (the first time).
    acked: HashMap<String, Instant>,
    /// Messages a consume returned although it was sent after their ack was answered.
    again: Vec<String>,
    /// Every answer that was not a 2xx, by status (0: no answer), with when it came.
    refused: Vec<(u16, Instant)>,
}

struct Outcome {
    published: usize,
    lost: usize,
    again: usize,
    /// From the first refused request to the last.
    unavailable: Duration,
    refused: usize,
    /// Messages still stored when the load ended (ready, leased, delayed or dead letters).
    left: u64,
    /// Refused requests by status (0: no answer).
    by_status: std::collections::BTreeMap<u16, usize>,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} acknowledged publishes, {} lost, {} acknowledged messages delivered again, {} refused requests over {:.1} s {:?}, {} left stored",
            self.published,
            self.lost,
            self.again,
            self.refused,
            self.unavailable.as_secs_f64(),
            self.by_status,
            self.left
        )
    }
}

/// `POST {base}/queue/v1/{slug}/{route}`: the status (0 when there was no answer) and the JSON.
async fn post(http: &reqwest::Client, tenant: &Tenant, route: &str, body: &Value) -> (u16, Value) {
    let url = format!("{}/queue/v1/{}/{route}", tenant.base, tenant.slug);
    match http.post(url).bearer_auth(&tenant.token).json(body).send().await {
        Ok(response) => {
            let status = response.status().as_u16();
            (status, response.json().await.unwrap_or(Value::Null))
        }
        Err(_) => (0, Value::Null),
    }
}

fn refused(ledger: &Mutex<Ledger>, status: u16) {
    ledger.lock().unwrap().refused.push((status, Instant::now()));
}

/// Publishes until `until`, each message retried with its idempotency key until answered 2xx.
async fn produce(tenant: Arc<Tenant>, ledger: Arc<Mutex<Ledger>>, producer: usize, until: Instant) {
    let http = reqwest::Client::builder().timeout(Duration::from_secs(5)).build().unwrap();
    let mut n = 0;
    while Instant::now() < until {
        n += 1;
        let key = format!("p{producer}-{n}");
        // Large enough that what the primary sends while its replica sleeps outgrows the
        // loopback socket's buffers: the rest waits in the primary, and dies with it.
        let body = json!({"body": format!("{key} {}", "x".repeat(BODY_BYTES)), "idempotency_key": key});
        while Instant::now() < until {
            let (status, answer) = post(&http, &tenant, "messages", &body).await;
            if status == 200 || status == 201 {
                ledger.lock().unwrap().published.insert(answer["id"].as_str().unwrap().to_owned());
                break;
            }
            refused(&ledger, status);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Receives and acknowledges until `until`, slower than the producers publish so that a backlog
/// stands when the primary dies (stored messages to lose, acks of replicated messages to forget),
/// then at full speed until the queue has stayed empty for a while.
async fn consume(tenant: Arc<Tenant>, ledger: Arc<Mutex<Ledger>>, until: Instant) {
    let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let mut empty = 0;
    let give_up = until + Duration::from_secs(150);
    while (Instant::now() < until || empty < 4) && Instant::now() < give_up {
        let sent = Instant::now();
        let request = json!({"max_messages": 10, "max_wait_seconds": 1, "visibility_seconds": 3});
        let (status, answer) = post(&http, &tenant, "consume", &request).await;
        if status != 200 {
            refused(&ledger, status);
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        let messages = answer["messages"].as_array().cloned().unwrap_or_default();
        if messages.is_empty() {
            empty += 1;
            continue;
        }
        empty = 0;
        let mut receipts = Vec::new();
        let mut ids = Vec::new();
        {
            let mut ledger = ledger.lock().unwrap();
            for message in &messages {
                let id = message["id"].as_str().unwrap().to_owned();
                ledger.delivered.insert(id.clone());
                if ledger.acked.get(&id).is_some_and(|at| *at < sent) {
                    ledger.again.push(id.clone());
                }
                receipts.push(message["receipt"].clone());
                ids.push(id);
            }
        }
        // Retried while the store is away; a receipt whose lease moved on is left to redelivery.
        for _ in 0..100 {
            let (status, answer) = post(&http, &tenant, "ack", &json!({"receipts": receipts})).await;
            if status == 200 {
                let at = Instant::now();
                let failed: HashSet<&str> =
                    answer["failed"].as_array().into_iter().flatten().filter_map(|f| f["receipt"].as_str()).collect();
                let mut ledger = ledger.lock().unwrap();
                for (id, receipt) in ids.iter().zip(&receipts) {
                    if !failed.contains(receipt.as_str().unwrap_or_default()) {
                        ledger.acked.entry(id.clone()).or_insert(at);
                    }
                }
                break;
            }
            refused(&ledger, status);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
    }
}

/// Runs the load for `load`, calling `fail` (which kills the primary) after `fail_after`.
async fn run_load(tenant: Tenant, fail_after: Duration, load: Duration, fail: impl AsyncFnOnce()) -> Outcome {
    let tenant = Arc::new(tenant);
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let until = Instant::now() + load;
    let mut tasks = Vec::new();
    for producer in 0..PRODUCERS {
        tasks.push(tokio::spawn(produce(tenant.clone(), ledger.clone(), producer, until)));
    }
    for _ in 0..CONSUMERS {
        tasks.push(tokio::spawn(consume(tenant.clone(), ledger.clone(), until)));
    }
    tokio::time::sleep(fail_after).await;
    fail().await;
    for task in tasks {
        task.await.unwrap();
    }
    let stats = tenant.queue.stats().await.expect("stats after the load");
    let ledger = ledger.lock().unwrap();
    let lost = ledger.published.iter().filter(|id| !ledger.delivered.contains(*id)).count();
    let first = ledger.refused.iter().map(|(_, at)| *at).min();
    let last = ledger.refused.iter().map(|(_, at)| *at).max();
    Outcome {
        published: ledger.published.len(),
        lost,
        again: ledger.again.len(),
        unavailable: first.zip(last).map_or(Duration::ZERO, |(first, last)| last - first),
        refused: ledger.refused.len(),
        left: stats.depth.total + stats.dead_letters,
        by_status: ledger.refused.iter().fold(Default::default(), |mut counts, (status, _)| {
            *counts.entry(*status).or_default() += 1;
            counts
        }),
    }
}

/// How many bytes of replication stream `primary` has that its replica has not confirmed.
pub(super) fn replication_lag(primary: &Redis) -> u64 {
    let Ok(mut conn) = redis::Client::open(primary.url()).unwrap().get_connection() else { return 0 };
    let info: String = redis::cmd("INFO").arg("replication").query(&mut conn).unwrap_or_default();
    let field = |name: &str| info.lines().find_map(|l| l.strip_prefix(name)).map(str::trim).map(str::to_owned);
    let master: u64 = field("master_repl_offset:").and_then(|v| v.parse().ok()).unwrap_or(0);
    let replica = field("slave0:")
        .and_then(|v| v.split(',').find_map(|kv| kv.strip_prefix("offset=")).and_then(|o| o.parse::<u64>().ok()))
        .unwrap_or(master);
    master.saturating_sub(replica)
}

/// Puts `replica` to sleep, then kills `primary` once the replica is [`LAG_BYTES`] behind or a
/// second before it would wake, whichever comes first.
async fn kill_while_behind(primary: &mut Redis, replica: &Redis) {
    put_to_sleep(replica);
    let deadline = Instant::now() + Duration::from_secs(u64::from(REPLICA_SLEEP_S) - 1);
    while replication_lag(primary) < LAG_BYTES && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("killing the primary {} KiB ahead of its replica", replication_lag(primary) >> 10);
    primary.kill9();
}

/// Stops replication for [`REPLICA_SLEEP_S`] (in the background) and lets the primary run on.
fn put_to_sleep(replica: &Redis) {
    put_to_sleep_for(replica, REPLICA_SLEEP_S);
}

/// Stops replication for `seconds` (in the background) and lets the primary run on.
pub(super) fn put_to_sleep_for(replica: &Redis, seconds: u32) {
    let url = replica.url();
    std::thread::spawn(move || {
        let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
        let _woke: redis::RedisResult<()> = redis::cmd("DEBUG").arg("SLEEP").arg(seconds).query(&mut conn);
    });
    std::thread::sleep(Duration::from_millis(100));
}

/// What every server of these runs adds: `DEBUG SLEEP` allowed from loopback, and a replica's
/// first sync started at once (not after the default 5 s wait for more replicas).
pub(super) fn test_settings() -> [&'static str; 4] {
    ["--enable-debug-command", "local", "--repl-diskless-sync-delay", "0"]
}

/// Whether `replica` has finished its first sync and streams from its primary.
pub(super) fn in_sync(replica: &Redis) -> bool {
    let Ok(mut conn) = redis::Client::open(replica.url()).unwrap().get_connection() else { return false };
    let info: String = redis::cmd("INFO").arg("replication").query(&mut conn).unwrap_or_default();
    info.contains("master_link_status:up") && !info.contains("master_sync_in_progress:1")
}

/// Three Sentinels watching `primary` as `aqs`.
struct Sentinels {
    ports: Vec<u16>,
    children: Vec<Child>,
    dir: std::path::PathBuf,
}

impl Sentinels {
    fn start(primary: u16) -> Self {
        let dir = std::env::temp_dir().join(format!("aqs-sentinels-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut sentinels = Self { ports: Vec::new(), children: Vec::new(), dir };
        for _ in 0..3 {
            let port = crate::harness::free_port();
            let conf = sentinels.dir.join(format!("sentinel-{port}.conf"));
            std::fs::write(
                &conf,
                format!(
                    "port {port}\nbind 127.0.0.1\ndir {}\nsentinel monitor aqs 127.0.0.1 {primary} 2\n\
                     sentinel down-after-milliseconds aqs 1000\nsentinel failover-timeout aqs 2000\n\
                     sentinel parallel-syncs aqs 1\n",
                    sentinels.dir.display()
                ),
            )
            .unwrap();
            let child = Command::new("redis-server")
                .arg(&conf)
                .arg("--sentinel")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            sentinels.ports.push(port);
            sentinels.children.push(child);
        }
        sentinels
    }

    fn addresses(&self) -> String {
        self.ports.iter().map(|p| format!("127.0.0.1:{p}")).collect::<Vec<_>>().join(",")
    }

    /// The port the Sentinels name as the primary, once one answers.
    fn primary(&self) -> Option<u16> {
        let mut conn =
            redis::Client::open(format!("redis://127.0.0.1:{}", self.ports[0])).ok()?.get_connection().ok()?;
        let (_, port): (String, u16) =
            redis::cmd("SENTINEL").arg("get-master-addr-by-name").arg("aqs").query(&mut conn).ok()?;
        Some(port)
    }
}

impl Sentinels {
    /// Waits until the Sentinels name `port` the primary. A loaded machine can make their own
    /// failover miss its window (the replica answered too late while it slept); after 20 s the
    /// test asks them for one (`SENTINEL FAILOVER`), which promotes the replica all the same.
    async fn until_promoted(&self, port: u16) {
        let deadline = Instant::now() + Duration::from_secs(90);
        let mut asked = Instant::now() + Duration::from_secs(20);
        while self.primary() != Some(port) {
            assert!(Instant::now() < deadline, "the Sentinels did not promote the replica within 90 s");
            if Instant::now() >= asked {
                if let Ok(mut conn) =
                    redis::Client::open(format!("redis://127.0.0.1:{}", self.ports[0])).and_then(|c| c.get_connection())
                {
                    let _refused: redis::RedisResult<()> =
                        redis::cmd("SENTINEL").arg("FAILOVER").arg("aqs").query(&mut conn);
                }
                asked = Instant::now() + Duration::from_secs(5);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Sentinels {
    fn drop(&mut self) {
        for child in &mut self.children {
            child.kill().ok();
            child.wait().ok();
        }
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

/// Waits for `check`, failing after `within`.
pub(super) async fn until(what: &str, within: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !check() {
        assert!(Instant::now() < deadline, "{what} did not happen within {within:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One Sentinel run: 1 primary + 1 replica + 3 Sentinels, the primary killed under load.
async fn sentinel_run(replica_acks: &str) -> Outcome {
    let mut primary = Redis::start_with("everysec", &test_settings());
    let replica_of = ["--replicaof".to_owned(), "127.0.0.1".to_owned(), primary.port.to_string()];
    let mut replica_args: Vec<&str> = replica_of.iter().map(String::as_str).collect();
    replica_args.extend(test_settings());
    let replica = Redis::start_with("everysec", &replica_args);
    until("the replica syncs", Duration::from_secs(20), || in_sync(&replica)).await;
    let sentinels = Sentinels::start(primary.port);
    until("the Sentinels see the primary", Duration::from_secs(20), || sentinels.primary() == Some(primary.port)).await;

    let database = fresh_database().await;
    let namespace = format!("fo{}", uuid::Uuid::new_v4().simple());
    let server = Server::start_with_env(
        &database,
        &primary.url(),
        &namespace,
        &[
            ("AQS_REDIS_SENTINELS", &sentinels.addresses()),
            ("AQS_REDIS_REPLICA_ACKS", replica_acks),
            ("AQS_REDIS_REPLICA_ACK_TIMEOUT_MS", "500"),
        ],
    )
    .await;
    let tenant = Tenant::sign_up(&server, json!({"name": "failover", "max_attempts": 100})).await;
    let (old_port, new_port) = (primary.port, replica.port);
    let outcome = run_load(tenant, Duration::from_secs(2), Duration::from_secs(15), async || {
        kill_while_behind(&mut primary, &replica).await;
        sentinels.until_promoted(new_port).await;
        // The old primary comes back and the Sentinels make it a replica of the new one.
        primary.restart();
        assert_eq!(primary.port, old_port);
    })
    .await;
    drop(server);
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sentinel_failover_loses_nothing_acknowledged_with_replica_acks() {
    let without = sentinel_run("0").await;
    println!("Sentinel failover without replica acks: {without}");

    let with = sentinel_run("1").await;
    println!("Sentinel failover with AQS_REDIS_REPLICA_ACKS=1: {with}");
    assert!(with.published > 20, "the load ran: {with}");
    assert_eq!(with.lost, 0, "{with}");
    assert_eq!(with.again, 0, "{with}");
}

/// Six cluster nodes: three primaries with a replica each.
struct Cluster {
    nodes: Vec<Redis>,
}

impl Cluster {
    async fn start() -> Self {
        let mut args = vec!["--cluster-enabled", "yes", "--cluster-node-timeout", "1000"];
        args.extend(test_settings());
        let nodes: Vec<Redis> = (0..6).map(|_| Redis::start_with("everysec", &args)).collect();
        let created = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)))
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdout(Stdio::null())
            .status()
            .expect("redis-cli is installed with redis-server");
        assert!(created.success(), "redis-cli --cluster create failed");
        let cluster = Self { nodes };
        until("the cluster forms with its replicas in sync", Duration::from_secs(30), || {
            cluster.nodes.iter().all(|node| {
                let info = cluster_info(node);
                info.contains("cluster_state:ok")
            }) && cluster.nodes.iter().filter(|n| role(n) == "slave").all(in_sync)
        })
        .await;
        cluster
    }

    fn urls(&self) -> String {
        self.nodes.iter().map(Redis::url).collect::<Vec<_>>().join(",")
    }

    /// (primary, replica) indexes of the nodes serving `key`'s slot.
    fn serving(&self, key: &str) -> (usize, usize) {
        let mut conn = redis::Client::open(self.nodes[0].url()).unwrap().get_connection().unwrap();
        let slot: u16 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query(&mut conn).unwrap();
        let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(&mut conn).unwrap();
        let index_of = |port: u16| self.nodes.iter().position(|n| n.port == port).unwrap();
        let port_of = |addr: &str| addr.split([':', '@']).nth(1).unwrap().parse::<u16>().unwrap();
        let mut primary = None;
        for line in nodes.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            let serves = fields[8..].iter().any(|range| {
                let (first, last) = range.split_once('-').unwrap_or((range, range));
                matches!((first.parse::<u16>(), last.parse::<u16>()), (Ok(a), Ok(b)) if (a..=b).contains(&slot))
            });
            if fields[2].contains("master") && serves {
                primary = Some((fields[0].to_owned(), index_of(port_of(fields[1]))));
            }
        }
        let (id, primary) = primary.expect("a primary serves the slot");
        let replica = nodes
            .lines()
            .map(|line| line.split(' ').collect::<Vec<_>>())
            .find(|fields| fields[3] == id)
            .map(|fields| index_of(port_of(fields[1])))
            .expect("the primary has a replica");
        (primary, replica)
    }
}

fn cluster_info(node: &Redis) -> String {
    let Ok(mut conn) = redis::Client::open(node.url()).unwrap().get_connection() else { return String::new() };
    redis::cmd("CLUSTER").arg("INFO").query(&mut conn).unwrap_or_default()
}

/// `master` or `slave`, as the node says of itself (empty when it does not answer).
fn role(node: &Redis) -> String {
    let Ok(mut conn) = redis::Client::open(node.url()).unwrap().get_connection() else { return String::new() };
    let role: Vec<redis::Value> = redis::cmd("ROLE").query(&mut conn).unwrap_or_default();
    match role.first() {
        Some(redis::Value::BulkString(role)) => String::from_utf8_lossy(role).into_owned(),
        _ => String::new(),
    }
}

/// One Cluster run: 3 primaries + 3 replicas, the primary of the busy queue killed under load.
/// It also starts the real binary on a cluster (its start-up checks every node).
async fn cluster_run(replica_acks: &str) -> Outcome {
    let mut cluster = Cluster::start().await;
    let database = fresh_database().await;
    let namespace = format!("fc{}", uuid::Uuid::new_v4().simple());
    let server = Server::start_with_env(
        &database,
        &cluster.urls(),
        &namespace,
        &[("AQS_REDIS_REPLICA_ACKS", replica_acks), ("AQS_REDIS_REPLICA_ACK_TIMEOUT_MS", "500")],
    )
    .await;
    let tenant = Tenant::sign_up(&server, json!({"name": "failover", "max_attempts": 100})).await;
    let (primary, replica) = cluster.serving(&format!("{{q:{}}}", tenant.id));
    let outcome = run_load(tenant, Duration::from_secs(2), Duration::from_secs(15), async || {
        let (before, after) = cluster.nodes.split_at_mut(primary.max(replica));
        let (primary_node, replica_node) =
            if primary < replica { (&mut before[primary], &after[0]) } else { (&mut after[0], &before[replica]) };
        kill_while_behind(primary_node, replica_node).await;
        let promoted = &cluster.nodes[replica];
        until("the cluster promotes the replica", Duration::from_secs(90), || role(promoted) == "master").await;
        // The old primary comes back and rejoins as a replica of the new one.
        cluster.nodes[primary].restart();
    })
    .await;
    drop(server);
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cluster_failover_loses_nothing_acknowledged_with_replica_acks() {
    let without = cluster_run("0").await;
    println!("Cluster failover without replica acks: {without}");

    let with = cluster_run("1").await;
    println!("Cluster failover with AQS_REDIS_REPLICA_ACKS=1: {with}");
    assert!(with.published > 20, "the load ran: {with}");
    assert_eq!(with.lost, 0, "{with}");
    assert_eq!(with.again, 0, "{with}");
}
