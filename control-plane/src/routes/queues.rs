//! `/api/v1/queues` and `/api/v1/queues/{slug}`: a member's queues.

use super::path::ApiPath;
use crate::queues::{self, NewQueue, Queue, QueueChanges};
use crate::slug::Slug;
use crate::state::ControlPlane;
use crate::teams::Caller;
use crate::tokens::CreatedToken;
use aqs_core::{ApiJson, ApiResult};
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct Created {
    queue: Queue,
    token: CreatedToken,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct QueueBody {
    queue: Queue,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct QueueList {
    queues: Vec<Queue>,
}

aqs_core::errors!(CreateErrors: "invalid_request", "unauthorized", "team_suspended", "forbidden", "payment_required", "queue_limit_reached", "conflict", "unsupported_media_type", "payload_too_large", "service_unavailable");

aqs_core::errors!(ListErrors: "unauthorized", "team_suspended", "forbidden", "service_unavailable");

aqs_core::errors!(SlugErrors: "unauthorized", "team_suspended", "forbidden", "not_found", "conflict", "service_unavailable");

aqs_core::errors!(UpdateErrors: "invalid_request", "unauthorized", "team_suspended", "forbidden", "payment_required", "not_found", "conflict", "oversized_messages_stored", "unsupported_media_type", "payload_too_large", "service_unavailable");

#[utoipa::path(post, path = "/api/v1/queues", operation_id = "queues_create", tag = "queues", request_body = NewQueue,
    responses((status = 201, body = Created, description = "The queue and its first token (the secret is shown this once)."), CreateErrors), security(("session" = [])))]
pub(super) async fn create(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiJson(input): ApiJson<NewQueue>,
) -> ApiResult<(StatusCode, ApiJson<Created>)> {
    let (queue, token) = queues::create(&cp, &caller, input).await?;
    Ok((StatusCode::CREATED, ApiJson(Created { queue, token })))
}

#[utoipa::path(get, path = "/api/v1/queues", operation_id = "queues_list", tag = "queues",
    responses((status = 200, body = QueueList, description = "The member's queues."), ListErrors), security(("session" = [])))]
pub(super) async fn list(State(cp): State<ControlPlane>, caller: Caller) -> ApiResult<ApiJson<QueueList>> {
    Ok(ApiJson(QueueList { queues: queues::list(&cp, caller.team).await? }))
}

#[utoipa::path(get, path = "/api/v1/queues/{slug}", operation_id = "queues_get", tag = "queues", params(("slug" = String, Path, description = "The queue's slug.")),
    responses((status = 200, body = QueueBody, description = "The queue."), SlugErrors), security(("session" = [])))]
pub(super) async fn get(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiPath(slug): ApiPath<Slug>,
) -> ApiResult<ApiJson<QueueBody>> {
    Ok(ApiJson(QueueBody { queue: queues::get(&cp, caller.team, &slug).await? }))
}

/// 200 with the queue as changed; 202 when a larger payload size waits for Stripe (the queue
/// still shows the old size, and `GET /api/v1/billing` lists the add-on as `pending`).
#[utoipa::path(patch, path = "/api/v1/queues/{slug}", operation_id = "queues_update", tag = "queues", params(("slug" = String, Path, description = "The queue's slug.")), request_body = QueueChanges,
    responses((status = 200, body = QueueBody, description = "The queue as changed."), (status = 202, body = QueueBody, description = "A larger payload size waits for the payment provider; the queue still shows the old size."), UpdateErrors), security(("session" = [])))]
pub(super) async fn update(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiPath(slug): ApiPath<Slug>,
    ApiJson(changes): ApiJson<QueueChanges>,
) -> ApiResult<(StatusCode, ApiJson<QueueBody>)> {
    let requested = changes.payload_size;
    let queue = queues::update(&cp, &caller, &slug, changes).await?;
    let status = match requested {
        Some(size) if size > queue.payload_size => StatusCode::ACCEPTED,
        _ => StatusCode::OK,
    };
    Ok((status, ApiJson(QueueBody { queue })))
}

#[utoipa::path(delete, path = "/api/v1/queues/{slug}", operation_id = "queues_delete", tag = "queues", params(("slug" = String, Path, description = "The queue's slug.")),
    responses((status = 204, description = "Deleted with its messages and tokens."), SlugErrors), security(("session" = [])))]
pub(super) async fn delete(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiPath(slug): ApiPath<Slug>,
) -> ApiResult<StatusCode> {
    queues::delete(&cp, &caller, &slug).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/v1/queues/{slug}/pause", operation_id = "queues_pause", tag = "queues", params(("slug" = String, Path, description = "The queue's slug.")),
    responses((status = 200, body = QueueBody, description = "Paused: no publishes, deliveries or pushes."), SlugErrors), security(("session" = [])))]
pub(super) async fn pause(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiPath(slug): ApiPath<Slug>,
) -> ApiResult<ApiJson<QueueBody>> {
    Ok(ApiJson(QueueBody { queue: queues::pause(&cp, &caller, &slug).await? }))
}

#[utoipa::path(post, path = "/api/v1/queues/{slug}/resume", operation_id = "queues_resume", tag = "queues", params(("slug" = String, Path, description = "The queue's slug.")),
    responses((status = 200, body = QueueBody, description = "Resumed."), SlugErrors), security(("session" = [])))]
pub(super) async fn resume(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiPath(slug): ApiPath<Slug>,
) -> ApiResult<ApiJson<QueueBody>> {
    Ok(ApiJson(QueueBody { queue: queues::resume(&cp, &caller, &slug).await? }))
}
