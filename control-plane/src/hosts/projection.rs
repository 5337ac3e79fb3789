//! The hosts' part of the Redis projection: `NS:hosts` (hostname → `HostRecord` JSON) for every
//! host holding a certificate, and a message on `NS:hosts:changed` after each change so every
//! data-plane replica reloads its table (and its TLS certificates) at once. Hosts are global
//! records, like tokens: no queue hash tag.

use super::store::HostRow;
use aqs_core::ids::QueueId;
use aqs_core::keys::Keys;
use aqs_core::projection::{HostRecord, RECORD_VERSION};
use aqs_core::redis_conn::RedisConn;
use redis::RedisResult;
use std::collections::HashSet;

/// The projected record of a host, `None` while it has no certificate.
pub(crate) fn record_of(row: &HostRow) -> Option<HostRecord> {
    Some(HostRecord {
        v: RECORD_VERSION.to_owned(),
        id: row.id,
        queue: QueueId(row.queue_id),
        cert_pem: row.cert_pem.clone()?,
        key_encrypted: row.key_encrypted.clone()?,
        not_after_ms: row.cert_not_after?.timestamp_millis().max(0) as u64,
    })
}

/// Writes (or rewrites) the host's record and tells the data plane.
pub(crate) async fn put_host(conn: &mut RedisConn, keys: &Keys, row: &HostRow) -> RedisResult<()> {
    let Some(record) = record_of(row) else { return Ok(()) };
    redis::cmd("HSET").arg(keys.hosts()).arg(&row.hostname).arg(record.to_json()).query_async::<()>(conn).await?;
    announce(conn, keys).await
}

/// Removes the host's record and tells the data plane, which stops serving it.
pub(crate) async fn remove_host(conn: &mut RedisConn, keys: &Keys, hostname: &str) -> RedisResult<()> {
    redis::cmd("HDEL").arg(keys.hosts()).arg(hostname).query_async::<()>(conn).await?;
    announce(conn, keys).await
}

async fn announce(conn: &mut RedisConn, keys: &Keys) -> RedisResult<()> {
    redis::cmd("PUBLISH").arg(keys.hosts_changed()).arg("1").query_async::<()>(conn).await
}

/// The start-up re-sync: writes every host holding a certificate, removes the records of hosts
/// PostgreSQL no longer has. A host removed while this runs is removed again by its own delete,
/// which writes Redis after its commit.
pub(crate) async fn resync(conn: &mut RedisConn, keys: &Keys, rows: &[HostRow]) -> RedisResult<usize> {
    let live: HashSet<&str> = rows.iter().map(|r| r.hostname.as_str()).collect();
    for row in rows {
        if let Some(record) = record_of(row) {
            redis::cmd("HSET")
                .arg(keys.hosts())
                .arg(&row.hostname)
                .arg(record.to_json())
                .query_async::<()>(conn)
                .await?;
        }
    }
    let projected: Vec<String> = redis::cmd("HKEYS").arg(keys.hosts()).query_async(conn).await?;
    let stale: Vec<&String> = projected.iter().filter(|h| !live.contains(h.as_str())).collect();
    if !stale.is_empty() {
        redis::cmd("HDEL").arg(keys.hosts()).arg(&stale).query_async::<()>(conn).await?;
    }
    announce(conn, keys).await?;
    Ok(stale.len())
}
