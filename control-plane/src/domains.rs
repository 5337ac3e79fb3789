//! Root domains a team proves with a TXT record: `_aqs-challenge.<domain>` must hold the
//! domain's `aqs-verify=<random>` value. A domain goes `pending` → `verified` on a check (the API's
//! verify, and the reconciler's periodic re-checks); custom hosts can then be added under it.
//! Several members may add a root domain, each with their own value, but it is verified for one
//! at a time, and only while its record stays: the checks themselves live in `domain_proof`.

use crate::audit::{self, Target};
use crate::state::ControlPlane;
use crate::teams::{Caller, TeamId};
use crate::{domain_proof, timefmt};
use aqs_core::{ApiError, ApiResult, hostname};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;
use uuid::Uuid;

pub(crate) const COLUMNS: &str = "id, name, verification_value, status, reason, verified_at, lost_at, created_at";

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Domain {
    pub id: Uuid,
    pub name: String,
    /// `pending` or `verified`.
    pub status: String,
    /// Why the last check did not verify it (the record is missing or wrong, another team holds
    /// the domain, the proof was lost).
    pub reason: Option<String>,
    /// The record to create.
    pub verification: TxtRecord,
    #[serde(serialize_with = "timefmt::rfc3339_opt")]
    pub verified_at: Option<DateTime<Utc>>,
    /// When a re-check found the verified domain's record gone: it is `pending` since, and its
    /// hosts get no new certificates until it is verified again. `null` once verified again.
    #[serde(serialize_with = "timefmt::rfc3339_opt")]
    pub lost_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "timefmt::rfc3339")]
    pub created_at: DateTime<Utc>,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct TxtRecord {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub name: String,
    pub value: String,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewDomain {
    /// A root domain, such as `example.com`.
    #[schema(format = Hostname)]
    pub name: String,
}

#[derive(sqlx::FromRow)]
pub(crate) struct DomainRow {
    pub id: Uuid,
    pub name: String,
    pub verification_value: String,
    pub status: String,
    pub reason: Option<String>,
    verified_at: Option<DateTime<Utc>>,
    lost_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
}

impl DomainRow {
    fn into_domain(self) -> Domain {
        Domain {
            verification: TxtRecord { kind: "TXT", name: challenge_name(&self.name), value: self.verification_value },
            id: self.id,
            name: self.name,
            status: self.status,
            reason: self.reason,
            verified_at: self.verified_at,
            lost_at: self.lost_at,
            created_at: self.created_at,
        }
    }
}

pub(crate) fn challenge_name(domain: &str) -> String {
    format!("_aqs-challenge.{domain}")
}

pub(crate) fn not_found() -> ApiError {
    ApiError::not_found("no domain with this id")
}

/// The service's own edge hostname, its parent domains and the names under it are nobody's to
/// prove: a team who verified one could put hosts beside (or on) the service's own names.
fn refuse_edge(edge: &str, name: &str) -> ApiResult<()> {
    let related = edge == name || edge.ends_with(&format!(".{name}")) || name.ends_with(&format!(".{edge}"));
    if !edge.is_empty() && related {
        return Err(ApiError::field("name", format!("{name} is this service's own domain; add a domain of yours")));
    }
    Ok(())
}

pub async fn create(cp: &ControlPlane, caller: &Caller, input: NewDomain) -> ApiResult<Domain> {
    let team = caller.team;
    let name = hostname::normalize(&input.name)
        .ok_or_else(|| ApiError::field("name", "must be a domain name of two or more labels, such as example.com"))?;
    refuse_edge(&cp.hosts().policy.edge_hostname, &name)?;
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let token: String = (0..32).map(|_| CHARS[rand::random_range(0..CHARS.len())] as char).collect();
    let mut tx = cp.db().begin().await?;
    let row = sqlx::query_as::<_, DomainRow>(&format!(
        "INSERT INTO domains (id, team_id, name, verification_value) VALUES ($1, $2, $3, $4) RETURNING {COLUMNS}"
    ))
    .bind(Uuid::new_v4())
    .bind(team.as_uuid())
    .bind(&name)
    .bind(format!("aqs-verify={token}"))
    .fetch_one(&mut *tx)
    .await?;
    audit::record(&mut tx, caller, "domain.added", Target::new("domain", row.id)).await?;
    tx.commit().await?;
    Ok(row.into_domain())
}

pub async fn list(cp: &ControlPlane, team: TeamId) -> ApiResult<Vec<Domain>> {
    let rows =
        sqlx::query_as::<_, DomainRow>(&format!("SELECT {COLUMNS} FROM domains WHERE team_id = $1 ORDER BY name"))
            .bind(team.as_uuid())
            .fetch_all(cp.db())
            .await?;
    Ok(rows.into_iter().map(DomainRow::into_domain).collect())
}

pub async fn get(cp: &ControlPlane, team: TeamId, id: Uuid) -> ApiResult<Domain> {
    find(cp.db(), team, id).await.map(DomainRow::into_domain)
}

async fn find(db: &PgPool, team: TeamId, id: Uuid) -> ApiResult<DomainRow> {
    sqlx::query_as::<_, DomainRow>(&format!("SELECT {COLUMNS} FROM domains WHERE team_id = $1 AND id = $2"))
        .bind(team.as_uuid())
        .bind(id)
        .fetch_optional(db)
        .await?
        .ok_or_else(not_found)
}

/// Removes a domain no host uses (409 while one does).
pub async fn delete(cp: &ControlPlane, caller: &Caller, id: Uuid) -> ApiResult<()> {
    let team = caller.team;
    let domain = find(cp.db(), team, id).await?;
    let in_use: i64 = sqlx::query_scalar("SELECT count(*) FROM hosts WHERE domain_id = $1")
        .bind(domain.id)
        .fetch_one(cp.db())
        .await?;
    if in_use > 0 {
        return Err(ApiError::Conflict(format!(
            "{} still has {in_use} host(s); remove them before the domain",
            domain.name
        )));
    }
    let mut tx = cp.db().begin().await?;
    let removed =
        sqlx::query("DELETE FROM domains WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM hosts WHERE domain_id = $1)")
            .bind(domain.id)
            .execute(&mut *tx)
            .await?;
    if removed.rows_affected() == 0 {
        return Err(ApiError::Conflict(format!("{} gained a host meanwhile; remove it first", domain.name)));
    }
    audit::record(&mut tx, caller, "domain.removed", Target::new("domain", domain.id)).await?;
    tx.commit().await?;
    Ok(())
}

/// Checks the TXT record now: 200 with `verified`, or `pending` with the reason; `409 conflict`
/// while another team holds the domain verified (their record is still in place).
///
/// `domain.verified` is recorded when this check made the domain verified. The proof is written
/// by `domain_proof`, which the reconciler's re-checks share, so the event follows it in its own
/// transaction rather than the proof's.
pub async fn verify(cp: &ControlPlane, caller: &Caller, id: Uuid) -> ApiResult<Domain> {
    let team = caller.team;
    let domain = find(cp.db(), team, id).await?;
    let was_verified = domain.status == "verified";
    let (row, proof) = domain_proof::check(cp, domain).await?;
    match proof {
        domain_proof::Proof::HeldByAnother => Err(ApiError::Conflict(row.reason.unwrap_or_default())),
        domain_proof::Proof::Held if !was_verified => {
            let mut tx = cp.db().begin().await?;
            audit::record(&mut tx, caller, "domain.verified", Target::new("domain", row.id)).await?;
            tx.commit().await?;
            Ok(row.into_domain())
        }
        _ => Ok(row.into_domain()),
    }
}

/// The team's verified domain that `host` sits strictly under (the longest, if several).
pub(crate) async fn verified_parent(db: &PgPool, team: TeamId, host: &str) -> ApiResult<Option<Uuid>> {
    let rows: Vec<(Uuid, String)> =
        sqlx::query_as("SELECT id, name FROM domains WHERE team_id = $1 AND status = 'verified'")
            .bind(team.as_uuid())
            .fetch_all(db)
            .await?;
    Ok(rows
        .into_iter()
        .filter(|(_, name)| host != name && hostname::is_under(host, name))
        .max_by_key(|(_, name)| name.len())
        .map(|(id, _)| id))
}

#[cfg(test)]
mod tests {
    use super::refuse_edge;

    #[test]
    fn the_edge_hostname_and_its_parents_are_refused() {
        for name in ["edge.aqs.example", "aqs.example", "sub.edge.aqs.example"] {
            assert!(refuse_edge("edge.aqs.example", name).unwrap_err().to_string().starts_with("name:"), "{name}");
        }
        for name in ["other.example", "xaqs.example", "edge.aqs.example.com"] {
            assert!(refuse_edge("edge.aqs.example", name).is_ok(), "{name}");
        }
        assert!(refuse_edge("", "example.com").is_ok());
    }
}
