//! The reconciler loop: claims due hosts one at a time (`store::claim_due`), asks the pure step
//! `machine::decide` what to do, does it (a DNS check, an ACME order), writes the outcome back
//! under its claim and projects the host. Between rounds it sleeps until the next tick, a wake-up
//! (a host added, a check asked for) or shutdown; every outcome sets the host's next time, so a
//! failing host is retried with backoff and never in a tight loop. Domains are re-checked on the
//! same ticks (`domain_proof::recheck`); a host whose domain is not verified orders nothing, and
//! the domain's record is checked again right before each order.

use super::machine::{self, Action, HostView, Status};
use super::projection;
use super::store::{self, HostRow, NewCertificate};
use crate::domain_proof;
use crate::state::ControlPlane;
use chrono::Utc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How often the loop looks for due hosts when nothing wakes it.
const TICK: Duration = Duration::from_secs(1);
/// The pause after a failure of PostgreSQL itself.
const STORE_RETRY: Duration = Duration::from_secs(5);

/// Starts the reconciler of this control-plane replica; it ends when `shutdown` is cancelled.
pub fn spawn(cp: ControlPlane, shutdown: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        prepare_account(&cp).await;
        loop {
            let pause = match round(&cp, &shutdown).await {
                Ok(()) => TICK,
                Err(err) => {
                    tracing::warn!(error = %err, "host reconciler: the store failed; retrying");
                    STORE_RETRY
                }
            };
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = cp.hosts().wake.notified() => {}
                () = shutdown.cancelled() => return,
            }
        }
    })
}

/// Loads (or registers) the ACME account at start, so that a restart shows at once whether the
/// stored one still works; a failure is retried by the first order.
async fn prepare_account(cp: &ControlPlane) {
    let ctx = cp.hosts();
    if let (Some(acme), Some(cipher)) = (ctx.acme.as_ref(), ctx.cipher.as_ref())
        && let Err(reason) = acme.account(cp.db(), cipher).await
    {
        tracing::warn!(%reason, "the ACME account is not ready; the first certificate order retries");
    }
}

/// Handles every host that is due now, then the domains due for a re-check.
async fn round(cp: &ControlPlane, shutdown: &CancellationToken) -> anyhow::Result<()> {
    while !shutdown.is_cancelled() {
        let Some((claim, row)) = store::claim_due(cp.db()).await? else { break };
        let hostname = row.hostname.clone();
        if let Err(err) = reconcile(cp, claim, row).await {
            // The claim expires on its own; the host is retried then.
            tracing::warn!(error = %err, %hostname, "host reconciler: could not record the outcome");
        }
    }
    domain_proof::recheck(cp, cp.hosts().domain_recheck).await?;
    // Every control replica runs this loop: it also deletes audit events past their retention.
    crate::audit::sweep_when_due(cp.db()).await;
    Ok(())
}

/// One look at one claimed host.
pub(crate) async fn reconcile(cp: &ControlPlane, claim: uuid::Uuid, row: HostRow) -> anyhow::Result<()> {
    let ctx = cp.hosts();
    let view = view_of(&row);
    if let Err(reason) = domain_proof::standing(cp.db(), row.domain_id).await? {
        let record = machine::unproven(&view, &reason, Utc::now());
        if let Some(row) = store::finish(cp.db(), claim, row.id, &record, None).await? {
            project(cp, &row).await?;
        }
        return Ok(());
    }
    let cname = ctx.dns.check_cname(&row.hostname, &ctx.policy.edge_hostname).await;
    let written = match machine::decide(&view, &cname, Utc::now(), &ctx.policy) {
        Action::Record(record) => store::finish(cp.db(), claim, row.id, &record, None).await?,
        Action::Order => {
            // The proof is looked up again now: no certificate is issued on a record that is gone.
            if let Err(reason) = domain_proof::before_order(cp, row.domain_id).await? {
                let record = machine::unproven(&view, &reason, Utc::now());
                if let Some(row) = store::finish(cp.db(), claim, row.id, &record, None).await? {
                    project(cp, &row).await?;
                }
                return Ok(());
            }
            if !store::mark_ordering(cp.db(), claim, row.id, view.status != Status::Active).await? {
                return Ok(());
            }
            let (Some(acme), Some(cipher)) = (ctx.acme.as_ref(), ctx.cipher.as_ref()) else {
                anyhow::bail!("an order was decided without ACME settings");
            };
            tracing::info!(hostname = %row.hostname, renewal = row.cert_pem.is_some(), "ordering a certificate");
            match acme.order(cp.db(), cipher, &mut cp.redis(), cp.keys(), &row.hostname).await {
                Ok(issued) => {
                    let sealed = cipher.encrypt(issued.key_pem.as_bytes());
                    let window = (issued.not_before, issued.not_after);
                    let record = machine::after_order(&view, Ok(window), Utc::now(), &ctx.policy);
                    let cert = NewCertificate {
                        cert_pem: &issued.cert_pem,
                        key_encrypted: &sealed,
                        not_before: issued.not_before,
                        not_after: issued.not_after,
                    };
                    tracing::info!(hostname = %row.hostname, not_after = %issued.not_after, "certificate issued");
                    store::finish(cp.db(), claim, row.id, &record, Some(cert)).await?
                }
                Err(reason) => {
                    tracing::info!(hostname = %row.hostname, %reason, "certificate order failed");
                    let record = machine::after_order(&view, Err(reason.as_str()), Utc::now(), &ctx.policy);
                    store::finish(cp.db(), claim, row.id, &record, None).await?
                }
            }
        }
    };
    if let Some(row) = written {
        project(cp, &row).await?;
    }
    Ok(())
}

/// Writes the host's projection, then makes sure it was not removed meanwhile: a removal that
/// committed before this look at PostgreSQL may have deleted the record before our write landed;
/// one that commits after it deletes the record itself, after our write.
async fn project(cp: &ControlPlane, row: &HostRow) -> anyhow::Result<()> {
    let mut redis = cp.redis();
    if let Err(err) = projection::put_host(&mut redis, cp.keys(), row).await {
        // Rewritten at the host's next look and by the start-up re-sync.
        tracing::warn!(error = %err, hostname = %row.hostname, "could not project the host into Redis");
        return Ok(());
    }
    if store::find(cp.db(), None, row.id).await?.is_none() {
        projection::remove_host(&mut redis, cp.keys(), &row.hostname).await?;
    }
    Ok(())
}

fn view_of(row: &HostRow) -> HostView {
    HostView {
        hostname: row.hostname.clone(),
        status: Status::parse(&row.status, row.stage.as_deref()),
        reason: row.reason.clone(),
        cert: row.cert_window(),
        failures: row.failures.max(0) as u32,
    }
}
