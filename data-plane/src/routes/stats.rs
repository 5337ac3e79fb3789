//! `GET /stats`: depth, stored bytes, oldest message and today's counters.

use super::views::QueuePath;
use crate::QueueContext;
use crate::state::DataPlane;
use aqs_core::error::{ApiError, ApiResult};
use aqs_core::errors;
use aqs_core::time::{now_ms, rfc3339};
use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Serialize, ToSchema)]
pub struct StatsAnswer {
    pub depth: Depth,
    /// Bytes of bodies and attributes stored (an estimate: see the README).
    pub stored_bytes: u64,
    /// When the oldest stored message was published; null when the queue is empty.
    #[schema(format = DateTime)]
    pub oldest_message_at: Option<String>,
    pub oldest_message_age_seconds: Option<u64>,
    /// Today's (UTC) counters, estimates.
    pub published_today: u64,
    pub delivered_today: u64,
    pub acked_today: u64,
    pub dead_letters: u64,
    pub storage_limit: u64,
    pub paused: bool,
}

#[derive(Serialize, ToSchema)]
pub struct Depth {
    /// Available to a consume now.
    pub ready: u64,
    /// Under a live lease.
    pub in_flight: u64,
    /// Held by a publish delay or a nack delay.
    pub delayed: u64,
    pub total: u64,
}

errors!(StatsErrors: "unauthorized", "team_suspended", "forbidden", "not_found", "rate_limited", "service_unavailable");

/// Depth, stored bytes, the oldest message and today's counters (send or consume scope).
#[utoipa::path(get, path = "/queue/v1/{slug}/stats", operation_id = "stats", tag = "queue", params(QueuePath),
    responses((status = 200, body = StatsAnswer, description = "The queue's figures."), StatsErrors),
    security(("queue_token" = [])))]
pub async fn stats(State(state): State<DataPlane>, ctx: QueueContext) -> ApiResult<Json<StatsAnswer>> {
    let now = now_ms();
    let s = state
        .engine
        .charged(ctx.charge)
        .stats(ctx.queue, now)
        .await?
        .ok_or_else(|| ApiError::not_found("no such queue"))?;
    Ok(Json(StatsAnswer {
        depth: Depth { ready: s.ready, in_flight: s.in_flight, delayed: s.delayed, total: s.total },
        stored_bytes: s.stored_bytes,
        oldest_message_at: s.oldest_published_ms.map(rfc3339),
        oldest_message_age_seconds: s.oldest_published_ms.map(|at| now.saturating_sub(at) / 1000),
        published_today: s.published_today,
        delivered_today: s.delivered_today,
        acked_today: s.acked_today,
        dead_letters: s.dead_letters,
        storage_limit: s.storage_limit,
        paused: s.paused,
    }))
}
