//! The `hosts` table: reads for the API, and the reconciler's claim and its write-back. A claim
//! (`claim_due`) marks one due host with a fresh claim id and an expiry in a single
//! `UPDATE … FOR UPDATE SKIP LOCKED`; every write-back names that claim, so a replica whose claim
//! expired (it hung past `CLAIM_FOR`) cannot overwrite what the next one did.

use crate::teams::TeamId;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor, PgPool};
use std::time::Duration;
use uuid::Uuid;

/// How long a claim holds: beyond the longest order (`acme::ORDER_TIMEOUT`, twice, plus DNS).
const CLAIM_FOR_SECS: i64 = 600;

const SELECT: &str = "SELECT h.id, h.domain_id, h.queue_id, h.hostname, h.status, h.stage, h.reason, h.cert_pem,
        h.key_encrypted, h.cert_not_before, h.cert_not_after, h.failures, h.orders, h.checked_at, h.created_at,
        q.slug AS queue_slug, m.email AS member_email
     FROM hosts h JOIN queues q ON q.id = h.queue_id JOIN members m ON m.id = h.team_id";

#[derive(Clone, Debug, sqlx::FromRow)]
pub(crate) struct HostRow {
    pub id: Uuid,
    pub domain_id: Uuid,
    pub queue_id: Uuid,
    pub hostname: String,
    pub status: String,
    pub stage: Option<String>,
    pub reason: Option<String>,
    pub cert_pem: Option<String>,
    pub key_encrypted: Option<String>,
    pub cert_not_before: Option<DateTime<Utc>>,
    pub cert_not_after: Option<DateTime<Utc>>,
    pub failures: i32,
    pub orders: i32,
    pub checked_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub queue_slug: String,
    pub member_email: String,
}

impl HostRow {
    pub fn cert_window(&self) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
        match (self.cert_pem.as_ref(), self.cert_not_before, self.cert_not_after) {
            (Some(_), Some(from), Some(to)) => Some((from, to)),
            _ => None,
        }
    }
}

pub(crate) async fn insert(
    db: &mut PgConnection,
    team: TeamId,
    domain: Uuid,
    queue: Uuid,
    hostname: &str,
) -> sqlx::Result<HostRow> {
    let id = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO hosts (id, team_id, domain_id, queue_id, hostname, stage) VALUES ($1, $2, $3, $4, $5, 'waiting_for_dns')",
    )
    .bind(id)
    .bind(team.as_uuid())
    .bind(domain)
    .bind(queue)
    .bind(hostname)
    .execute(&mut *db)
    .await?;
    find(db, Some(team), id).await?.ok_or(sqlx::Error::RowNotFound)
}

/// Removes another team's host of `hostname` whose domain is no longer verified for them, so
/// that the team now holding the domain can take the name: its hostname, if one was removed.
pub(crate) async fn release_unproven(db: &PgPool, team: TeamId, hostname: &str) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "DELETE FROM hosts h USING domains d
          WHERE h.hostname = $1 AND h.team_id <> $2 AND d.id = h.domain_id AND d.status <> 'verified'
         RETURNING h.hostname",
    )
    .bind(hostname)
    .bind(team.as_uuid())
    .fetch_optional(db)
    .await
}

/// One host, the team's own unless `team` is `None` (operators, the reconciler).
pub(crate) async fn find<'e>(db: impl PgExecutor<'e>, team: Option<TeamId>, id: Uuid) -> sqlx::Result<Option<HostRow>> {
    sqlx::query_as::<_, HostRow>(&format!("{SELECT} WHERE h.id = $1 AND ($2::uuid IS NULL OR h.team_id = $2)"))
        .bind(id)
        .bind(team.map(TeamId::as_uuid))
        .fetch_optional(db)
        .await
}

pub(crate) async fn list(db: &PgPool, team: Option<TeamId>, status: Option<&str>) -> sqlx::Result<Vec<HostRow>> {
    sqlx::query_as::<_, HostRow>(&format!(
        "{SELECT} WHERE ($1::uuid IS NULL OR h.team_id = $1) AND ($2::text IS NULL OR h.status = $2)
         ORDER BY h.status = 'error' DESC, h.hostname"
    ))
    .bind(team.map(TeamId::as_uuid))
    .bind(status)
    .fetch_all(db)
    .await
}

/// Every host holding a certificate, for the projection re-sync.
pub(crate) async fn with_certificates(db: &PgPool) -> sqlx::Result<Vec<HostRow>> {
    sqlx::query_as::<_, HostRow>(&format!("{SELECT} WHERE h.cert_pem IS NOT NULL")).fetch_all(db).await
}

/// Deletes the team's host; its hostname, or `None` when there is no such host.
pub(crate) async fn delete(db: &mut PgConnection, team: TeamId, id: Uuid) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("DELETE FROM hosts WHERE id = $1 AND team_id = $2 RETURNING hostname")
        .bind(id)
        .bind(team.as_uuid())
        .fetch_optional(db)
        .await
}

/// Makes the host due now (a claim in flight finishes first; its write-back then sets the next
/// time, which this does not undo for long: the team can ask again).
pub(crate) async fn check_now(db: &mut PgConnection, team: Option<TeamId>, id: Uuid) -> sqlx::Result<Option<HostRow>> {
    let updated =
        sqlx::query("UPDATE hosts SET next_attempt_at = now() WHERE id = $1 AND ($2::uuid IS NULL OR team_id = $2)")
            .bind(id)
            .bind(team.map(TeamId::as_uuid))
            .execute(&mut *db)
            .await?;
    if updated.rows_affected() == 0 {
        return Ok(None);
    }
    find(db, team, id).await
}

/// Claims the most overdue host nobody holds: `(claim id, row)`.
pub(crate) async fn claim_due(db: &PgPool) -> sqlx::Result<Option<(Uuid, HostRow)>> {
    let claim = Uuid::new_v4();
    let id: Option<Uuid> = sqlx::query_scalar(
        "UPDATE hosts SET claim = $1, claimed_until = now() + make_interval(secs => $2)
         WHERE id = (SELECT id FROM hosts
                     WHERE next_attempt_at <= now() AND (claimed_until IS NULL OR claimed_until < now())
                     ORDER BY next_attempt_at LIMIT 1 FOR UPDATE SKIP LOCKED)
         RETURNING id",
    )
    .bind(claim)
    .bind(CLAIM_FOR_SECS as f64)
    .fetch_optional(db)
    .await?;
    let Some(id) = id else { return Ok(None) };
    Ok(find(db, None, id).await?.map(|row| (claim, row)))
}

/// Records the stage `issuing_certificate` (and counts the order) before an order starts, so the
/// API shows it while the order runs. False when the claim was lost.
pub(crate) async fn mark_ordering(db: &PgPool, claim: Uuid, id: Uuid, setting_up: bool) -> sqlx::Result<bool> {
    let updated = sqlx::query(
        "UPDATE hosts SET orders = orders + 1,
                          status = CASE WHEN $3 THEN 'setting_up' ELSE status END,
                          stage = CASE WHEN $3 THEN 'issuing_certificate' ELSE stage END,
                          reason = CASE WHEN $3 THEN NULL ELSE reason END
         WHERE id = $1 AND claim = $2",
    )
    .bind(id)
    .bind(claim)
    .bind(setting_up)
    .execute(db)
    .await?;
    Ok(updated.rows_affected() == 1)
}

/// A new certificate and its sealed key.
pub(crate) struct NewCertificate<'a> {
    pub cert_pem: &'a str,
    pub key_encrypted: &'a str,
    pub not_before: DateTime<Utc>,
    pub not_after: DateTime<Utc>,
}

/// Writes the outcome of a look and releases the claim. `None` when the claim was lost (or the
/// host removed meanwhile): then nothing is written and nothing must be projected.
pub(crate) async fn finish(
    db: &PgPool,
    claim: Uuid,
    id: Uuid,
    record: &super::machine::Record,
    cert: Option<NewCertificate<'_>>,
) -> sqlx::Result<Option<HostRow>> {
    let next_in = Duration::as_secs_f64(&record.next_in);
    let updated = sqlx::query(
        "UPDATE hosts SET status = $3, stage = $4, reason = $5,
                          failures = CASE WHEN $6 THEN failures + 1 ELSE 0 END,
                          next_attempt_at = now() + make_interval(secs => $7),
                          checked_at = now(), claim = NULL, claimed_until = NULL,
                          cert_pem = COALESCE($8, cert_pem), key_encrypted = COALESCE($9, key_encrypted),
                          cert_not_before = COALESCE($10, cert_not_before),
                          cert_not_after = COALESCE($11, cert_not_after)
         WHERE id = $1 AND claim = $2",
    )
    .bind(id)
    .bind(claim)
    .bind(record.status.as_str())
    .bind(record.status.stage())
    .bind(record.reason.as_deref())
    .bind(record.failed)
    .bind(next_in)
    .bind(cert.as_ref().map(|c| c.cert_pem))
    .bind(cert.as_ref().map(|c| c.key_encrypted))
    .bind(cert.as_ref().map(|c| c.not_before))
    .bind(cert.as_ref().map(|c| c.not_after))
    .execute(db)
    .await?;
    if updated.rows_affected() == 0 {
        return Ok(None);
    }
    find(db, None, id).await
}

/// Deletes every host pinned to a queue being deleted, in the deletion's transaction (so no host
/// is ever listed under a deleted queue, whose slug a new queue may take); answers their
/// hostnames, whose projection `hosts::remove_projections` removes once the transaction commits.
pub(crate) async fn delete_for_queue(tx: &mut sqlx::PgConnection, queue: Uuid) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar("DELETE FROM hosts WHERE queue_id = $1 RETURNING hostname").bind(queue).fetch_all(tx).await
}
