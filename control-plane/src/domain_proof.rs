//! The TXT proof of a domain, checked again and again: a domain is verified for one member at a
//! time, and only while `_aqs-challenge.<domain>` still holds that member's value.
//!
//! Every check reads the record once and settles every member's row of the name from it: the
//! member checked verifies when their value is there and no other member holds the domain; a
//! holder whose value is gone from the record loses the domain (`pending`, `lost_at`, a reason),
//! and another member can then verify it. A lookup that fails proves nothing either way: a
//! verified domain stays verified through a DNS outage (the reason says the check failed).
//! The partial unique index `domains_verified_name_key` keeps two members from both winning a race.
//!
//! The reconciler re-checks pending domains every minute and verified ones every
//! `AQS_DOMAIN_RECHECK_SECONDS`, and checks a host's domain again before ordering its certificate
//! ([`before_order`]), so that no certificate is issued or renewed on a proof that is gone.

use crate::domains::{COLUMNS, DomainRow, challenge_name, not_found};
use crate::state::ControlPlane;
use aqs_core::ApiResult;
use sqlx::PgPool;
use std::time::Duration;
use uuid::Uuid;

/// How often a pending domain is looked at again (the member is probably creating the record).
const PENDING_EVERY: Duration = Duration::from_secs(60);
/// Domains re-checked per round, so one round stays short.
const BATCH: i64 = 20;

/// What one check found, for the member whose domain was checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Proof {
    /// Their value is in the record and the domain is theirs.
    Held,
    /// Their value is not in the record (it never was, or it was removed).
    Missing,
    /// Their value is in the record, but another member holds the domain verified.
    HeldByAnother,
    /// The lookup failed: nothing is known, nothing was changed but the reason.
    LookupFailed,
}

/// Looks the record up and records the outcome for `domain` (and for another member's row whose
/// value left the record). Answers the row as it now stands.
pub(crate) async fn check(cp: &ControlPlane, domain: DomainRow) -> ApiResult<(DomainRow, Proof)> {
    let record = challenge_name(&domain.name);
    let values = match cp.hosts().dns.txt_values(&record).await {
        Ok(values) => values.into_iter().map(|v| v.trim().to_owned()).collect::<Vec<_>>(),
        Err(err) => {
            let reason = if domain.status == "verified" {
                format!("the last re-check of {record} failed ({err}); the domain stays verified and it is retried")
            } else {
                format!("the DNS lookup of {record} failed: {err}; it is retried")
            };
            let row = write(cp.db(), domain.id, Write::Reason(&reason)).await?;
            return Ok((row, Proof::LookupFailed));
        }
    };
    release_lost_holders(cp.db(), &domain.name, &values).await?;
    let held = values.contains(&domain.verification_value);
    if !held {
        let found = if values.is_empty() {
            "there is no TXT record there".to_owned()
        } else {
            format!("it holds {:?}", values.join(" "))
        };
        let row = if domain.status == "verified" {
            let reason = lost_reason(&domain.name, &record, &domain.verification_value, &found);
            tracing::info!(domain = %domain.name, "a verified domain lost its TXT record");
            write(cp.db(), domain.id, Write::Lost(&reason)).await?
        } else {
            let value = &domain.verification_value;
            let reason = if values.is_empty() {
                format!("no TXT record at {record} yet; create it with the value {value}")
            } else {
                format!("the TXT record at {record} holds {:?}, not {value}", values.join(" "))
            };
            write(cp.db(), domain.id, Write::Reason(&reason)).await?
        };
        return Ok((row, Proof::Missing));
    }
    if domain.status == "verified" {
        return Ok((write(cp.db(), domain.id, Write::Confirmed).await?, Proof::Held));
    }
    match claim(cp.db(), &domain).await? {
        Some(row) => {
            // Hosts waiting on the domain (or kept from ordering while it was lost) go now.
            sqlx::query("UPDATE hosts SET next_attempt_at = now() WHERE domain_id = $1")
                .bind(domain.id)
                .execute(cp.db())
                .await?;
            cp.hosts().wake.notify_one();
            Ok((row, Proof::Held))
        }
        None => {
            let reason = format!(
                "{} is verified by another member, whose TXT record is still in place; a domain is verified for one \
                 member at a time, and it can be verified here once their value is gone from {record}",
                domain.name
            );
            Ok((write(cp.db(), domain.id, Write::Reason(&reason)).await?, Proof::HeldByAnother))
        }
    }
}

fn lost_reason(name: &str, record: &str, value: &str, found: &str) -> String {
    format!(
        "{name} is no longer verified: {record} must hold {value}, but {found}. Hosts under it get no new or renewed \
         certificates (their current certificates serve until they expire) until it is verified again"
    )
}

/// Another member's verified row of `name` whose value is no longer in the record loses the domain.
async fn release_lost_holders(db: &PgPool, name: &str, values: &[String]) -> ApiResult<()> {
    let holders: Vec<(Uuid, String)> =
        sqlx::query_as("SELECT id, verification_value FROM domains WHERE name = $1 AND status = 'verified'")
            .bind(name)
            .fetch_all(db)
            .await?;
    let record = challenge_name(name);
    for (id, value) in holders.into_iter().filter(|(_, value)| !values.contains(value)) {
        let found = if values.is_empty() {
            "there is no TXT record there".to_owned()
        } else {
            format!("it holds {:?}", values.join(" "))
        };
        tracing::info!(domain = %name, "a verified domain lost its TXT record");
        write(db, id, Write::Lost(&lost_reason(name, &record, &value, &found))).await?;
    }
    Ok(())
}

/// Makes the domain verified unless another member holds it: the row, or `None`.
async fn claim(db: &PgPool, domain: &DomainRow) -> sqlx::Result<Option<DomainRow>> {
    let claimed = sqlx::query_as::<_, DomainRow>(&format!(
        "UPDATE domains SET status = 'verified', verified_at = now(), lost_at = NULL, reason = NULL,
                            checked_at = now()
         WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM domains WHERE name = $2 AND status = 'verified' AND id <> $1)
         RETURNING {COLUMNS}"
    ))
    .bind(domain.id)
    .bind(&domain.name)
    .fetch_optional(db)
    .await;
    match claimed {
        Ok(row) => Ok(row),
        // Another member's check verified it between our look and our write.
        Err(sqlx::Error::Database(err)) if err.is_unique_violation() => Ok(None),
        Err(err) => Err(err),
    }
}

#[derive(Clone, Copy)]
enum Write<'a> {
    /// Still pending (or still verified after a failed lookup), with the reason.
    Reason(&'a str),
    /// Verified, and the record still proves it.
    Confirmed,
    /// Was verified; the record no longer proves it.
    Lost(&'a str),
}

async fn write(db: &PgPool, id: Uuid, what: Write<'_>) -> ApiResult<DomainRow> {
    let (sql, reason) = match what {
        Write::Reason(reason) => ("reason = $2", Some(reason)),
        Write::Confirmed => ("reason = $2", None),
        Write::Lost(reason) => ("status = 'pending', lost_at = now(), reason = $2", Some(reason)),
    };
    // A `Lost` write applies only to a row still verified, so two checks never both stamp it.
    let only_verified = if matches!(what, Write::Lost(_)) { " AND status = 'verified'" } else { "" };
    let row = sqlx::query_as::<_, DomainRow>(&format!(
        "UPDATE domains SET {sql}, checked_at = now() WHERE id = $1{only_verified} RETURNING {COLUMNS}"
    ))
    .bind(id)
    .bind(reason)
    .fetch_optional(db)
    .await?;
    match row {
        Some(row) => Ok(row),
        None => sqlx::query_as::<_, DomainRow>(&format!("SELECT {COLUMNS} FROM domains WHERE id = $1"))
            .bind(id)
            .fetch_optional(db)
            .await?
            .ok_or_else(not_found),
    }
}

/// The reconciler's re-check: pending domains not looked at for a minute, verified ones not
/// looked at for `verified_every`, a few per round (claimed with SKIP LOCKED so replicas share the
/// work). Answers how many were checked.
pub(crate) async fn recheck(cp: &ControlPlane, verified_every: Duration) -> anyhow::Result<usize> {
    let rows = sqlx::query_as::<_, DomainRow>(&format!(
        "UPDATE domains SET checked_at = now() WHERE id IN (
             SELECT id FROM domains
              WHERE checked_at IS NULL
                 OR (status = 'pending' AND checked_at < now() - make_interval(secs => $1))
                 OR (status = 'verified' AND checked_at < now() - make_interval(secs => $2))
              ORDER BY checked_at NULLS FIRST LIMIT $3 FOR UPDATE SKIP LOCKED)
         RETURNING {COLUMNS}"
    ))
    .bind(PENDING_EVERY.as_secs_f64())
    .bind(verified_every.as_secs_f64())
    .bind(BATCH)
    .fetch_all(cp.db())
    .await?;
    let count = rows.len();
    for row in rows {
        check(cp, row).await.map_err(|err| anyhow::anyhow!("checking a domain: {err}"))?;
    }
    Ok(count)
}

/// Whether the host's domain is verified now, as last checked: `Err` with the host's reason if not.
pub(crate) async fn standing(db: &PgPool, domain_id: Uuid) -> anyhow::Result<Result<(), String>> {
    let (name, status, reason): (String, String, Option<String>) =
        sqlx::query_as("SELECT name, status, reason FROM domains WHERE id = $1").bind(domain_id).fetch_one(db).await?;
    Ok(if status == "verified" { Ok(()) } else { Err(unverified(&name, reason.as_deref())) })
}

/// Before a certificate is ordered or renewed for a host under `domain_id`: checks the record
/// again; `Err` with the reason for the host when the domain is not (or no longer) proved.
pub(crate) async fn before_order(cp: &ControlPlane, domain_id: Uuid) -> anyhow::Result<Result<(), String>> {
    let row = sqlx::query_as::<_, DomainRow>(&format!("SELECT {COLUMNS} FROM domains WHERE id = $1"))
        .bind(domain_id)
        .fetch_optional(cp.db())
        .await?
        .ok_or_else(|| anyhow::anyhow!("the host's domain is gone"))?;
    let name = row.name.clone();
    if row.status != "verified" {
        return Ok(Err(unverified(&name, row.reason.as_deref())));
    }
    let (row, proof) = check(cp, row).await.map_err(|err| anyhow::anyhow!("checking a domain: {err}"))?;
    Ok(match proof {
        Proof::Held => Ok(()),
        Proof::LookupFailed => Err(format!(
            "the TXT record of {name} could not be checked before the certificate order ({}); it is retried",
            row.reason.unwrap_or_default()
        )),
        Proof::Missing | Proof::HeldByAnother => Err(unverified(&name, row.reason.as_deref())),
    })
}

/// The host's reason while its domain is not verified.
pub(crate) fn unverified(name: &str, why: Option<&str>) -> String {
    match why {
        Some(why) => format!("the domain {name} is not verified ({why}); no certificate is issued or renewed under it"),
        None => format!("the domain {name} is not verified; no certificate is issued or renewed under it"),
    }
}
