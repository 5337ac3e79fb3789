//! Custom hosts: a hostname under a team's verified domain, pinned to one of their queues and
//! served at `https://<hostname>/` with the queue slug dropped.
//!
//! The life of a host: created `setting_up` / `waiting_for_dns`; the reconciler ([`reconciler`])
//! checks its CNAME ([`dns`]), orders a certificate by ACME HTTP-01 ([`acme`]) while
//! `issuing_certificate`, stores it with its key encrypted ([`store`]) and projects it into Redis
//! ([`projection`]), and the host is `active`; the ACME account is one per directory, stored in
//! PostgreSQL for every replica (`acme_account`); `error` carries a reason a person can act on. What
//! to do next is decided by a pure step ([`machine`]); the loop only acts and records.
//!
//! Invariants: at most one replica acts on a host at a time (a claim taken with
//! `FOR UPDATE SKIP LOCKED`, see `store::claim_due`), so a host never has two orders in flight; a
//! host is projected only while it has a certificate, and removing it deletes the projection at
//! once; a host whose CNAME disappears keeps its certificate in the projection, and the data plane
//! stops serving it when the certificate expires.

pub mod acme;
mod acme_account;
pub mod dns;
pub mod machine;
pub(crate) mod projection;
pub(crate) mod reconciler;
pub(crate) mod store;

use crate::audit::{self, Target};
use crate::slug::Slug;
use crate::state::ControlPlane;
use crate::teams::{Caller, TeamId};
use crate::{domains, queues, timefmt};
use aqs_core::cert_key::CertKeyCipher;
use aqs_core::config::Config;
use aqs_core::{ApiError, ApiResult, hostname};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use store::HostRow;
use tokio::sync::Notify;
use uuid::Uuid;

/// What the host machinery needs, built once from the configuration.
pub struct HostsContext {
    pub dns: dns::Dns,
    pub acme: Option<acme::Acme>,
    pub cipher: Option<CertKeyCipher>,
    pub policy: machine::Policy,
    /// How often a verified domain's TXT record is checked again (`AQS_DOMAIN_RECHECK_SECONDS`).
    pub domain_recheck: Duration,
    /// Wakes the reconciler when a host is added or a check is asked for.
    pub(crate) wake: Notify,
}

impl HostsContext {
    pub fn new(config: &Config) -> anyhow::Result<Self> {
        let acme = (!config.acme_directory_url.is_empty())
            .then(|| acme::Acme::new(&config.acme_directory_url, &config.acme_contact_email, &config.acme_ca_file));
        Ok(Self {
            dns: dns::Dns::new(&config.dns_servers)?,
            policy: machine::Policy {
                edge_hostname: config.edge_hostname.trim_end_matches('.').to_ascii_lowercase(),
                renew_fraction: config.cert_renew_fraction,
                recheck: Duration::from_secs(config.host_recheck_seconds.max(1)),
                acme_configured: acme.is_some() && config.cert_encryption_key.is_some(),
            },
            domain_recheck: Duration::from_secs(config.domain_recheck_seconds.max(1)),
            acme,
            cipher: config.cert_encryption_key.clone(),
            wake: Notify::new(),
        })
    }
}

/// A host as the API shows it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Host {
    pub id: Uuid,
    pub hostname: String,
    /// The slug of the queue it serves.
    pub queue: String,
    /// `setting_up`, `active` or `error`.
    pub status: &'static str,
    /// While `setting_up`: `waiting_for_dns` or `issuing_certificate`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<&'static str>,
    pub reason: Option<String>,
    /// The record to create: keep it DNS-only (not proxied).
    pub dns: CnameRecord,
    pub certificate: Option<Certificate>,
    #[serde(serialize_with = "timefmt::rfc3339_opt")]
    pub checked_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "timefmt::rfc3339")]
    pub created_at: DateTime<Utc>,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct CnameRecord {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub name: String,
    pub value: String,
}

#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct Certificate {
    #[serde(serialize_with = "timefmt::rfc3339")]
    pub not_before: DateTime<Utc>,
    #[serde(serialize_with = "timefmt::rfc3339")]
    pub not_after: DateTime<Utc>,
}

/// A host as operators see it: whose it is and how many orders it took.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct AdminHost {
    #[serde(flatten)]
    pub host: Host,
    pub member_email: String,
    pub orders: i32,
    pub failures: i32,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewHost {
    /// A name under one of the team's verified domains.
    #[schema(format = Hostname)]
    pub hostname: String,
    /// The slug of the team's queue.
    pub queue: String,
}

fn not_found() -> ApiError {
    ApiError::not_found("no host with this id")
}

pub async fn create(cp: &ControlPlane, caller: &Caller, input: NewHost) -> ApiResult<Host> {
    let team = caller.team;
    let name = hostname::normalize(&input.hostname).ok_or_else(|| {
        ApiError::field("hostname", "must be a DNS name of two or more labels, such as queue.example.com")
    })?;
    let slug = Slug::parse(&input.queue).ok_or_else(queues::not_found)?;
    let queue = queues::get(cp, team, &slug).await?;
    let domain = domains::verified_parent(cp.db(), team, &name).await?.ok_or_else(|| {
        ApiError::field(
            "hostname",
            format!("{name} is not under one of your verified domains; add its root domain and verify it first"),
        )
    })?;
    // The domain is this team's now: a host another team kept under it after losing it goes.
    if let Some(released) = store::release_unproven(cp.db(), team, &name).await? {
        tracing::info!(hostname = %released, "custom host released to the team now holding its domain");
        projection::remove_host(&mut cp.redis(), cp.keys(), &released).await.map_err(crate::projection::failed)?;
    }
    let mut tx = cp.db().begin().await?;
    let row = store::insert(&mut tx, team, domain, queue.id.0, &name).await?;
    audit::record(&mut tx, caller, "host.added", Target::new("host", row.id)).await?;
    tx.commit().await?;
    cp.hosts().wake.notify_one();
    Ok(row.into_host(&cp.hosts().policy.edge_hostname))
}

pub async fn list(cp: &ControlPlane, team: TeamId) -> ApiResult<Vec<Host>> {
    let rows = store::list(cp.db(), Some(team), None).await?;
    Ok(rows.into_iter().map(|row| row.into_host(&cp.hosts().policy.edge_hostname)).collect())
}

/// The hosts serving one of the team's queues.
pub async fn list_for_queue(cp: &ControlPlane, team: TeamId, slug: &Slug) -> ApiResult<Vec<Host>> {
    let queue = queues::get(cp, team, slug).await?;
    let rows = store::list(cp.db(), Some(team), None).await?;
    Ok(rows
        .into_iter()
        .filter(|row| row.queue_id == queue.id.0)
        .map(|row| row.into_host(&cp.hosts().policy.edge_hostname))
        .collect())
}

pub async fn get(cp: &ControlPlane, team: TeamId, id: Uuid) -> ApiResult<Host> {
    let row = store::find(cp.db(), Some(team), id).await?.ok_or_else(not_found)?;
    Ok(row.into_host(&cp.hosts().policy.edge_hostname))
}

/// Removes the host: the projection goes at once, so the data plane stops serving it; the queue,
/// its messages and its tokens stay.
pub async fn delete(cp: &ControlPlane, caller: &Caller, id: Uuid) -> ApiResult<()> {
    let team = caller.team;
    let mut tx = cp.db().begin().await?;
    let hostname = store::delete(&mut tx, team, id).await?.ok_or_else(not_found)?;
    audit::record(&mut tx, caller, "host.removed", Target::new("host", id)).await?;
    tx.commit().await?;
    tracing::info!(%hostname, "custom host removed");
    projection::remove_host(&mut cp.redis(), cp.keys(), &hostname).await.map_err(crate::projection::failed)
}

/// Removes the projection of hosts deleted with their queue: the data plane stops serving them.
pub(crate) async fn remove_projections(cp: &ControlPlane, hostnames: &[String]) -> ApiResult<()> {
    for hostname in hostnames {
        tracing::info!(%hostname, "custom host removed with its queue");
        projection::remove_host(&mut cp.redis(), cp.keys(), hostname).await.map_err(crate::projection::failed)?;
    }
    Ok(())
}

/// Asks the reconciler to look at the host now (DNS, then the certificate if needed).
pub async fn check(cp: &ControlPlane, caller: &Caller, id: Uuid) -> ApiResult<Host> {
    let team = caller.team;
    let mut tx = cp.db().begin().await?;
    let row = store::check_now(&mut tx, Some(team), id).await?.ok_or_else(not_found)?;
    audit::record(&mut tx, caller, "host.checked", Target::new("host", row.id)).await?;
    tx.commit().await?;
    cp.hosts().wake.notify_one();
    Ok(row.into_host(&cp.hosts().policy.edge_hostname))
}

/// Operators: every team's hosts, optionally of one status.
pub async fn admin_list(
    cp: &ControlPlane,
    _operator: &crate::AuthOperator,
    status: Option<&str>,
) -> ApiResult<Vec<AdminHost>> {
    if let Some(status) = status
        && !["setting_up", "active", "error"].contains(&status)
    {
        return Err(ApiError::invalid("status must be setting_up, active or error"));
    }
    let rows = store::list(cp.db(), None, status).await?;
    Ok(rows.into_iter().map(|row| row.into_admin(&cp.hosts().policy.edge_hostname)).collect())
}

/// Operators: re-check any team's host now.
pub async fn admin_check(cp: &ControlPlane, _operator: &crate::AuthOperator, id: Uuid) -> ApiResult<AdminHost> {
    let row = store::check_now(&mut *cp.db().acquire().await?, None, id).await?.ok_or_else(not_found)?;
    cp.hosts().wake.notify_one();
    Ok(row.into_admin(&cp.hosts().policy.edge_hostname))
}

impl HostRow {
    pub(crate) fn into_host(self, edge: &str) -> Host {
        let status = machine::Status::parse(&self.status, self.stage.as_deref());
        Host {
            dns: CnameRecord { kind: "CNAME", name: self.hostname.clone(), value: edge.to_owned() },
            certificate: self.cert_window().map(|(not_before, not_after)| Certificate { not_before, not_after }),
            id: self.id,
            hostname: self.hostname,
            queue: self.queue_slug,
            status: status.as_str(),
            stage: status.stage(),
            reason: self.reason,
            checked_at: self.checked_at,
            created_at: self.created_at,
        }
    }

    fn into_admin(self, edge: &str) -> AdminHost {
        let (member_email, orders, failures) = (self.member_email.clone(), self.orders, self.failures);
        AdminHost { host: self.into_host(edge), member_email, orders, failures }
    }
}
