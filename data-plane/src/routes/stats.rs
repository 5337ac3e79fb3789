//! `GET /stats`: depth, stored bytes, oldest message and today's counters.

use crate::QueueContext;
use crate::engine::Class;
use crate::state::DataPlane;
use aqs_core::error::{ApiError, ApiResult};
use aqs_core::time::{now_ms, rfc3339};
use aqs_core::token::Scope;
use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

pub async fn stats(State(state): State<DataPlane>, ctx: QueueContext) -> ApiResult<Json<Value>> {
    let charge = ctx.authorize(&state, &[Scope::Send, Scope::Consume], Class::Reads)?;
    let now = now_ms();
    let s = state
        .engine
        .charged(charge)
        .stats(ctx.queue, now)
        .await?
        .ok_or_else(|| ApiError::not_found("no such queue"))?;
    Ok(Json(json!({
        "depth": { "ready": s.ready, "in_flight": s.in_flight, "delayed": s.delayed, "total": s.total },
        "stored_bytes": s.stored_bytes,
        "oldest_message_at": s.oldest_published_ms.map(rfc3339),
        "oldest_message_age_seconds": s.oldest_published_ms.map(|at| now.saturating_sub(at) / 1000),
        "published_today": s.published_today,
        "delivered_today": s.delivered_today,
        "acked_today": s.acked_today,
        "dead_letters": s.dead_letters,
        "storage_limit": s.storage_limit,
        "paused": s.paused,
    })))
}
