//! `/api/v1/domains…`, `/api/v1/hosts…` and `/api/v1/admin/hosts…`: root domains proved by TXT
//! records, custom hosts pinned to a queue, and the operators' view of every member's hosts.

use super::path::ApiPath;
use crate::auth::{AuthMember, AuthOperator};
use crate::domains::{self, Domain, NewDomain};
use crate::hosts::{self, AdminHost, Host, NewHost};
use crate::state::ControlPlane;
use aqs_core::{ApiJson, ApiResult};
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use serde::Serialize;
use uuid::Uuid;

#[derive(Serialize)]
pub(super) struct DomainBody {
    domain: Domain,
}

#[derive(Serialize)]
pub(super) struct DomainList {
    domains: Vec<Domain>,
}

#[derive(Serialize)]
pub(super) struct HostBody {
    host: Host,
}

#[derive(Serialize)]
pub(super) struct HostList {
    hosts: Vec<Host>,
}

#[derive(Serialize)]
pub(super) struct AdminHostBody {
    host: AdminHost,
}

#[derive(Serialize)]
pub(super) struct AdminHostList {
    hosts: Vec<AdminHost>,
}

pub(super) async fn create_domain(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiJson(input): ApiJson<NewDomain>,
) -> ApiResult<(StatusCode, ApiJson<DomainBody>)> {
    let domain = domains::create(&cp, member.id(), input).await?;
    Ok((StatusCode::CREATED, ApiJson(DomainBody { domain })))
}

pub(super) async fn list_domains(State(cp): State<ControlPlane>, member: AuthMember) -> ApiResult<ApiJson<DomainList>> {
    Ok(ApiJson(DomainList { domains: domains::list(&cp, member.id()).await? }))
}

pub(super) async fn get_domain(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<ApiJson<DomainBody>> {
    Ok(ApiJson(DomainBody { domain: domains::get(&cp, member.id(), id).await? }))
}

pub(super) async fn delete_domain(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<StatusCode> {
    domains::delete(&cp, member.id(), id).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub(super) async fn verify_domain(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<ApiJson<DomainBody>> {
    Ok(ApiJson(DomainBody { domain: domains::verify(&cp, member.id(), id).await? }))
}

pub(super) async fn create_host(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiJson(input): ApiJson<NewHost>,
) -> ApiResult<(StatusCode, ApiJson<HostBody>)> {
    let host = hosts::create(&cp, member.id(), input).await?;
    Ok((StatusCode::CREATED, ApiJson(HostBody { host })))
}

pub(super) async fn list_hosts(State(cp): State<ControlPlane>, member: AuthMember) -> ApiResult<ApiJson<HostList>> {
    Ok(ApiJson(HostList { hosts: hosts::list(&cp, member.id()).await? }))
}

pub(super) async fn get_host(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<ApiJson<HostBody>> {
    Ok(ApiJson(HostBody { host: hosts::get(&cp, member.id(), id).await? }))
}

pub(super) async fn delete_host(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<StatusCode> {
    hosts::delete(&cp, member.id(), id).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub(super) async fn check_host(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<ApiJson<HostBody>> {
    Ok(ApiJson(HostBody { host: hosts::check(&cp, member.id(), id).await? }))
}

/// `GET /api/v1/admin/hosts?status=…`.
pub(super) async fn admin_list(
    State(cp): State<ControlPlane>,
    operator: AuthOperator,
    RawQuery(query): RawQuery,
) -> ApiResult<ApiJson<AdminHostList>> {
    let status = url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .find(|(key, _)| key == "status")
        .map(|(_, value)| value.into_owned())
        .filter(|s| !s.is_empty());
    Ok(ApiJson(AdminHostList { hosts: hosts::admin_list(&cp, &operator, status.as_deref()).await? }))
}

pub(super) async fn admin_check(
    State(cp): State<ControlPlane>,
    operator: AuthOperator,
    ApiPath(id): ApiPath<Uuid>,
) -> ApiResult<ApiJson<AdminHostBody>> {
    Ok(ApiJson(AdminHostBody { host: hosts::admin_check(&cp, &operator, id).await? }))
}
