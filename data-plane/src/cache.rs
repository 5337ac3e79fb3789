//! In-process caches of the projection: token hash → token record, slug → queue id, queue id →
//! settings and whether it has a push target. Entries live at most `TTL` (500 ms), so a revoked
//! token or a moved slug stops working within a second on every replica, while a busy token costs no Redis round trip per request.
//! Misses are cached too, so a flood of bad tokens does not become a flood of Redis lookups.

use aqs_core::error::ApiResult;
use aqs_core::ids::QueueId;
use aqs_core::keys::Keys;
use aqs_core::projection::{QueueMeta, TokenRecord};
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub const TTL: Duration = Duration::from_millis(500);
/// Past this many entries a cache drops its stale ones on insert.
const SWEEP_AT: usize = 10_000;

struct TtlMap<K, V> {
    entries: Mutex<HashMap<K, (Instant, V)>>,
}

impl<K: Eq + Hash, V: Clone> TtlMap<K, V> {
    fn new() -> Self {
        Self { entries: Mutex::new(HashMap::new()) }
    }

    fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let entries = self.entries.lock().expect("cache lock");
        entries.get(key).filter(|(at, _)| at.elapsed() < TTL).map(|(_, v)| v.clone())
    }

    fn insert(&self, key: K, value: V) {
        let mut entries = self.entries.lock().expect("cache lock");
        if entries.len() >= SWEEP_AT {
            entries.retain(|_, (at, _)| at.elapsed() < TTL);
        }
        entries.insert(key, (Instant::now(), value));
    }
}

pub struct AuthCache {
    keys: Keys,
    tokens: TtlMap<String, Option<TokenRecord>>,
    slugs: TtlMap<String, Option<QueueId>>,
    metas: TtlMap<QueueId, Option<QueueMeta>>,
    push: TtlMap<QueueId, bool>,
}

impl AuthCache {
    pub fn new(keys: Keys) -> Self {
        Self { keys, tokens: TtlMap::new(), slugs: TtlMap::new(), metas: TtlMap::new(), push: TtlMap::new() }
    }

    pub async fn token(
        &self,
        conn: &mut impl redis::aio::ConnectionLike,
        hash: &str,
    ) -> ApiResult<Option<TokenRecord>> {
        if let Some(hit) = self.tokens.get(hash) {
            return Ok(hit);
        }
        let fields: HashMap<String, String> =
            redis::cmd("HGETALL").arg(self.keys.token(hash)).query_async(conn).await?;
        let record = TokenRecord::from_fields(&fields);
        self.tokens.insert(hash.to_owned(), record.clone());
        Ok(record)
    }

    pub async fn slug(&self, conn: &mut impl redis::aio::ConnectionLike, slug: &str) -> ApiResult<Option<QueueId>> {
        if let Some(hit) = self.slugs.get(slug) {
            return Ok(hit);
        }
        let id: Option<String> = redis::cmd("GET").arg(self.keys.slug(slug)).query_async(conn).await?;
        let id = id.as_deref().and_then(QueueId::parse);
        self.slugs.insert(slug.to_owned(), id);
        Ok(id)
    }

    /// The queue's settings as of at most `TTL` ago. Scripts read the authoritative meta; this
    /// copy only sizes request bodies and pre-checks payload sizes.
    pub async fn meta(
        &self,
        conn: &mut impl redis::aio::ConnectionLike,
        queue: QueueId,
    ) -> ApiResult<Option<QueueMeta>> {
        if let Some(hit) = self.metas.get(&queue) {
            return Ok(hit);
        }
        let fields: HashMap<String, String> =
            redis::cmd("HGETALL").arg(self.keys.queue(queue).meta()).query_async(conn).await?;
        let meta = QueueMeta::from_fields(queue, &fields);
        self.metas.insert(queue, meta.clone());
        Ok(meta)
    }

    /// Whether the queue has a push target (then pull consumers may not lease from it).
    pub async fn push_enabled(&self, conn: &mut impl redis::aio::ConnectionLike, queue: QueueId) -> ApiResult<bool> {
        if let Some(hit) = self.push.get(&queue) {
            return Ok(hit);
        }
        let enabled: bool = redis::cmd("HEXISTS").arg(self.keys.queue(queue).push()).arg("v").query_async(conn).await?;
        self.push.insert(queue, enabled);
        Ok(enabled)
    }
}
