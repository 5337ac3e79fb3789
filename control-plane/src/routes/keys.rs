//! `/api/v1/keys`: the management keys of the team the request acts on (the `AQS-Team` header, else
//! the personal team), for admins and owners.

use super::path::ApiPath;
use crate::keys::{self, CreatedKey, ManagementKey, NewKey};
use crate::state::ControlPlane;
use crate::teams::Caller;
use aqs_core::{ApiJson, ApiResult};
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use uuid::Uuid;

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct KeyList {
    keys: Vec<ManagementKey>,
}

aqs_core::errors!(CreateErrors: "invalid_request", "unauthorized", "forbidden", "not_found", "conflict", "team_suspended", "unsupported_media_type", "payload_too_large", "service_unavailable");
aqs_core::errors!(ListErrors: "unauthorized", "team_suspended", "forbidden", "not_found", "service_unavailable");
aqs_core::errors!(RevokeErrors: "unauthorized", "forbidden", "not_found", "team_suspended", "service_unavailable");

#[utoipa::path(post, path = "/api/v1/keys", operation_id = "keys_create", tag = "keys", request_body = NewKey,
    responses((status = 201, body = CreatedKey, description = "The key and its secret `acm_…`, shown this once."), CreateErrors), security(("session" = [])))]
pub(super) async fn create(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiJson(input): ApiJson<NewKey>,
) -> ApiResult<(StatusCode, ApiJson<CreatedKey>)> {
    Ok((StatusCode::CREATED, ApiJson(keys::create(&cp, &caller, input).await?)))
}

#[utoipa::path(get, path = "/api/v1/keys", operation_id = "keys_list", tag = "keys",
    responses((status = 200, body = KeyList, description = "The team's keys, newest first, revoked ones included, with their last use."), ListErrors), security(("session" = [])))]
pub(super) async fn list(State(cp): State<ControlPlane>, caller: Caller) -> ApiResult<ApiJson<KeyList>> {
    Ok(ApiJson(KeyList { keys: keys::list(&cp, &caller).await? }))
}

#[utoipa::path(delete, path = "/api/v1/keys/{id}", operation_id = "keys_revoke", tag = "keys",
    params(("id" = Uuid, Path, description = "The key's id.")),
    responses((status = 204, description = "Revoked: its next request answers 401."), RevokeErrors), security(("session" = [])))]
pub(super) async fn revoke(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<StatusCode> {
    keys::revoke(&cp, &caller, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
