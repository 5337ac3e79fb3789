//! The primary that Redis Sentinels name, followed across failovers without a restart.
//!
//! A watcher asks the Sentinels every second (and at once after a command failed in a way a
//! failover causes: the connection dropped, or the server says it is a read-only replica) which
//! server is the primary; when the answer changes it connects there, checks with `ROLE` that the
//! server agrees it is the primary, and swaps the connection every later command takes. Commands in
//! flight on the old connection fail (503 to their requests); none is sent to a replica.
//!
//! Sentinels are given as `host:port`, or as `redis://` / `rediss://` URLs; the primary is reached
//! over TLS when the Sentinels are (`rediss://`), with the same roots.

use crate::redis_conn::{client, manager};
use anyhow::{Context, bail};
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::{Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, ServerErrorKind, TlsCertificates, Value};
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;
use tokio::sync::Notify;

/// How often the Sentinels are asked when nothing failed.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// How long one Sentinel may take to answer.
const SENTINEL_TIMEOUT: Duration = Duration::from_millis(500);

#[derive(Clone)]
pub struct SentinelConn(Arc<Shared>);

struct Shared {
    finder: Finder,
    current: RwLock<Primary>,
    /// Wakes the watcher early: a command failed as a failover makes commands fail.
    suspect: Notify,
}

/// How the primary is found and reached.
struct Finder {
    sentinels: Vec<redis::Client>,
    master: String,
    /// `redis` or `rediss`, as the Sentinels were given.
    scheme: &'static str,
    certificates: Option<TlsCertificates>,
}

#[derive(Clone)]
struct Primary {
    addr: String,
    client: redis::Client,
    conn: ConnectionManager,
}

impl SentinelConn {
    /// Finds the primary through `sentinels`, connects to it and starts following it.
    pub async fn connect(
        sentinels: &[String],
        master: &str,
        certificates: Option<TlsCertificates>,
    ) -> anyhow::Result<Self> {
        let tls = sentinels.iter().any(|s| s.starts_with("rediss://"));
        let sentinels = sentinels
            .iter()
            .map(|s| {
                let url = if s.contains("://") { s.clone() } else { format!("redis://{s}") };
                client(&url, &certificates).with_context(|| format!("AQS_REDIS_SENTINELS: {s:?} is not host:port"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let finder =
            Finder { sentinels, master: master.to_owned(), scheme: if tls { "rediss" } else { "redis" }, certificates };
        let addr = finder.ask_sentinels().await?;
        let primary = finder.connect_primary(&addr).await?;
        tracing::info!(primary = %addr, master, "Redis primary found through the Sentinels");
        let shared = Arc::new(Shared { finder, current: RwLock::new(primary), suspect: Notify::new() });
        tokio::spawn(watch(Arc::downgrade(&shared)));
        Ok(Self(shared))
    }

    /// A client of the current primary, for a subscription.
    pub fn client(&self) -> redis::Client {
        self.0.current.read().expect("primary lock").client.clone()
    }

    fn conn(&self) -> ConnectionManager {
        self.0.current.read().expect("primary lock").conn.clone()
    }

    /// Looks again at once when `err` is what a failover looks like from here.
    fn after(&self, err: &RedisError) {
        if err.is_io_error()
            || err.is_connection_dropped()
            || err.is_timeout()
            || err.kind() == ErrorKind::Server(ServerErrorKind::ReadOnly)
        {
            self.0.suspect.notify_one();
        }
    }
}

impl Finder {
    /// The primary's `host:port` as the first Sentinel that answers says.
    async fn ask_sentinels(&self) -> anyhow::Result<String> {
        let mut last_error = None;
        for sentinel in &self.sentinels {
            let asked = async {
                let mut conn = sentinel.get_multiplexed_async_connection().await?;
                redis::cmd("SENTINEL")
                    .arg("get-master-addr-by-name")
                    .arg(&self.master)
                    .query_async::<Option<(String, u16)>>(&mut conn)
                    .await
            };
            match tokio::time::timeout(SENTINEL_TIMEOUT, asked).await {
                Ok(Ok(Some((host, port)))) => return Ok(format!("{host}:{port}")),
                Ok(Ok(None)) => last_error = Some(format!("the Sentinels know no primary named {:?}", self.master)),
                Ok(Err(err)) => last_error = Some(err.to_string()),
                Err(_) => last_error = Some("a Sentinel did not answer in time".into()),
            }
        }
        bail!("no Sentinel named the primary: {}", last_error.unwrap_or_default())
    }

    /// Connects to `addr` and checks that it is a primary.
    async fn connect_primary(&self, addr: &str) -> anyhow::Result<Primary> {
        let client = client(&format!("{}://{addr}", self.scheme), &self.certificates)
            .with_context(|| format!("the Sentinels named {addr:?}, which is not host:port"))?;
        let mut conn =
            manager(client.clone()).await.with_context(|| format!("cannot connect to the primary {addr}"))?;
        let role: Vec<Value> = redis::cmd("ROLE").query_async(&mut conn).await.context("ROLE")?;
        match role.first() {
            Some(Value::BulkString(role)) if role == b"master" => {}
            _ => bail!("{addr} is not a primary yet"),
        }
        Ok(Primary { addr: addr.to_owned(), client, conn })
    }
}

/// Follows the primary while the connection is in use.
async fn watch(shared: Weak<Shared>) {
    loop {
        let Some(notified) = shared.upgrade() else { return };
        tokio::select! {
            () = notified.suspect.notified() => {}
            () = tokio::time::sleep(CHECK_EVERY) => {}
        }
        let Some(shared) = shared.upgrade() else { return };
        let addr = match shared.finder.ask_sentinels().await {
            Ok(addr) => addr,
            Err(err) => {
                tracing::warn!(error = %err, "cannot ask the Sentinels for the Redis primary");
                continue;
            }
        };
        if addr == shared.current.read().expect("primary lock").addr {
            continue;
        }
        match shared.finder.connect_primary(&addr).await {
            Ok(primary) => {
                tracing::warn!(primary = %addr, "the Sentinels name a new Redis primary; following it");
                *shared.current.write().expect("primary lock") = primary;
            }
            Err(err) => tracing::warn!(error = %err, "the Sentinels name a new Redis primary, not reachable yet"),
        }
    }
}

impl ConnectionLike for SentinelConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let mut conn = self.conn();
        Box::pin(async move {
            let reply = conn.req_packed_command(cmd).await;
            if let Err(err) = &reply {
                self.after(err);
            }
            reply
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let mut conn = self.conn();
        Box::pin(async move {
            let reply = conn.req_packed_commands(pipeline, offset, count).await;
            if let Err(err) = &reply {
                self.after(err);
            }
            reply
        })
    }

    fn get_db(&self) -> i64 {
        0
    }
}
