//! Connecting to Redis: one multiplexed, self-reconnecting connection per process, to a single
//! server, to a Redis Cluster, or to the primary that Redis Sentinels name (followed across
//! failovers: `redis_sentinel.rs`), behind one type every role uses. `rediss://` URLs speak TLS,
//! trusting the roots of `AQS_REDIS_CA_FILE` (else the system's); a server whose certificate those
//! roots did not sign is refused.
//!
//! Start-up refuses a Redis that could lose acknowledged messages: it must run with
//! `maxmemory-policy noeviction` (eviction would silently drop messages) and with AOF on (without
//! it a restart forgets everything since the last snapshot); on a cluster, every node. It waits for
//! a Redis that is still loading its dataset (replaying a large AOF after a restart), which refuses
//! commands until done.

use crate::config::Config;
use crate::redis_sentinel::SentinelConn;
use anyhow::{Context, bail};
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::io::tcp::TcpSettings;
use redis::{Cmd, ErrorKind, IntoConnectionInfo, Pipeline, RedisFuture, ServerErrorKind, TlsCertificates, Value};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[derive(Clone)]
pub enum RedisConn {
    /// One server, and the client that reaches it (subscriptions open their own connection).
    Single(ConnectionManager, Arc<redis::Client>),
    /// A cluster, and its seed nodes (a subscription connects to one, the next after a failure).
    Cluster(ClusterConnection, Arc<Seeds>),
    /// The primary the Sentinels name, whichever server that is now.
    Sentinel(SentinelConn),
}

/// Where Redis is and how to reach it, from the configuration.
#[derive(Clone, Debug, Default)]
pub struct RedisOptions {
    /// One URL, or a cluster's seeds (unused with `sentinels`).
    pub urls: Vec<String>,
    /// `host:port` (or `redis://` / `rediss://` URLs) of the Sentinels.
    pub sentinels: Vec<String>,
    pub sentinel_master: String,
    /// PEM roots for TLS; `None`: the system's.
    pub ca_file: Option<String>,
}

impl RedisOptions {
    pub fn from_config(config: &Config) -> Self {
        Self {
            urls: config.redis_urls(),
            sentinels: config.redis_sentinels.clone(),
            sentinel_master: config.redis_sentinel_master.trim().to_owned(),
            ca_file: Some(config.redis_ca_file.clone()).filter(|f| !f.is_empty()),
        }
    }

    pub fn urls(urls: &[String]) -> Self {
        Self { urls: urls.to_vec(), ..Self::default() }
    }

    /// The roots of `ca_file`, read now (`None` without one: the system's roots).
    fn certificates(&self) -> anyhow::Result<Option<TlsCertificates>> {
        let Some(path) = &self.ca_file else { return Ok(None) };
        let pem = std::fs::read(path).with_context(|| format!("cannot read AQS_REDIS_CA_FILE {path}"))?;
        Ok(Some(TlsCertificates { client_tls: None, root_cert: Some(pem) }))
    }
}

/// The TCP settings of every connection to Redis: `TCP_NODELAY` on. The redis crate leaves
/// Nagle's algorithm on unless told, and then a command written while the connection still has an
/// unacknowledged one in flight waits for that ACK, which Redis may delay: under load, stalls of 20
/// to 80 ms in which every command of the process waited (`docs/performance.md`, "Nagle's
/// algorithm on the Redis connection").
pub fn tcp_settings() -> TcpSettings {
    TcpSettings::default().set_nodelay(true)
}

/// A client for `url`, with `certificates` as its TLS roots when it is a `rediss://` URL.
pub(crate) fn client(url: &str, certificates: &Option<TlsCertificates>) -> redis::RedisResult<redis::Client> {
    let info = url.into_connection_info()?.set_tcp_settings(tcp_settings());
    match certificates {
        Some(certs) if url.starts_with("rediss://") => redis::Client::build_with_tls(info, certs.clone()),
        _ => redis::Client::open(info),
    }
}

/// The seed nodes of a cluster, handed out in turn to the subscribers.
pub struct Seeds {
    clients: Vec<redis::Client>,
    next: AtomicUsize,
}

/// How long one Redis call may take before the request answers 503.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(25);

/// A reconnecting connection to one server.
pub(crate) async fn manager(client: redis::Client) -> redis::RedisResult<ConnectionManager> {
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(RESPONSE_TIMEOUT))
        .set_number_of_retries(1)
        .set_max_delay(Duration::from_millis(500));
    ConnectionManager::new_with_config(client, config).await
}

/// Connects to `urls`: one URL is a single server, several are the seed nodes of a cluster.
pub async fn connect(urls: &[String]) -> anyhow::Result<RedisConn> {
    open(&RedisOptions::urls(urls)).await
}

/// Connects as `options` say: through the Sentinels when there are any, else to the URL(s).
pub async fn open(options: &RedisOptions) -> anyhow::Result<RedisConn> {
    let certificates = options.certificates()?;
    if !options.sentinels.is_empty() {
        let conn = SentinelConn::connect(&options.sentinels, &options.sentinel_master, certificates).await?;
        return until_loaded(RedisConn::Sentinel(conn)).await;
    }
    match options.urls.as_slice() {
        [] => bail!("no Redis URL configured (AQS_REDIS_URL)"),
        [url] => {
            let client = client(url, &certificates).context("AQS_REDIS_URL is not a valid Redis URL")?;
            let conn = manager(client.clone()).await.context("cannot connect to Redis (AQS_REDIS_URL)")?;
            until_loaded(RedisConn::Single(conn, Arc::new(client))).await
        }
        seeds => {
            let mut builder = redis::cluster::ClusterClient::builder(seeds.to_vec())
                .connection_timeout(Duration::from_secs(2))
                .response_timeout(RESPONSE_TIMEOUT)
                .tcp_settings(tcp_settings());
            if let Some(certs) = &certificates {
                builder = builder.certs(certs.clone());
            }
            let cluster = builder.build().context("AQS_REDIS_URL does not name a valid Redis Cluster")?;
            let conn = cluster.get_async_connection().await.context("cannot connect to the Redis Cluster")?;
            let clients = seeds
                .iter()
                .map(|url| client(url, &certificates))
                .collect::<redis::RedisResult<Vec<_>>>()
                .context("AQS_REDIS_URL does not name a valid Redis Cluster")?;
            until_loaded(RedisConn::Cluster(conn, Arc::new(Seeds { clients, next: AtomicUsize::new(0) }))).await
        }
    }
}

impl RedisConn {
    /// A client for a subscription (`SUBSCRIBE` needs a connection of its own): the server, the
    /// current primary, or the next seed of a cluster (classic pub/sub reaches every node, so any
    /// node will do, and after a failure the next one is tried).
    pub fn subscriber(&self) -> redis::Client {
        match self {
            Self::Single(_, client) => (**client).clone(),
            Self::Cluster(_, seeds) => {
                let n = seeds.next.fetch_add(1, Ordering::Relaxed);
                seeds.clients[n % seeds.clients.len()].clone()
            }
            Self::Sentinel(conn) => conn.client(),
        }
    }

    /// Redis `WAIT replicas timeout` on this connection, to the node owning `key`'s slot: how many
    /// replicas of that primary have every write this connection sent it so far.
    pub async fn wait_for_replicas(&mut self, key: &str, replicas: u32, timeout: Duration) -> redis::RedisResult<u32> {
        let mut cmd = redis::cmd("WAIT");
        cmd.arg(replicas).arg(timeout.as_millis() as u64);
        match self {
            Self::Cluster(conn, _) => {
                let route = Route::with_key(key, SlotAddr::Master);
                let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
                Ok(redis::from_redis_value(conn.route_command(cmd, routing).await?)?)
            }
            _ => cmd.query_async(self).await,
        }
    }

    /// Which primary's `WAIT` covers writes to `key`: one per slot on a cluster, one otherwise.
    pub fn primary_of(&self, key: &str) -> Option<Route> {
        matches!(self, Self::Cluster(..)).then(|| Route::with_key(key, SlotAddr::Master))
    }
}

impl ConnectionLike for RedisConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(conn, _) => conn.req_packed_command(cmd),
            Self::Cluster(conn, _) => conn.req_packed_command(cmd),
            Self::Sentinel(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(conn, _) => conn.req_packed_commands(pipeline, offset, count),
            Self::Cluster(conn, _) => conn.req_packed_commands(pipeline, offset, count),
            Self::Sentinel(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(conn, _) => conn.get_db(),
            Self::Cluster(conn, _) => conn.get_db(),
            Self::Sentinel(conn) => conn.get_db(),
        }
    }
}

/// Returns `conn` once Redis answers PING, waiting as long as it answers LOADING: loading a large
/// dataset can take minutes, and a process that gave up would only be restarted to wait again.
async fn until_loaded(mut conn: RedisConn) -> anyhow::Result<RedisConn> {
    let started = Instant::now();
    let mut last_said: Option<Instant> = None;
    loop {
        match redis::cmd("PING").query_async::<String>(&mut conn).await {
            Ok(_) => return Ok(conn),
            Err(err) if err.kind() == ErrorKind::Server(ServerErrorKind::BusyLoading) => {
                if last_said.is_none_or(|at| at.elapsed() >= Duration::from_secs(10)) {
                    tracing::warn!(
                        waited_s = started.elapsed().as_secs(),
                        "Redis is loading its dataset; waiting for it"
                    );
                    last_said = Some(Instant::now());
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(err) => return Err(err).context("Redis does not answer PING"),
        }
    }
}

/// Fails unless every server keeps acknowledged messages: noeviction and AOF on.
pub async fn check_durability(conn: &mut RedisConn) -> anyhow::Result<()> {
    let memory = info_sections(redis::cmd("INFO").arg("memory").query_async(conn).await.context("INFO memory")?)?;
    for info in &memory {
        let policy = info_field(info, "maxmemory_policy").unwrap_or_default();
        if policy != "noeviction" {
            bail!(
                "Redis runs with maxmemory-policy {policy:?}; AQS needs noeviction so that no message is ever evicted"
            );
        }
    }
    let persistence =
        info_sections(redis::cmd("INFO").arg("persistence").query_async(conn).await.context("INFO persistence")?)?;
    for info in &persistence {
        if info_field(info, "aof_enabled") != Some("1") {
            bail!(
                "Redis runs without AOF (appendonly no); AQS needs appendonly yes so a restart keeps acknowledged messages"
            );
        }
    }
    Ok(())
}

/// An `INFO` answer as text per server: a single server answers one text, a cluster a map of
/// node address → text.
fn info_sections(reply: Value) -> anyhow::Result<Vec<String>> {
    match reply {
        Value::Map(nodes) => nodes
            .into_iter()
            .map(|(_, text)| redis::from_redis_value::<String>(text).context("INFO answered a node without text"))
            .collect(),
        other => Ok(vec![redis::from_redis_value::<String>(other).context("INFO did not answer text")?]),
    }
}

fn info_field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(':')).map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_connection_to_redis_turns_nagle_off() {
        for url in ["redis://127.0.0.1:6379", "rediss://127.0.0.1:6380"] {
            let client = client(url, &None).unwrap();
            assert!(client.get_connection_info().tcp_settings().nodelay(), "{url}");
        }
        let certs = Some(TlsCertificates { client_tls: None, root_cert: None });
        let tls = client("rediss://127.0.0.1:6380", &certs).unwrap();
        assert!(tls.get_connection_info().tcp_settings().nodelay(), "rediss:// with roots");
    }

    #[test]
    fn reads_info_fields() {
        let info = "# Memory\r\nused_memory:1\r\nmaxmemory_policy:noeviction\r\n";
        assert_eq!(info_field(info, "maxmemory_policy"), Some("noeviction"));
        assert_eq!(info_field(info, "aof_enabled"), None);
    }

    #[test]
    fn a_cluster_answers_info_per_node() {
        let text = |t: &str| Value::BulkString(t.as_bytes().to_vec());
        let reply = Value::Map(vec![
            (text("127.0.0.1:7000"), text("aof_enabled:1\r\n")),
            (text("127.0.0.1:7001"), text("aof_enabled:0\r\n")),
        ]);
        let sections = info_sections(reply).unwrap();
        assert_eq!(sections.len(), 2);
        assert_eq!(info_field(&sections[1], "aof_enabled"), Some("0"));
        assert_eq!(info_sections(text("aof_enabled:1")).unwrap(), vec!["aof_enabled:1".to_owned()]);
    }
}
