//! In-process caches of the projection: token → token record, slug → queue id, queue id →
//! settings and whether it has a push target. Entries live at most `TTL` (500 ms), so a revoked
//! token or a moved slug stops working within a second on every replica, while a busy token costs
//! no Redis round trip per request. Misses are cached too, so a flood of one bad token does not
//! become a flood of Redis lookups.
//!
//! Each cache holds at most [`CAPACITY`] entries: the token and slug caches are keyed by what
//! callers send, so a flood of distinct bad tokens must not grow them (nor their hash tables,
//! which never give memory back on their own). A full cache first drops its expired entries (at
//! most once per `TTL`, so a flood does not turn every insert into a scan); if it is still full,
//! the new entry is simply not cached and that request costs one Redis lookup, as a miss always
//! did.

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
/// The most entries one cache holds.
pub const CAPACITY: usize = 10_000;
/// This long after the last sweep, an insert drops the expired entries even if the cache is not
/// full, and gives back what the table no longer needs.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

struct TtlMap<K, V> {
    inner: Mutex<Entries<K, V>>,
}

struct Entries<K, V> {
    map: HashMap<K, (Instant, V)>,
    swept_at: Instant,
}

impl<K: Eq + Hash, V: Clone> Entries<K, V> {
    fn sweep(&mut self, now: Instant) {
        self.map.retain(|_, (at, _)| now.duration_since(*at) < TTL);
        // A flood leaves a table sized for it; keep room for growth, give the rest back.
        if self.map.capacity() > 2 * self.map.len().max(64) {
            self.map.shrink_to(2 * self.map.len());
        }
        self.swept_at = now;
    }
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
        let since_sweep = now.duration_since(inner.swept_at);
        let full = inner.map.len() >= CAPACITY && !inner.map.contains_key(&key);
        if (full && since_sweep >= TTL) || since_sweep >= SWEEP_EVERY {
            inner.sweep(now);
        }
        if inner.map.len() >= CAPACITY && !inner.map.contains_key(&key) {
            return;
        }
        inner.map.insert(key, (now, value));
    }

    fn len(&self) -> usize {
        self.inner.lock().expect("cache lock").map.len()
    }
}

/// How many entries each cache holds now (for tests and diagnostics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSizes {
    pub tokens: usize,
    pub slugs: usize,
    pub metas: usize,
    pub push: usize,
    /// Tokens with a last-use stamp (`last_use::LastUse`).
    pub last_use: usize,
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

    /// The sizes of the caches, but for the last-use stamps (`LastUse` fills that in).
    pub fn sizes(&self) -> CacheSizes {
        CacheSizes {
            tokens: self.tokens.len(),
            slugs: self.slugs.len(),
            metas: self.metas.len(),
            push: self.push.len(),
            last_use: 0,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_cache_keeps_its_bound_and_its_live_entries() {
        let map = TtlMap::new();
        for i in 0..CAPACITY + 500 {
            map.insert(i, i);
        }
        assert_eq!(map.len(), CAPACITY, "entries past the bound are not cached");
        let inner = map.inner.lock().unwrap();
        assert!(inner.map.contains_key(&0), "live entries are kept");
        assert!(!inner.map.contains_key(&(CAPACITY + 1)));
        drop(inner);
        // Updating a cached key is always possible.
        map.insert(7, 70);
        assert_eq!(map.get(&7), Some(70));
    }

    #[test]
    fn a_full_cache_drops_what_expired_to_make_room() {
        let map = TtlMap::new();
        for i in 0..CAPACITY {
            map.insert(i, i);
        }
        {
            let mut inner = map.inner.lock().unwrap();
            let past = Instant::now() - 2 * TTL;
            inner.swept_at = past;
            inner.map.values_mut().for_each(|(at, _)| *at = past);
        }
        map.insert(CAPACITY, CAPACITY);
        assert_eq!(map.len(), 1);
        assert_eq!(map.get(&CAPACITY), Some(CAPACITY));
        assert!(map.inner.lock().unwrap().map.capacity() < CAPACITY, "the table gave its room back");
    }
}
