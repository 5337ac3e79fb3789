//! `/api/v1/admin/…`: operator routes. `AuthOperator` answers 404 to everyone else.

use super::path::ApiPath;
use crate::admin::{self, CallbackUrl};
use crate::auth::AuthOperator;
use crate::members::Member;
use crate::state::ControlPlane;
use crate::teams::RequestOrigin;
use aqs_core::ApiQuery;
use aqs_core::{ApiJson, ApiResult};
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};

/// `?email=` of the operator's member lookup: parsed by `ApiQuery` into this struct, which also
/// documents it.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct EmailQuery {
    /// The member's email address.
    email: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct MemberBody {
    member: Member,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NewCallbackUrl {
    /// An http(s) URL prefix with a domain name as host.
    #[schema(format = Uri)]
    prefix: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct CallbackUrlBody {
    callback_url: CallbackUrl,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct CallbackUrlList {
    callback_urls: Vec<CallbackUrl>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct Removed {
    /// Queues whose push stopped because their handler URL is no longer authorised.
    push_stopped: Vec<String>,
}

aqs_core::errors!(FindErrors: "invalid_request", "not_found", "service_unavailable");

aqs_core::errors!(OperatorErrors: "not_found", "service_unavailable");

aqs_core::errors!(AddErrors: "invalid_request", "not_found", "conflict", "unsupported_media_type", "payload_too_large", "service_unavailable");

/// `GET /api/v1/admin/members?email=…`.
#[utoipa::path(get, path = "/api/v1/admin/members", operation_id = "admin_find_member", tag = "admin", params(EmailQuery),
    responses((status = 200, body = MemberBody, description = "The member."), FindErrors), security(("session" = [])))]
pub(super) async fn find_member(
    State(cp): State<ControlPlane>,
    operator: AuthOperator,
    ApiQuery(query): ApiQuery<EmailQuery>,
) -> ApiResult<ApiJson<MemberBody>> {
    Ok(ApiJson(MemberBody { member: admin::find_member(&cp, &operator, &query.email).await? }))
}

#[utoipa::path(get, path = "/api/v1/admin/members/{id}/callback-urls", operation_id = "admin_list", tag = "admin", params(("id" = String, Path, description = "The member's id.")),
    responses((status = 200, body = CallbackUrlList, description = "The prefixes authorised for the member."), OperatorErrors), security(("session" = [])))]
pub(super) async fn list(
    State(cp): State<ControlPlane>,
    operator: AuthOperator,
    ApiPath(member): ApiPath<String>,
) -> ApiResult<ApiJson<CallbackUrlList>> {
    Ok(ApiJson(CallbackUrlList { callback_urls: admin::list_callback_urls(&cp, &operator, &member).await? }))
}

#[utoipa::path(post, path = "/api/v1/admin/members/{id}/callback-urls", operation_id = "admin_add", tag = "admin", params(("id" = String, Path, description = "The member's id.")), request_body = NewCallbackUrl,
    responses((status = 201, body = CallbackUrlBody, description = "Authorised."), AddErrors), security(("session" = [])))]
pub(super) async fn add(
    State(cp): State<ControlPlane>,
    operator: AuthOperator,
    origin: RequestOrigin,
    ApiPath(member): ApiPath<String>,
    ApiJson(input): ApiJson<NewCallbackUrl>,
) -> ApiResult<(StatusCode, ApiJson<CallbackUrlBody>)> {
    let added = admin::add_callback_url(&cp, &operator, &origin, &member, &input.prefix).await?;
    Ok((StatusCode::CREATED, ApiJson(CallbackUrlBody { callback_url: added })))
}

#[utoipa::path(delete, path = "/api/v1/admin/members/{id}/callback-urls/{url_id}", operation_id = "admin_remove", tag = "admin", params(("id" = String, Path, description = "The member's id."), ("url_id" = String, Path, description = "The prefix's id.")),
    responses((status = 200, body = Removed, description = "Withdrawn; the queues whose push stopped."), OperatorErrors), security(("session" = [])))]
pub(super) async fn remove(
    State(cp): State<ControlPlane>,
    operator: AuthOperator,
    origin: RequestOrigin,
    ApiPath((member, id)): ApiPath<(String, String)>,
) -> ApiResult<ApiJson<Removed>> {
    Ok(ApiJson(Removed { push_stopped: admin::remove_callback_url(&cp, &operator, &origin, &member, &id).await? }))
}
