//! `/api/v1/queues` and `/api/v1/queues/{slug}`: a member's queues.

use super::path::ApiPath;
use crate::auth::AuthMember;
use crate::queues::{self, NewQueue, Queue, QueueChanges};
use crate::slug::Slug;
use crate::state::ControlPlane;
use crate::tokens::CreatedToken;
use aqs_core::{ApiJson, ApiResult};
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;

#[derive(Serialize)]
pub(super) struct Created {
    queue: Queue,
    token: CreatedToken,
}

#[derive(Serialize)]
pub(super) struct QueueBody {
    queue: Queue,
}

#[derive(Serialize)]
pub(super) struct QueueList {
    queues: Vec<Queue>,
}

pub(super) async fn create(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiJson(input): ApiJson<NewQueue>,
) -> ApiResult<(StatusCode, ApiJson<Created>)> {
    let (queue, token) = queues::create(&cp, member.id(), input).await?;
    Ok((StatusCode::CREATED, ApiJson(Created { queue, token })))
}

pub(super) async fn list(State(cp): State<ControlPlane>, member: AuthMember) -> ApiResult<ApiJson<QueueList>> {
    Ok(ApiJson(QueueList { queues: queues::list(&cp, member.id()).await? }))
}

pub(super) async fn get(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath(slug): ApiPath<Slug>,
) -> ApiResult<ApiJson<QueueBody>> {
    Ok(ApiJson(QueueBody { queue: queues::get(&cp, member.id(), &slug).await? }))
}

/// 200 with the queue as changed; 202 when a larger payload size waits for Stripe (the queue
/// still shows the old size, and `GET /api/v1/billing` lists the add-on as `pending`).
pub(super) async fn update(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath(slug): ApiPath<Slug>,
    ApiJson(changes): ApiJson<QueueChanges>,
) -> ApiResult<(StatusCode, ApiJson<QueueBody>)> {
    let requested = changes.payload_size;
    let queue = queues::update(&cp, member.id(), &slug, changes).await?;
    let status = match requested {
        Some(size) if size > queue.payload_size => StatusCode::ACCEPTED,
        _ => StatusCode::OK,
    };
    Ok((status, ApiJson(QueueBody { queue })))
}

pub(super) async fn delete(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath(slug): ApiPath<Slug>,
) -> ApiResult<StatusCode> {
    queues::delete(&cp, member.id(), &slug).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub(super) async fn pause(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath(slug): ApiPath<Slug>,
) -> ApiResult<ApiJson<QueueBody>> {
    Ok(ApiJson(QueueBody { queue: queues::pause(&cp, member.id(), &slug).await? }))
}

pub(super) async fn resume(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath(slug): ApiPath<Slug>,
) -> ApiResult<ApiJson<QueueBody>> {
    Ok(ApiJson(QueueBody { queue: queues::resume(&cp, member.id(), &slug).await? }))
}
