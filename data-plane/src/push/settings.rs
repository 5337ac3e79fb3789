//! A queue's push target as a dispatcher uses it: the projected `PushRecord` (`NS:{q:ID}:push`)
//! parsed once (URL, request target, `Host`, signing keys) with the lease and timeout it implies,
//! and the dispatcher's kept connections to the handler.

use super::deliver::Connections;
use super::sign::SigningKeys;
use aqs_core::ids::QueueId;
use aqs_core::keys::Keys;
use aqs_core::projection::{PushMode, PushRecord};
use aqs_core::redis_conn::RedisConn;
use hyper::Uri;
use hyper::header::HeaderValue;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use url::Url;

/// Extra lease beyond the handler's timeout: the answer is applied (ack, nack) inside the lease,
/// so a slow but successful delivery is never redelivered by another replica meanwhile.
pub const LEASE_MARGIN: Duration = Duration::from_secs(5);

#[derive(Clone, Debug)]
pub struct PushSettings {
    pub queue: QueueId,
    pub record: PushRecord,
    pub url: Url,
    /// The request line's target: the URL's path and query.
    pub target: Uri,
    /// The `Host` header: the URL's host, and its port when it is not the scheme's own.
    pub host: HeaderValue,
    pub keys: SigningKeys,
    pub connections: Arc<Connections>,
}

impl PushSettings {
    /// `None` when the record's URL or secret cannot be used (the control plane never writes such).
    pub fn new(queue: QueueId, record: PushRecord) -> Option<Self> {
        let url = Url::parse(&record.handler_url).ok()?;
        let target = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        let target = Uri::try_from(target).ok()?;
        let host = match url.port() {
            Some(port) => format!("{}:{port}", url.host_str()?),
            None => url.host_str()?.to_owned(),
        };
        let host = HeaderValue::try_from(host).ok()?;
        let keys = SigningKeys::new(&record)?;
        Some(Self { queue, record, url, target, host, keys, connections: Arc::default() })
    }

    pub fn mode(&self) -> PushMode {
        self.record.mode
    }

    /// How long the handler has to answer.
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(u64::from(self.record.timeout_seconds))
    }

    /// How long in batch mode the dispatcher waits to fill a batch after its first message.
    pub fn fill_wait(&self) -> Duration {
        match self.record.mode {
            PushMode::Message => Duration::ZERO,
            PushMode::Batch => Duration::from_secs(u64::from(self.record.wait_seconds)),
        }
    }

    /// The lease each delivery is taken under: covers filling a batch, the request and applying
    /// the answer.
    pub fn lease_ms(&self) -> u64 {
        (self.fill_wait() + self.timeout() + LEASE_MARGIN).as_millis() as u64
    }

    pub fn concurrency(&self) -> usize {
        self.record.concurrency.max(1) as usize
    }
}

/// Every queue with a push target, and its record (records that fail to parse are skipped).
pub async fn load_all(conn: &mut RedisConn, keys: &Keys) -> redis::RedisResult<HashMap<QueueId, PushRecord>> {
    let ids: Vec<String> = redis::cmd("SMEMBERS").arg(keys.push_queues()).query_async(conn).await?;
    let mut out = HashMap::with_capacity(ids.len());
    for id in ids.iter().filter_map(|id| QueueId::parse(id)) {
        let fields: HashMap<String, String> =
            redis::cmd("HGETALL").arg(keys.queue(id).push()).query_async(conn).await?;
        if let Some(record) = PushRecord::from_fields(&fields) {
            out.insert(id, record);
        }
    }
    Ok(out)
}
