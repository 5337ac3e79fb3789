//! Short-lived values beside the queues, for the console: a form's one-time claim, a secret waiting
//! for the one page that shows it, a received message's receipt while its lease lasts. Each is one
//! Redis string with its own expiry; the console names the keys (`Keys::console_*`) and keeps no
//! Redis connection of its own.

use crate::Engine;
use crate::error::StorageResult;
use std::time::Duration;

impl Engine {
    /// Stores `value` under `key` for `ttl` unless `key` exists; true when this call stored it.
    pub async fn put_new(&self, key: &str, value: &str, ttl: Duration) -> StorageResult<bool> {
        let mut conn = self.conn.clone();
        let stored: Option<String> =
            redis::cmd("SET").arg(key).arg(value).arg("NX").arg("PX").arg(millis(ttl)).query_async(&mut conn).await?;
        Ok(stored.is_some())
    }

    /// Replaces the value of `key` if it still exists, keeping its expiry.
    pub async fn replace_kept(&self, key: &str, value: &str) -> StorageResult<()> {
        let mut conn = self.conn.clone();
        redis::cmd("SET").arg(key).arg(value).arg("XX").arg("KEEPTTL").query_async::<()>(&mut conn).await?;
        Ok(())
    }

    /// Stores `value` under `key` for `ttl`.
    pub async fn put(&self, key: &str, value: &str, ttl: Duration) -> StorageResult<()> {
        let mut conn = self.conn.clone();
        redis::cmd("SET").arg(key).arg(value).arg("PX").arg(millis(ttl)).query_async::<()>(&mut conn).await?;
        Ok(())
    }

    /// The value of `key`, if it has not expired.
    pub async fn value(&self, key: &str) -> StorageResult<Option<String>> {
        let mut conn = self.conn.clone();
        Ok(redis::cmd("GET").arg(key).query_async(&mut conn).await?)
    }

    /// The value of `key`, removed: a second call gets `None`.
    pub async fn take(&self, key: &str) -> StorageResult<Option<String>> {
        let mut conn = self.conn.clone();
        Ok(redis::cmd("GETDEL").arg(key).query_async(&mut conn).await?)
    }

    pub async fn remove(&self, key: &str) -> StorageResult<()> {
        let mut conn = self.conn.clone();
        redis::cmd("DEL").arg(key).query_async::<()>(&mut conn).await?;
        Ok(())
    }
}

/// A TTL in whole milliseconds, at least 1 (Redis refuses 0).
fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}
