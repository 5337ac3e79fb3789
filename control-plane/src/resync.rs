//! The start-up re-sync: rewrites the whole Redis projection from PostgreSQL, then removes what
//! PostgreSQL no longer backs (revoked tokens, stopped push targets, freed slugs, deleted queues
//! and their data). This is
//! what repairs Redis after a change whose projection failed, or after Redis lost data.
//!
//! Other control-plane replicas may change things while this runs. Stale records are therefore
//! judged by asking PostgreSQL about each scanned record *after* everything was written, not by
//! comparing with the snapshot loaded at the start: a queue deleted mid-way is still removed, and
//! a queue created mid-way is never taken for stale.

use crate::projection::{self, ProjectedPush, ProjectedToken};
use crate::push::{self, PushRow};
use crate::queues::{COLUMNS, QueueRow};
use crate::redis_scan::keys_matching;
use crate::state::ControlPlane;
use anyhow::Context;
use aqs_core::ids::QueueId;
use aqs_core::projection::{QueueMeta, TokenRecord};
use aqs_core::token::Scope;
use chrono::{DateTime, Utc};
use sqlx::PgPool;
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

/// How far back the final pass looks for settings changed while the re-sync ran: well beyond
/// the length of any transaction that changes a queue.
const CATCH_UP_WINDOW_SECS: i64 = 60;

impl ControlPlane {
    /// Rewrites the projection of every live queue and token into Redis and removes stale records.
    pub async fn resync_projection(&self) -> anyhow::Result<()> {
        let started = std::time::Instant::now();
        let result = self.resync_everything().await;
        aqs_core::metrics::resynced(result.is_ok(), started.elapsed());
        result
    }

    async fn resync_everything(&self) -> anyhow::Result<()> {
        let db = self.db();
        let keys = self.keys();
        let mut conn = self.redis();
        let started: DateTime<Utc> = sqlx::query_scalar("SELECT now()").fetch_one(db).await?;

        let metas = live_metas(db, None).await?;
        let tokens = live_tokens(db).await?;
        projection::put_metas(&mut conn, keys, &metas).await.context("writing queue metas")?;
        projection::put_entries(&mut conn, keys, &metas, &tokens).await.context("writing slugs and tokens")?;

        let pushes = live_pushes(db, None).await?;
        projection::put_pushes(&mut conn, keys, &pushes).await.context("writing push targets")?;

        let stale_tokens = self.remove_stale_tokens().await?;
        let stale_pushes = self.remove_stale_pushes().await?;
        let stale_slugs = self.remove_stale_slugs().await?;
        let deleted_queues = self.finish_deleted_queues().await?;

        // A settings change that committed while we wrote the snapshot may have been overwritten
        // by the older values: write those queues' metas once more.
        let recent = live_metas(db, Some(started - chrono::Duration::seconds(CATCH_UP_WINDOW_SECS))).await?;
        projection::put_metas(&mut conn, keys, &recent).await.context("catching up queue metas")?;
        let since = Some(started - chrono::Duration::seconds(CATCH_UP_WINDOW_SECS));
        let recent_pushes = live_pushes(db, since).await?;
        projection::put_pushes(&mut conn, keys, &recent_pushes).await.context("catching up push targets")?;

        let suspended = self.resync_suspensions().await.context("writing team suspensions")?;

        tracing::info!(
            queues = metas.len(),
            suspended,
            tokens = tokens.len(),
            pushes = pushes.len(),
            stale_tokens,
            stale_pushes,
            stale_slugs,
            deleted_queues,
            "projection re-synced"
        );
        let hosts = crate::hosts::store::with_certificates(db).await?;
        let stale_hosts =
            crate::hosts::projection::resync(&mut conn, keys, &hosts).await.context("writing custom hosts")?;
        tracing::info!(hosts = hosts.len(), stale_hosts, "custom hosts re-synced");
        Ok(())
    }

    /// The `suspended` field of every live queue's meta as its team has it: cleared on the queues of
    /// teams that are not suspended, then written for each suspended team under the team's lock
    /// (`project_suspension`), after the clearing, so a suspension committed meanwhile is kept.
    /// Answers how many teams are suspended.
    async fn resync_suspensions(&self) -> anyhow::Result<usize> {
        let free: Vec<Uuid> = sqlx::query_scalar(
            "SELECT q.id FROM queues q JOIN teams t ON t.id = q.team_id
             WHERE q.deleted_at IS NULL AND t.suspended_at IS NULL",
        )
        .fetch_all(self.db())
        .await?;
        for chunk in free.chunks(200) {
            let mut pipe = redis::pipe();
            for id in chunk {
                pipe.hdel(self.keys().queue(QueueId(*id)).meta(), aqs_core::projection::meta_field::SUSPENDED).ignore();
            }
            pipe.query_async::<()>(&mut self.redis()).await?;
        }
        let suspended: Vec<Uuid> =
            sqlx::query_scalar("SELECT id FROM teams WHERE suspended_at IS NOT NULL AND deleted_at IS NULL")
                .fetch_all(self.db())
                .await?;
        for team in &suspended {
            crate::teams::admin::project_suspension(self, crate::teams::TeamId::from_stored(*team))
                .await
                .map_err(|err| anyhow::anyhow!("projecting the suspension of team {team}: {err}"))?;
        }
        Ok(suspended.len())
    }

    async fn remove_stale_tokens(&self) -> anyhow::Result<usize> {
        let prefix = self.keys().token("");
        let scanned = keys_matching(&mut self.redis(), &self.keys().token_pattern()).await?;
        let hashes: Vec<String> = scanned.iter().filter_map(|k| k.strip_prefix(&prefix)).map(str::to_owned).collect();
        let live: HashSet<String> = sqlx::query_scalar(
            "SELECT t.secret_hash FROM tokens t JOIN queues q ON q.id = t.queue_id
             WHERE t.secret_hash = ANY($1) AND t.revoked_at IS NULL AND q.deleted_at IS NULL",
        )
        .bind(&hashes)
        .fetch_all(self.db())
        .await?
        .into_iter()
        .collect();
        // Revoked, not deleted: the tombstone keeps a mint's late write out (a tombstone stays as is).
        let stale: Vec<String> = hashes.into_iter().filter(|h| !live.contains(h)).collect();
        for hash in &stale {
            projection::remove_token(&mut self.redis(), self.keys(), hash).await?;
        }
        Ok(stale.len())
    }

    /// Removes push records (and `NS:push` entries) of queues PostgreSQL has no live push target
    /// for: push stopped, or the queue deleted, while Redis missed it.
    async fn remove_stale_pushes(&self) -> anyhow::Result<usize> {
        let members: Vec<String> =
            redis::cmd("SMEMBERS").arg(self.keys().push_queues()).query_async(&mut self.redis()).await?;
        let records = keys_matching(&mut self.redis(), &self.keys().push_pattern()).await?;
        let mut ids: Vec<QueueId> = members.iter().filter_map(|m| QueueId::parse(m)).collect();
        ids.extend(records.iter().filter_map(|key| aqs_core::keys::queue_of_key(key)));
        ids.sort_by_key(|id| id.0);
        ids.dedup();
        let uuids: Vec<Uuid> = ids.iter().map(|id| id.0).collect();
        // Per live queue: its revision, and whether it has a push target.
        let live: HashMap<Uuid, (i64, bool)> = sqlx::query_as::<_, (Uuid, i64, bool)>(
            "SELECT q.id, q.revision, p.queue_id IS NOT NULL FROM queues q
             LEFT JOIN push_targets p ON p.queue_id = q.id
             WHERE q.id = ANY($1) AND q.deleted_at IS NULL",
        )
        .bind(&uuids)
        .fetch_all(self.db())
        .await?
        .into_iter()
        .map(|(id, revision, pushed)| (id, (revision, pushed)))
        .collect();
        let mut removed = 0;
        for id in ids {
            // A live queue's stop is conditional on its revision: a push set after this read wins.
            // A deleted or unknown queue's record goes whatever it holds.
            let revision = match live.get(&id.0) {
                Some((_, true)) => continue,
                Some((revision, false)) => Some(*revision as u64),
                None => None,
            };
            projection::remove_push(&mut self.redis(), self.keys(), id, revision).await?;
            removed += 1;
        }
        Ok(removed)
    }

    async fn remove_stale_slugs(&self) -> anyhow::Result<usize> {
        let prefix = self.keys().slug("");
        let scanned = keys_matching(&mut self.redis(), &self.keys().slug_pattern()).await?;
        let slugs: Vec<String> = scanned.iter().filter_map(|k| k.strip_prefix(&prefix)).map(str::to_owned).collect();
        let live: HashSet<String> =
            sqlx::query_scalar("SELECT slug FROM queues WHERE slug = ANY($1) AND deleted_at IS NULL")
                .bind(&slugs)
                .fetch_all(self.db())
                .await?
                .into_iter()
                .collect();
        let stale: Vec<String> =
            slugs.into_iter().filter(|s| !live.contains(s)).map(|s| self.keys().slug(&s)).collect();
        delete_each(&mut self.redis(), &stale).await?;
        Ok(stale.len())
    }

    /// Completes the Redis side of every queue in the `queues` set that PostgreSQL marks deleted.
    /// An id PostgreSQL does not know at all is left alone with a warning: pointing a fresh database
    /// at a Redis full of messages must not delete them.
    async fn finish_deleted_queues(&self) -> anyhow::Result<usize> {
        let members: Vec<String> =
            redis::cmd("SMEMBERS").arg(self.keys().queues()).query_async(&mut self.redis()).await?;
        let ids: Vec<Uuid> = members.iter().filter_map(|m| QueueId::parse(m)).map(|q| q.0).collect();
        let known: Vec<(Uuid, String, bool)> =
            sqlx::query_as("SELECT id, slug, deleted_at IS NOT NULL FROM queues WHERE id = ANY($1)")
                .bind(&ids)
                .fetch_all(self.db())
                .await?;
        let known_ids: HashSet<Uuid> = known.iter().map(|(id, ..)| *id).collect();
        for unknown in ids.iter().filter(|id| !known_ids.contains(id)) {
            tracing::warn!(queue = %QueueId(*unknown), "Redis holds a queue this database does not know; left untouched");
        }
        let mut finished = 0;
        for (id, slug, _) in known.into_iter().filter(|(_, _, deleted)| *deleted) {
            let hashes: Vec<String> = sqlx::query_scalar("SELECT secret_hash FROM tokens WHERE queue_id = $1")
                .bind(id)
                .fetch_all(self.db())
                .await?;
            projection::remove_queue(&mut self.redis(), self.keys(), self.engine(), QueueId(id), &slug, &hashes)
                .await?;
            finished += 1;
        }
        Ok(finished)
    }
}

/// Metas of live queues, all of them or those changed since `since`.
async fn live_metas(db: &PgPool, since: Option<DateTime<Utc>>) -> anyhow::Result<Vec<QueueMeta>> {
    let rows = sqlx::query_as::<_, QueueRow>(&format!(
        "SELECT {COLUMNS} FROM queues WHERE deleted_at IS NULL AND ($1::timestamptz IS NULL OR updated_at >= $1)"
    ))
    .bind(since)
    .fetch_all(db)
    .await?;
    // The address is not part of the projection, so no public URL is needed here.
    Ok(rows.into_iter().map(|row| row.into_queue("").meta()).collect())
}

/// Push targets of live queues, all of them or those changed since `since`.
async fn live_pushes(db: &PgPool, since: Option<DateTime<Utc>>) -> anyhow::Result<Vec<ProjectedPush>> {
    let rows = sqlx::query_as::<_, QueueAndPush>(&format!(
        "SELECT q.slug, q.revision, {} FROM push_targets p JOIN queues q ON q.id = p.queue_id
         WHERE q.deleted_at IS NULL AND ($1::timestamptz IS NULL OR p.updated_at >= $1)",
        push::COLUMNS.split(", ").map(|c| format!("p.{}", c.trim())).collect::<Vec<_>>().join(", ")
    ))
    .bind(since)
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| ProjectedPush {
            id: QueueId(r.push.queue_id),
            record: r.push.record(&r.slug),
            revision: r.revision as u64,
        })
        .collect())
}

#[derive(sqlx::FromRow)]
struct QueueAndPush {
    slug: String,
    revision: i64,
    #[sqlx(flatten)]
    push: PushRow,
}

/// Unrevoked tokens of live queues.
async fn live_tokens(db: &PgPool) -> anyhow::Result<Vec<ProjectedToken>> {
    let rows: Vec<(Uuid, Uuid, Vec<String>, String)> = sqlx::query_as(
        "SELECT t.id, t.queue_id, t.scopes, t.secret_hash FROM tokens t JOIN queues q ON q.id = t.queue_id
         WHERE t.revoked_at IS NULL AND q.deleted_at IS NULL",
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(token_id, queue, scopes, hash)| ProjectedToken {
            hash,
            record: TokenRecord {
                token_id,
                queue: QueueId(queue),
                scopes: scopes.iter().filter_map(|s| Scope::parse(s)).collect(),
            },
        })
        .collect())
}

/// DELs each key on its own: the keys live on different cluster slots.
async fn delete_each(conn: &mut aqs_core::redis_conn::RedisConn, keys: &[String]) -> redis::RedisResult<()> {
    for chunk in keys.chunks(200) {
        let mut pipe = redis::pipe();
        for key in chunk {
            pipe.del(key).ignore();
        }
        pipe.query_async::<()>(conn).await?;
    }
    Ok(())
}
