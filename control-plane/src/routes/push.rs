//! `/api/v1/queues/{slug}/push…`: a queue's push target, its signing secret and its last
//! deliveries; `/api/v1/push/callback-urls`: the prefixes the member may use.

use super::path::ApiPath;
use crate::push::{self, PushDelivery, PushInput, PushSet, PushTarget};
use crate::slug::Slug;
use crate::state::ControlPlane;
use crate::teams::Caller;
use aqs_core::{ApiJson, ApiResult};
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct PushBody {
    push: PushTarget,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct Deliveries {
    deliveries: Vec<PushDelivery>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct CallbackUrls {
    callback_urls: Vec<String>,
}

aqs_core::errors!(SetErrors: "invalid_request", "unauthorized", "team_suspended", "forbidden", "not_found", "conflict", "unsupported_media_type", "payload_too_large", "service_unavailable");

aqs_core::errors!(SlugErrors: "unauthorized", "team_suspended", "forbidden", "not_found", "conflict", "service_unavailable");

aqs_core::errors!(MemberErrors: "unauthorized", "team_suspended", "forbidden", "service_unavailable");

/// 201 with the signing secret when push was off; 200 without it when it was on.
#[utoipa::path(put, path = "/api/v1/queues/{slug}/push", operation_id = "push_set", tag = "push", params(("slug" = String, Path, description = "The queue's slug.")), request_body = PushInput,
    responses((status = 201, body = PushSet, description = "Push is on, with the signing secret shown this once."), (status = 200, body = PushSet, description = "The target changed."), SetErrors), security(("session" = [])))]
pub(super) async fn set(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiPath(slug): ApiPath<Slug>,
    ApiJson(input): ApiJson<PushInput>,
) -> ApiResult<(StatusCode, ApiJson<PushSet>)> {
    let set = push::set(&cp, &caller, &slug, input).await?;
    let status = if set.created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, ApiJson(set)))
}

#[utoipa::path(get, path = "/api/v1/queues/{slug}/push", operation_id = "push_get", tag = "push", params(("slug" = String, Path, description = "The queue's slug.")),
    responses((status = 200, body = PushBody, description = "The push target."), SlugErrors), security(("session" = [])))]
pub(super) async fn get(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiPath(slug): ApiPath<Slug>,
) -> ApiResult<ApiJson<PushBody>> {
    Ok(ApiJson(PushBody { push: push::get(&cp, caller.team, &slug).await? }))
}

#[utoipa::path(delete, path = "/api/v1/queues/{slug}/push", operation_id = "push_stop", tag = "push", params(("slug" = String, Path, description = "The queue's slug.")),
    responses((status = 204, description = "Push is off."), SlugErrors), security(("session" = [])))]
pub(super) async fn stop(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiPath(slug): ApiPath<Slug>,
) -> ApiResult<StatusCode> {
    push::stop(&cp, &caller, &slug).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/v1/queues/{slug}/push/rotate-secret", operation_id = "push_rotate_secret", tag = "push", params(("slug" = String, Path, description = "The queue's slug.")),
    responses((status = 200, body = PushSet, description = "The new signing secret, shown this once; the old one signs for 24 h more."), SlugErrors), security(("session" = [])))]
pub(super) async fn rotate_secret(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiPath(slug): ApiPath<Slug>,
) -> ApiResult<ApiJson<PushSet>> {
    Ok(ApiJson(push::rotate_secret(&cp, &caller, &slug).await?))
}

#[utoipa::path(get, path = "/api/v1/queues/{slug}/push/deliveries", operation_id = "push_deliveries", tag = "push", params(("slug" = String, Path, description = "The queue's slug.")),
    responses((status = 200, body = Deliveries, description = "The last 20 delivery outcomes."), SlugErrors), security(("session" = [])))]
pub(super) async fn deliveries(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiPath(slug): ApiPath<Slug>,
) -> ApiResult<ApiJson<Deliveries>> {
    Ok(ApiJson(Deliveries { deliveries: push::deliveries(&cp, caller.team, &slug).await? }))
}

#[utoipa::path(get, path = "/api/v1/push/callback-urls", operation_id = "push_callback_urls", tag = "push",
    responses((status = 200, body = CallbackUrls, description = "The handler URL prefixes an operator authorised."), MemberErrors), security(("session" = [])))]
pub(super) async fn callback_urls(State(cp): State<ControlPlane>, caller: Caller) -> ApiResult<ApiJson<CallbackUrls>> {
    Ok(ApiJson(CallbackUrls { callback_urls: push::callback_urls(&cp, caller.team).await? }))
}
