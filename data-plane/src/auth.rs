//! `QueueContext`: who is calling, for which queue, and the request's charge to the token's rate
//! budget. Every per-queue handler takes one; it exists only once the bearer token is valid,
//! belongs to the queue and has a scope the route allows. What a route allows is declared beside
//! it in the route table (`routes/mod.rs`) as an [`Access`] layer, which this extractor reads.
//! Order of answers: a missing, malformed or unknown token is 401; an unknown slug, or a queue
//! other than the token's, is 404 (another tenant's queue is never revealed); a queue whose team
//! an operator suspended is 403 `team_suspended`; a missing scope is 403 `forbidden`; all before
//! the handler reads its query or body.

use crate::state::DataPlane;
use aqs_core::error::{ApiError, ApiResult};
use aqs_core::ids::QueueId;
use aqs_core::projection::TokenRecord;
use aqs_core::slug::Slug;
use aqs_core::time::now_ms;
use aqs_core::token::{Scope, TokenSecret};
use aqs_engine::{Charge, Class};
use axum::Extension;
use axum::extract::{FromRequestParts, Path};
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

/// The queue a custom host is pinned to. A host-routing layer inserts it as a request extension;
/// without it the queue comes from the `{slug}` path segment.
#[derive(Clone, Copy, Debug)]
pub struct PinnedQueue(pub QueueId);

/// What a route allows: the scopes of which a token needs one, and the rate budget its requests
/// are charged to. Set per route with [`access`].
#[derive(Clone, Copy, Debug)]
pub struct Access {
    scopes: &'static [Scope],
    class: Class,
}

/// The layer that declares a route's [`Access`] (a request extension, so no boxed middleware).
pub fn access(scopes: &'static [Scope], class: Class) -> Extension<Access> {
    Extension(Access { scopes, class })
}

#[derive(Clone, Debug)]
pub struct QueueContext {
    pub queue: QueueId,
    pub token: std::sync::Arc<TokenRecord>,
    /// The request's charge: the handler runs its script through `state.engine.charged(charge)`,
    /// which takes the request from the token's budget, held in Redis for every replica, or
    /// refuses it with 429 before the script changes anything (`engine/src/rate.rs`).
    pub charge: Charge,
}

impl FromRequestParts<DataPlane> for QueueContext {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &DataPlane) -> ApiResult<Self> {
        let secret = bearer(parts)?;
        let mut conn = state.engine.conn();
        let token = state
            .auth
            .token(&mut conn, &secret)
            .await?
            .ok_or_else(|| ApiError::Unauthorized("the token is unknown or was revoked".into()))?;
        let queue = match parts.extensions.get::<PinnedQueue>() {
            Some(pinned) => pinned.0,
            None => {
                // A segment that could not be a slug is unknown without asking Redis.
                let Path(slug) = Path::<Slug>::from_request_parts(parts, state)
                    .await
                    .map_err(|_| ApiError::not_found("no such queue"))?;
                state.auth.slug(&mut conn, &slug).await?.ok_or_else(|| ApiError::not_found("no such queue"))?
            }
        };
        if token.queue != queue {
            return Err(ApiError::not_found("no such queue"));
        }
        // The cached settings (which publish reads anyway, so it costs publish nothing more): a
        // suspended team's tokens are refused on every route, before their scope is looked at.
        if let Some(meta) = state.auth.meta(&mut conn, queue).await?
            && let Some(reason) = &meta.suspended
        {
            return Err(ApiError::TeamSuspended(format!("an operator suspended this queue's team: {reason}")));
        }
        let access = parts
            .extensions
            .get::<Access>()
            .copied()
            .ok_or_else(|| anyhow::anyhow!("{} declares no access in the route table", parts.uri.path()))?;
        let charge = authorize(state, queue, &token, access)?;
        Ok(Self { queue, token, charge })
    }
}

fn bearer(parts: &Parts) -> ApiResult<TokenSecret> {
    let header = parts
        .headers
        .get(AUTHORIZATION)
        .ok_or_else(|| ApiError::Unauthorized("send the queue token as Authorization: Bearer acq_…".into()))?;
    let text = header.to_str().unwrap_or_default();
    let token = aqs_core::token::bearer(text).unwrap_or_default();
    TokenSecret::parse(token).ok_or_else(|| ApiError::Unauthorized("the token is malformed".into()))
}

/// Checks that the token has one of the route's scopes and stamps its last use (at most once a
/// minute, off the request path). Answers the request's charge to the route's budget.
fn authorize(state: &DataPlane, queue: QueueId, token: &TokenRecord, access: Access) -> ApiResult<Charge> {
    if !access.scopes.iter().any(|s| token.allows(*s)) {
        let names: Vec<&str> = access.scopes.iter().map(|s| s.as_str()).collect();
        return Err(ApiError::Forbidden(format!("this token lacks the {} scope", names.join(" or "))));
    }
    let now = now_ms();
    if state.last_use.due(token.token_id, now) {
        record_last_use(state, queue, token.token_id, now);
    }
    Ok(Charge::new(queue, token.token_id, access.class, now))
}

fn record_last_use(state: &DataPlane, queue: QueueId, token_id: uuid::Uuid, now: u64) {
    let engine = state.engine.clone();
    tokio::spawn(async move {
        if let Err(err) = engine.record_token_use(queue, token_id, now).await {
            tracing::debug!(error = %err, %token_id, "could not record the token's last use");
        }
    });
}
