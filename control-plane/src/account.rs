//! Deleting a member's account, after they typed their email to confirm.
//!
//! The order is what keeps a crash or a concurrent request from leaving anything behind:
//! 1. every session ends, so nothing else acts for the member while the rest goes (a crash after
//!    this leaves an account that can log in again and delete once more);
//! 2. custom hosts (they stop serving at once), then the root domains under them;
//! 3. every queue, through `queues::delete`: its tokens revoked, its messages and Redis state
//!    dropped, its add-on's billing stopped by an outbox row;
//! 4. in one transaction holding the member's row (which `queues::create` takes too): if a queue
//!    was created meanwhile, go back to 3; otherwise the operator-authorised callback URLs go, a
//!    billing sync is queued when the member has a Stripe customer (the sync cancels whatever
//!    subscription is left, since no live queue wants an add-on), and the row becomes a tombstone.
//!
//! The tombstone keeps the id (billing's rows point at it, and `billing_accounts` keeps the Stripe
//! customer id) but no personal data: no email, no password hash, only a random erasure marker
//! (`members::tombstone`). It cannot log in, and the address is free for a new sign-up. Sessions,
//! tokens and billing rows name the member by id only, so nothing else holds the address.

use crate::billing::outbox;
use crate::members::{self, Member};
use crate::state::ControlPlane;
use crate::teams::{self, Caller, RequestOrigin, TeamId};
use crate::{admin, domains, hosts, queues, sessions};
use aqs_core::{ApiError, ApiResult};
use serde::Deserialize;

/// Rounds of "delete the queues, then close the account" before giving up on a member whose
/// other requests keep creating queues (their sessions are already ended, so only requests that
/// were in flight can).
const ROUNDS: usize = 3;

/// `DELETE /api/v1/account`: the member's email, typed again.
#[derive(Clone, Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AccountDeletion {
    /// The account's email, typed again.
    #[schema(format = Email)]
    pub confirm_email: String,
}

/// Deletes `member`'s account with everything it owns (see the module note).
pub async fn delete(
    cp: &ControlPlane,
    member: &Member,
    confirm: AccountDeletion,
    origin: RequestOrigin,
) -> ApiResult<()> {
    if !confirm.confirm_email.trim().eq_ignore_ascii_case(&member.email) {
        let message = if confirm.confirm_email.trim().is_empty() {
            "type your account's email to confirm".to_owned()
        } else {
            format!("that is not your account's email; type {} exactly", member.email)
        };
        return Err(ApiError::field("confirm_email", message));
    }
    let id = member.id;
    // The member as the owner of their personal team, which goes with the account.
    let caller = Caller::of_member(cp, member, None, true, origin).await?;
    let team = caller.team;
    sessions::revoke_all(cp.db(), id).await?;
    for host in hosts::list(cp, team).await? {
        ignore_gone(hosts::delete(cp, &caller, host.id).await)?;
    }
    for domain in domains::list(cp, team).await? {
        ignore_gone(domains::delete(cp, &caller, domain.id).await)?;
    }
    for _ in 0..ROUNDS {
        for queue in queues::list(cp, team).await? {
            ignore_gone(queues::delete(cp, &caller, &queue.slug).await)?;
        }
        if close(cp, member).await? {
            tracing::info!(member = %id.as_uuid(), "account deleted");
            return Ok(());
        }
    }
    Err(ApiError::Conflict("queues kept being created while the account was deleted; try again".into()))
}

/// Step 4: false when a live queue appeared since the queues were deleted.
async fn close(cp: &ControlPlane, member: &Member) -> ApiResult<bool> {
    let id = member.id.as_uuid();
    let mut tx = cp.db().begin().await?;
    sqlx::query("SELECT 1 FROM members WHERE id = $1 FOR UPDATE").bind(id).execute(&mut *tx).await?;
    let live: i64 = sqlx::query_scalar("SELECT count(*) FROM queues WHERE team_id = $1 AND deleted_at IS NULL")
        .bind(id)
        .fetch_one(&mut *tx)
        .await?;
    if live > 0 {
        return Ok(false);
    }
    admin::remove_callback_urls(&mut tx, id).await?;
    let customer: Option<Option<String>> =
        sqlx::query_scalar("SELECT customer_id FROM billing_accounts WHERE team_id = $1")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
    let has_customer = customer.flatten().is_some();
    if cp.billing().is_some() && has_customer {
        outbox::enqueue(&mut tx, TeamId::personal(member.id), "account deleted").await?;
    }
    members::tombstone(&mut tx, member.id).await?;
    teams::store::close_personal(&mut tx, member.id).await?;
    sessions::revoke_all(&mut *tx, member.id).await?;
    tx.commit().await?;
    if let Some(billing) = cp.billing()
        && has_customer
    {
        billing.kick();
    }
    Ok(true)
}

/// Something removed by another request meanwhile is as good as removed here.
fn ignore_gone(result: ApiResult<()>) -> ApiResult<()> {
    match result {
        Err(ApiError::NotFound(_)) => Ok(()),
        other => other,
    }
}
