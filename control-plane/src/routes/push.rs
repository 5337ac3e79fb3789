//! `/api/v1/queues/{slug}/push…`: a queue's push target, its signing secret and its last
//! deliveries; `/api/v1/push/callback-urls`: the prefixes the member may use.

use super::path::ApiPath;
use crate::auth::AuthMember;
use crate::push::{self, PushDelivery, PushInput, PushSet, PushTarget};
use crate::slug::Slug;
use crate::state::ControlPlane;
use aqs_core::{ApiJson, ApiResult};
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;

#[derive(Serialize)]
pub(super) struct PushBody {
    push: PushTarget,
}

#[derive(Serialize)]
pub(super) struct Deliveries {
    deliveries: Vec<PushDelivery>,
}

#[derive(Serialize)]
pub(super) struct CallbackUrls {
    callback_urls: Vec<String>,
}

/// 201 with the signing secret when push was off; 200 without it when it was on.
pub(super) async fn set(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath(slug): ApiPath<Slug>,
    ApiJson(input): ApiJson<PushInput>,
) -> ApiResult<(StatusCode, ApiJson<PushSet>)> {
    let set = push::set(&cp, member.id(), &slug, input).await?;
    let status = if set.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, ApiJson(set)))
}

pub(super) async fn get(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath(slug): ApiPath<Slug>,
) -> ApiResult<ApiJson<PushBody>> {
    Ok(ApiJson(PushBody { push: push::get(&cp, member.id(), &slug).await? }))
}

pub(super) async fn stop(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath(slug): ApiPath<Slug>,
) -> ApiResult<StatusCode> {
    push::stop(&cp, member.id(), &slug).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub(super) async fn rotate_secret(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath(slug): ApiPath<Slug>,
) -> ApiResult<ApiJson<PushSet>> {
    Ok(ApiJson(push::rotate_secret(&cp, member.id(), &slug).await?))
}

pub(super) async fn deliveries(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath(slug): ApiPath<Slug>,
) -> ApiResult<ApiJson<Deliveries>> {
    Ok(ApiJson(Deliveries { deliveries: push::deliveries(&cp, member.id(), &slug).await? }))
}

pub(super) async fn callback_urls(
    State(cp): State<ControlPlane>,
    member: AuthMember,
) -> ApiResult<ApiJson<CallbackUrls>> {
    Ok(ApiJson(CallbackUrls { callback_urls: push::callback_urls(&cp, member.id()).await? }))
}
