//! `/api/v1/domains…`, `/api/v1/hosts…` and `/api/v1/admin/hosts…`: root domains proved by TXT
//! records, custom hosts pinned to a queue, and the operators' view of every member's hosts.

use super::path::ApiPath;
use crate::auth::AuthOperator;
use crate::domains::{self, Domain, NewDomain};
use crate::hosts::{self, AdminHost, Host, NewHost};
use crate::state::ControlPlane;
use crate::teams::Caller;
use aqs_core::{ApiJson, ApiQuery, ApiResult};
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct DomainBody {
    domain: Domain,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct DomainList {
    domains: Vec<Domain>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct HostBody {
    host: Host,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct HostList {
    hosts: Vec<Host>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct AdminHostBody {
    host: AdminHost,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct AdminHostList {
    hosts: Vec<AdminHost>,
}

aqs_core::errors!(CreateErrors: "invalid_request", "unauthorized", "team_suspended", "forbidden", "conflict", "unsupported_media_type", "payload_too_large", "service_unavailable");

aqs_core::errors!(ListErrors: "unauthorized", "team_suspended", "forbidden", "service_unavailable");

aqs_core::errors!(IdErrors: "unauthorized", "team_suspended", "forbidden", "not_found", "conflict", "service_unavailable");

aqs_core::errors!(CreateHostErrors: "invalid_request", "unauthorized", "team_suspended", "forbidden", "not_found", "conflict", "unsupported_media_type", "payload_too_large", "service_unavailable");

aqs_core::errors!(OperatorErrors: "not_found", "conflict", "service_unavailable");

aqs_core::errors!(OperatorListErrors: "invalid_request", "not_found", "service_unavailable");

#[utoipa::path(post, path = "/api/v1/domains", operation_id = "hosts_create_domain", tag = "hosts", request_body = NewDomain,
    responses((status = 201, body = DomainBody, description = "The domain, with the TXT record that proves it."), CreateErrors), security(("session" = [])))]
pub(super) async fn create_domain(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiJson(input): ApiJson<NewDomain>,
) -> ApiResult<(StatusCode, ApiJson<DomainBody>)> {
    let domain = domains::create(&cp, &caller, input).await?;
    Ok((StatusCode::CREATED, ApiJson(DomainBody { domain })))
}

#[utoipa::path(get, path = "/api/v1/domains", operation_id = "hosts_list_domains", tag = "hosts",
    responses((status = 200, body = DomainList, description = "The member's domains."), ListErrors), security(("session" = [])))]
pub(super) async fn list_domains(State(cp): State<ControlPlane>, caller: Caller) -> ApiResult<ApiJson<DomainList>> {
    Ok(ApiJson(DomainList { domains: domains::list(&cp, caller.team).await? }))
}

#[utoipa::path(get, path = "/api/v1/domains/{id}", operation_id = "hosts_get_domain", tag = "hosts", params(("id" = Uuid, Path, description = "The domain's id.")),
    responses((status = 200, body = DomainBody, description = "The domain."), IdErrors), security(("session" = [])))]
pub(super) async fn get_domain(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<ApiJson<DomainBody>> {
    Ok(ApiJson(DomainBody { domain: domains::get(&cp, caller.team, id).await? }))
}

#[utoipa::path(delete, path = "/api/v1/domains/{id}", operation_id = "hosts_delete_domain", tag = "hosts", params(("id" = Uuid, Path, description = "The domain's id.")),
    responses((status = 204, description = "Deleted."), IdErrors), security(("session" = [])))]
pub(super) async fn delete_domain(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<StatusCode> {
    domains::delete(&cp, &caller, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/v1/domains/{id}/verify", operation_id = "hosts_verify_domain", tag = "hosts", params(("id" = Uuid, Path, description = "The domain's id.")),
    responses((status = 200, body = DomainBody, description = "The domain after a check of its TXT record (409 while another member holds it verified)."), IdErrors), security(("session" = [])))]
pub(super) async fn verify_domain(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<ApiJson<DomainBody>> {
    Ok(ApiJson(DomainBody { domain: domains::verify(&cp, &caller, id).await? }))
}

#[utoipa::path(post, path = "/api/v1/hosts", operation_id = "hosts_create_host", tag = "hosts", request_body = NewHost,
    responses((status = 201, body = HostBody, description = "The host, with the CNAME record to create."), CreateHostErrors), security(("session" = [])))]
pub(super) async fn create_host(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiJson(input): ApiJson<NewHost>,
) -> ApiResult<(StatusCode, ApiJson<HostBody>)> {
    let host = hosts::create(&cp, &caller, input).await?;
    Ok((StatusCode::CREATED, ApiJson(HostBody { host })))
}

#[utoipa::path(get, path = "/api/v1/hosts", operation_id = "hosts_list_hosts", tag = "hosts",
    responses((status = 200, body = HostList, description = "The member's hosts."), ListErrors), security(("session" = [])))]
pub(super) async fn list_hosts(State(cp): State<ControlPlane>, caller: Caller) -> ApiResult<ApiJson<HostList>> {
    Ok(ApiJson(HostList { hosts: hosts::list(&cp, caller.team).await? }))
}

#[utoipa::path(get, path = "/api/v1/hosts/{id}", operation_id = "hosts_get_host", tag = "hosts", params(("id" = Uuid, Path, description = "The host's id.")),
    responses((status = 200, body = HostBody, description = "The host."), IdErrors), security(("session" = [])))]
pub(super) async fn get_host(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<ApiJson<HostBody>> {
    Ok(ApiJson(HostBody { host: hosts::get(&cp, caller.team, id).await? }))
}

#[utoipa::path(delete, path = "/api/v1/hosts/{id}", operation_id = "hosts_delete_host", tag = "hosts", params(("id" = Uuid, Path, description = "The host's id.")),
    responses((status = 204, description = "Deleted: no longer served."), IdErrors), security(("session" = [])))]
pub(super) async fn delete_host(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<StatusCode> {
    hosts::delete(&cp, &caller, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/v1/hosts/{id}/check", operation_id = "hosts_check_host", tag = "hosts", params(("id" = Uuid, Path, description = "The host's id.")),
    responses((status = 200, body = HostBody, description = "The host, checked again now."), IdErrors), security(("session" = [])))]
pub(super) async fn check_host(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<ApiJson<HostBody>> {
    Ok(ApiJson(HostBody { host: hosts::check(&cp, &caller, id).await? }))
}

/// `?status=` of the operators' host list: parsed by `ApiQuery` into this struct, which also
/// documents it.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct HostStatusQuery {
    /// Only hosts in this status: `setting_up`, `active` or `error` (empty: all).
    #[param(pattern = "^(setting_up|active|error)?$")]
    status: Option<String>,
}

/// `GET /api/v1/admin/hosts?status=…`.
#[utoipa::path(get, path = "/api/v1/admin/hosts", operation_id = "hosts_admin_list", tag = "admin", params(HostStatusQuery),
    responses((status = 200, body = AdminHostList, description = "Every member's hosts."), OperatorListErrors), security(("session" = [])))]
pub(super) async fn admin_list(
    State(cp): State<ControlPlane>,
    operator: AuthOperator,
    ApiQuery(query): ApiQuery<HostStatusQuery>,
) -> ApiResult<ApiJson<AdminHostList>> {
    let status = query.status.as_deref().filter(|s| !s.is_empty());
    Ok(ApiJson(AdminHostList { hosts: hosts::admin_list(&cp, &operator, status).await? }))
}

#[utoipa::path(post, path = "/api/v1/admin/hosts/{id}/check", operation_id = "hosts_admin_check", tag = "admin", params(("id" = Uuid, Path, description = "The host's id.")),
    responses((status = 200, body = AdminHostBody, description = "The host, checked again now."), OperatorErrors), security(("session" = [])))]
pub(super) async fn admin_check(
    State(cp): State<ControlPlane>,
    operator: AuthOperator,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<ApiJson<AdminHostBody>> {
    Ok(ApiJson(AdminHostBody { host: hosts::admin_check(&cp, &operator, id).await? }))
}
