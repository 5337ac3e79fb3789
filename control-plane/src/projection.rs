//! Every write of the Redis projection the data plane reads (see `aqs_core::projection`): queue
//! meta hashes, slug records, token records, the set of live queues, and push targets (the
//! `push` hash of a queue and the `NS:push` set of pushed queues).
//!
//! PostgreSQL is changed first and committed; only then is Redis written. If Redis fails part-way,
//! the request answers 503 and the two stores disagree until the next start-up, when
//! `ControlPlane::resync_projection` rewrites the projection from PostgreSQL. Writing Redis first
//! instead could expose a queue or token that PostgreSQL then refuses to commit.
//!
//! Order is what keeps the data plane from seeing a half-made or half-deleted queue, and it is
//! enforced with separate round trips, not just command order inside one pipeline: in a Redis
//! Cluster a pipeline's commands for different shards run in parallel.
//! - create: the meta hash (and `queues` set) first; then the slug and token records that lead to it.
//! - delete: the slug and token records first, so no request can reach the queue; then the queue's
//!   tombstone; then its data and meta; the `queues` set entry last, so an interrupted delete is
//!   still found by the re-sync.
//!
//! Two writes of one queue's meta can still race: replicas answering a PATCH and a pause at once,
//! or a PATCH and a DELETE, commit in one order and reach Redis in the other. So a meta write is
//! conditional (`scripts/put_meta.lua`): it carries the row's revision, which every change bumps
//! in the same UPDATE, and never replaces a later one; and it never writes a queue whose tombstone
//! (`Keys::deleted_queue`, kept a day) says it was deleted. Push changes (set, rotate, stop) bump
//! the same revision, and their writes (`put_push.lua`, `remove_push.lua`) keep the revision of the
//! last one in the meta hash's `push_rev`, which a stop's DEL of the record leaves in place. A
//! revoked token's record becomes a tombstone for a day (`revoke_token.lua`), which the late write
//! of its mint skips (`put_token.lua`).

use aqs_core::ApiError;
use aqs_core::error::ApiResult;
use aqs_core::ids::QueueId;
use aqs_core::keys::Keys;
use aqs_core::projection::{PushRecord, QueueMeta, TokenRecord};
use aqs_core::redis_conn::RedisConn;
use aqs_engine::Engine;
use redis::{RedisError, RedisResult, Script};
use std::sync::LazyLock;

/// Deletes a slug record only while it still names the queue being deleted, so deleting a queue
/// never removes the slug a newer queue has since taken.
static DEL_IF_EQUALS: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("scripts/del_if_equals.lua")));

/// Writes a meta hash unless a later revision is there or the queue was deleted.
static PUT_META: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("scripts/put_meta.lua")));

/// Writes a push record unless a later push change is there or the queue was deleted.
static PUT_PUSH: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("scripts/put_push.lua")));

/// Deletes a push record unless a later push change is there.
static REMOVE_PUSH: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("scripts/remove_push.lua")));

/// Sets or clears a queue's team suspension in its meta hash unless the queue was deleted.
static PUT_SUSPENSION: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("scripts/put_suspension.lua")));

/// Writes a token record unless the token was revoked.
static PUT_TOKEN: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("scripts/put_token.lua")));

/// Turns a token record into a revoked token's tombstone.
static REVOKE_TOKEN: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("scripts/revoke_token.lua")));

/// How long a deleted queue's or a revoked token's tombstone stops late writes: far beyond any
/// request's life. A write later still would be undone by the next start-up re-sync.
const TOMBSTONE_SECS: u64 = 86_400;

/// How many records one pipeline carries during a re-sync.
const CHUNK: usize = 200;

/// A token record keyed by the SHA-256 of its secret.
#[derive(Clone, Debug)]
pub struct ProjectedToken {
    pub hash: String,
    pub record: TokenRecord,
}

/// The answer to a request whose PostgreSQL change committed but whose projection failed: 503, and
/// the start-up re-sync repairs Redis.
pub(crate) fn failed(err: RedisError) -> ApiError {
    tracing::warn!(error = %err, "projecting into Redis failed; the next start-up re-sync repairs it");
    ApiError::unavailable("storage")
}

/// A new queue: its meta first, then the slug and first token that lead to it.
pub async fn create_queue(
    conn: &mut RedisConn,
    keys: &Keys,
    meta: &QueueMeta,
    token: &ProjectedToken,
) -> RedisResult<()> {
    put_metas(conn, keys, std::slice::from_ref(meta)).await?;
    put_entries(conn, keys, std::slice::from_ref(meta), std::slice::from_ref(token)).await
}

/// Changed settings, pause or resume: the meta hash is rewritten in place (never deleted first, so
/// a reader never finds it missing). The slug never changes.
pub async fn update_queue(conn: &mut RedisConn, keys: &Keys, meta: &QueueMeta) -> RedisResult<()> {
    put_metas(conn, keys, std::slice::from_ref(meta)).await
}

/// A team suspended (`reason`) or no longer (`None`): the `suspended` field of each of its queues'
/// meta hashes, which the data plane reads with the settings. One script call per queue (see
/// `put_metas`). Callers serialise these writes per team (`teams::admin`).
pub async fn put_suspension(
    conn: &mut RedisConn,
    keys: &Keys,
    queues: &[QueueId],
    reason: Option<&str>,
) -> RedisResult<()> {
    for id in queues {
        let mut invocation = PUT_SUSPENSION.key(keys.queue(*id).meta());
        invocation.key(keys.deleted_queue(*id)).arg(reason.unwrap_or_default());
        invocation.invoke_async::<i64>(conn).await?;
    }
    Ok(())
}

pub async fn put_token(conn: &mut RedisConn, keys: &Keys, token: &ProjectedToken) -> RedisResult<()> {
    put_entries(conn, keys, &[], std::slice::from_ref(token)).await
}

/// A revoked token: its record becomes a tombstone for a day (`revoke_token.lua`), so that the
/// late write of a mint cannot bring it back.
pub async fn remove_token(conn: &mut RedisConn, keys: &Keys, hash: &str) -> RedisResult<()> {
    REVOKE_TOKEN.key(keys.token(hash)).arg(TOMBSTONE_SECS).invoke_async::<i64>(conn).await.map(drop)
}

/// A push target as projected, with the queue revision its change was committed at.
#[derive(Clone, Debug)]
pub struct ProjectedPush {
    pub id: QueueId,
    pub record: PushRecord,
    pub revision: u64,
}

/// A push target set or changed: the record first (rewritten in place, every field; see
/// `put_push.lua`), then the set entry that makes dispatchers pick it up.
pub async fn put_push(conn: &mut RedisConn, keys: &Keys, push: &ProjectedPush) -> RedisResult<()> {
    put_pushes(conn, keys, std::slice::from_ref(push)).await
}

/// One script call per record (see `put_metas`); `NS:push` entries only for the records written.
pub(crate) async fn put_pushes(conn: &mut RedisConn, keys: &Keys, pushes: &[ProjectedPush]) -> RedisResult<()> {
    for chunk in pushes.chunks(CHUNK) {
        let mut written = Vec::with_capacity(chunk.len());
        for push in chunk {
            let q = keys.queue(push.id);
            let mut invocation = PUT_PUSH.key(q.push());
            invocation.key(q.meta()).key(keys.deleted_queue(push.id)).arg(push.revision);
            for (field, value) in push.record.to_fields() {
                invocation.arg(field).arg(value);
            }
            if invocation.invoke_async::<i64>(conn).await? == 1 {
                written.push(push.id.to_string());
            }
        }
        if !written.is_empty() {
            redis::cmd("SADD").arg(keys.push_queues()).arg(&written).query_async::<()>(conn).await?;
        }
    }
    Ok(())
}

/// Push stopped (`revision`: the queue revision of the stop; `None` for a deleted or unknown
/// queue): the record goes first (consume is allowed again and dispatchers stop when they next
/// look), then the set entry. The delivery log stays for the console.
pub async fn remove_push(conn: &mut RedisConn, keys: &Keys, id: QueueId, revision: Option<u64>) -> RedisResult<()> {
    let q = keys.queue(id);
    let revision = revision.map(|r| r.to_string()).unwrap_or_default();
    let removed: i64 = REMOVE_PUSH.key(q.push()).key(q.meta()).arg(revision).invoke_async(conn).await?;
    if removed == 0 {
        return Ok(());
    }
    redis::cmd("SREM").arg(keys.push_queues()).arg(id.to_string()).query_async::<()>(conn).await?;
    // The set and the record live on different cluster slots: a later set whose record landed
    // before this SREM must keep its entry.
    if redis::cmd("EXISTS").arg(q.push()).query_async::<bool>(conn).await? {
        redis::cmd("SADD").arg(keys.push_queues()).arg(id.to_string()).query_async::<()>(conn).await?;
    }
    Ok(())
}

/// A deleted queue: unreachable first (slug, tokens), then every key of it (the engine's
/// `drop_queue`: the storage has one owner), then the set entries. A Redis failure is a 503 that
/// the re-sync repairs (the `queues` set entry goes last, so it still finds the queue).
pub async fn remove_queue(
    conn: &mut RedisConn,
    keys: &Keys,
    engine: &Engine,
    id: QueueId,
    slug: &str,
    token_hashes: &[String],
) -> ApiResult<()> {
    make_unreachable(conn, keys, id, slug, token_hashes).await.map_err(failed)?;
    engine.drop_queue(id).await?;
    redis::cmd("SREM").arg(keys.push_queues()).arg(id.to_string()).query_async::<()>(conn).await.map_err(failed)?;
    redis::cmd("SREM").arg(keys.queues()).arg(id.to_string()).query_async(conn).await.map_err(failed)
}

/// The slug and token records go, then the tombstone is set: from then on no request reaches the
/// queue and no late meta write recreates it.
async fn make_unreachable(
    conn: &mut RedisConn,
    keys: &Keys,
    id: QueueId,
    slug: &str,
    token_hashes: &[String],
) -> RedisResult<()> {
    let _removed: i64 = DEL_IF_EQUALS.key(keys.slug(slug)).arg(id.to_string()).invoke_async(conn).await?;
    for hash in token_hashes {
        remove_token(conn, keys, hash).await?;
    }
    // Before the meta goes: a meta write that lands after this finds the tombstone and skips.
    redis::cmd("SET").arg(keys.deleted_queue(id)).arg(1).arg("EX").arg(TOMBSTONE_SECS).query_async(conn).await
}

/// Writes meta hashes (`put_meta.lua`) and the `queues` set entries of the queues not deleted.
/// One script call per queue, each loaded on demand (pipelined calls would not be, on a cluster
/// node that lacks the script): a re-sync of 10,000 queues makes 10,000 round trips.
pub(crate) async fn put_metas(conn: &mut RedisConn, keys: &Keys, metas: &[QueueMeta]) -> RedisResult<()> {
    for chunk in metas.chunks(CHUNK) {
        let mut live = Vec::with_capacity(chunk.len());
        for meta in chunk {
            let mut invocation = PUT_META.key(keys.queue(meta.id).meta());
            invocation.key(keys.deleted_queue(meta.id)).arg(meta.revision);
            for (field, value) in meta.to_fields() {
                invocation.arg(field).arg(value);
            }
            let outcome: i64 = invocation.invoke_async(conn).await?;
            if outcome >= 0 {
                live.push(meta.id.to_string());
            }
        }
        if !live.is_empty() {
            redis::cmd("SADD").arg(keys.queues()).arg(&live).query_async::<()>(conn).await?;
        }
    }
    Ok(())
}

/// Writes slug records and token records: the entry points that lead to a queue's meta.
pub(crate) async fn put_entries(
    conn: &mut RedisConn,
    keys: &Keys,
    metas: &[QueueMeta],
    tokens: &[ProjectedToken],
) -> RedisResult<()> {
    for chunk in metas.chunks(CHUNK) {
        let mut pipe = redis::pipe();
        for meta in chunk {
            pipe.set(keys.slug(&meta.slug), meta.id.to_string()).ignore();
        }
        pipe.query_async::<()>(conn).await?;
    }
    for token in tokens {
        // HSET of every field overwrites a previous version in place: the field set is fixed.
        let mut invocation = PUT_TOKEN.key(keys.token(&token.hash));
        for (field, value) in token.record.to_fields() {
            invocation.arg(field).arg(value);
        }
        invocation.invoke_async::<i64>(conn).await?;
    }
    Ok(())
}
