//! Connecting to Redis: one multiplexed, self-reconnecting connection per process, to a single
//! server or to a Redis Cluster, behind one type every role uses.
//!
//! Start-up refuses a Redis that could lose acknowledged messages: it must run with
//! `maxmemory-policy noeviction` (eviction would silently drop messages) and with AOF on (without
//! it a restart forgets everything since the last snapshot). It waits for a Redis that is still
//! loading its dataset (replaying a large AOF after a restart), which refuses commands until done.

use anyhow::{Context, bail};
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, ErrorKind, Pipeline, RedisFuture, ServerErrorKind, Value};
use std::time::{Duration, Instant};

#[derive(Clone)]
pub enum RedisConn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for RedisConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Single(conn) => conn.req_packed_command(cmd),
            Self::Cluster(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Single(conn) => conn.req_packed_commands(pipeline, offset, count),
            Self::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Single(conn) => conn.get_db(),
            Self::Cluster(conn) => conn.get_db(),
        }
    }
}

/// How long one Redis call may take before the request answers 503.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(25);

/// Connects to `urls`: one URL is a single server, several are the seed nodes of a cluster.
pub async fn connect(urls: &[String]) -> anyhow::Result<RedisConn> {
    match urls {
        [] => bail!("no Redis URL configured (AQS_REDIS_URL)"),
        [url] => {
            let client = redis::Client::open(url.as_str()).context("AQS_REDIS_URL is not a valid Redis URL")?;
            let config = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(Duration::from_secs(2)))
                .set_response_timeout(Some(RESPONSE_TIMEOUT))
                .set_number_of_retries(1)
                .set_max_delay(Duration::from_millis(500));
            let conn = ConnectionManager::new_with_config(client, config).await.context("cannot connect to Redis")?;
            until_loaded(RedisConn::Single(conn)).await
        }
        seeds => {
            let client = redis::cluster::ClusterClient::builder(seeds.to_vec())
                .connection_timeout(Duration::from_secs(2))
                .response_timeout(RESPONSE_TIMEOUT)
                .build()
                .context("AQS_REDIS_URL does not name a valid Redis Cluster")?;
            let conn = client.get_async_connection().await.context("cannot connect to the Redis Cluster")?;
            until_loaded(RedisConn::Cluster(conn)).await
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

/// Fails unless the server keeps acknowledged messages: noeviction and AOF on.
pub async fn check_durability(conn: &mut RedisConn) -> anyhow::Result<()> {
    let info: String = redis::cmd("INFO").arg("memory").query_async(conn).await.context("INFO memory")?;
    let policy = info_field(&info, "maxmemory_policy").unwrap_or_default();
    if policy != "noeviction" {
        bail!("Redis runs with maxmemory-policy {policy:?}; AQS needs noeviction so that no message is ever evicted");
    }
    let info: String = redis::cmd("INFO").arg("persistence").query_async(conn).await.context("INFO persistence")?;
    if info_field(&info, "aof_enabled") != Some("1") {
        bail!(
            "Redis runs without AOF (appendonly no); AQS needs appendonly yes so a restart keeps acknowledged messages"
        );
    }
    Ok(())
}

fn info_field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(':')).map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_info_fields() {
        let info = "# Memory\r\nused_memory:1\r\nmaxmemory_policy:noeviction\r\n";
        assert_eq!(info_field(info, "maxmemory_policy"), Some("noeviction"));
        assert_eq!(info_field(info, "aof_enabled"), None);
    }
}
