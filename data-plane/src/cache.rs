//! In-process caches of the projection: token → token record, slug → queue id, queue id →
//! settings and whether it has a push target. Entries live at most `TTL` (500 ms), so a revoked
//! token or a moved slug stops working within a second on every replica, while a busy token costs no Redis round trip per request.
//! Misses are cached too, so a flood of bad tokens does not become a flood of Redis lookups.

use aqs_core::error::ApiResult;
use aqs_core::ids::QueueId;
use aqs_core::keys::Keys;
use aqs_core::projection::{QueueMeta, TokenRecord};
use aqs_core::token::TokenSecret;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const TTL: Duration = Duration::from_millis(500);
/// Past this many entries, or this long after the last sweep, a cache drops its stale entries on
/// insert: the token cache is keyed by the tokens themselves, which should not outlive their use.
const SWEEP_AT: usize = 10_000;
const SWEEP_EVERY: Duration = Duration::from_secs(60);

struct TtlMap<K, V> {
    inner: Mutex<Entries<K, V>>,
}

struct Entries<K, V> {
    map: HashMap<K, (Instant, V)>,
    swept_at: Instant,
}

impl<K: Eq + Hash, V: Clone> TtlMap<K, V> {
    fn new() -> Self {
        Self { inner: Mutex::new(Entries { map: HashMap::new(), swept_at: Instant::now() }) }
    }

    fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let inner = self.inner.lock().expect("cache lock");
        inner.map.get(key).filter(|(at, _)| at.elapsed() < TTL).map(|(_, v)| v.clone())
    }

    fn insert(&self, key: K, value: V) {
        let mut inner = self.inner.lock().expect("cache lock");
        let now = Instant::now();
        if inner.map.len() >= SWEEP_AT || now.duration_since(inner.swept_at) >= SWEEP_EVERY {
            inner.map.retain(|_, (at, _)| now.duration_since(*at) < TTL);
            inner.swept_at = now;
        }
        inner.map.insert(key, (now, value));
    }
}

pub struct AuthCache {
    keys: Keys,
    // Arc: a hit is a reference count, not a copy of the record (on every request).
    tokens: TtlMap<String, Option<Arc<TokenRecord>>>,
    slugs: TtlMap<String, Option<QueueId>>,
    metas: TtlMap<QueueId, Option<Arc<QueueMeta>>>,
    push: TtlMap<QueueId, bool>,
}

impl AuthCache {
    pub fn new(keys: Keys) -> Self {
        Self { keys, tokens: TtlMap::new(), slugs: TtlMap::new(), metas: TtlMap::new(), push: TtlMap::new() }
    }

    /// The record of a presented token. Cached by the token itself, so a hit costs no SHA-256
    /// (6% of a single publish's instructions); the hash is computed only to look the token up.
    pub async fn token(
        &self,
        conn: &mut impl redis::aio::ConnectionLike,
        secret: &TokenSecret,
    ) -> ApiResult<Option<Arc<TokenRecord>>> {
        if let Some(hit) = self.tokens.get(secret.expose()) {
            return Ok(hit);
        }
        let fields: HashMap<String, String> =
            redis::cmd("HGETALL").arg(self.keys.token(&secret.hash())).query_async(conn).await?;
        let record = TokenRecord::from_fields(&fields).map(Arc::new);
        self.tokens.insert(secret.expose().to_owned(), record.clone());
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
    ) -> ApiResult<Option<Arc<QueueMeta>>> {
        if let Some(hit) = self.metas.get(&queue) {
            return Ok(hit);
        }
        let fields: HashMap<String, String> =
            redis::cmd("HGETALL").arg(self.keys.queue(queue).meta()).query_async(conn).await?;
        let meta = QueueMeta::from_fields(queue, &fields).map(Arc::new);
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
