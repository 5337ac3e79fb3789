//! `/api/v1/admin/teams…`: operators find teams, suspend and unsuspend them, and change their
//! limits (`teams::admin`). `AuthOperator` answers 404 to everyone else.

use super::path::ApiPath;
use crate::auth::AuthOperator;
use crate::state::ControlPlane;
use crate::teams::RequestOrigin;
use crate::teams::admin::{self, AdminTeam, LimitsChange, TeamDetail};
use aqs_core::{ApiJson, ApiQuery, ApiResult};
use axum::extract::State;
use serde::{Deserialize, Serialize};

/// `?email=`: the teams of the member with this email; without it, the newest teams.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct TeamQuery {
    /// A member's email address (any letter case).
    email: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct AdminTeamList {
    teams: Vec<AdminTeam>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct AdminTeamBody {
    team: AdminTeam,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct TeamDetailBody {
    team: TeamDetail,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Suspension {
    /// What the team's members are told, 1 to 500 characters without control characters.
    #[schema(min_length = 1, max_length = 500)]
    reason: String,
}

aqs_core::errors!(FindErrors: "invalid_request", "not_found", "service_unavailable");

aqs_core::errors!(OperatorErrors: "not_found", "service_unavailable");

aqs_core::errors!(SuspendErrors: "invalid_request", "not_found", "conflict", "unsupported_media_type", "payload_too_large", "service_unavailable");

aqs_core::errors!(UnsuspendErrors: "not_found", "conflict", "service_unavailable");

aqs_core::errors!(LimitsErrors: "invalid_request", "not_found", "unsupported_media_type", "payload_too_large", "service_unavailable");

#[utoipa::path(get, path = "/api/v1/admin/teams", operation_id = "admin_find_teams", tag = "admin", params(TeamQuery),
    responses((status = 200, body = AdminTeamList, description = "The member's teams, or the 100 newest."), FindErrors), security(("session" = [])))]
pub(super) async fn find(
    State(cp): State<ControlPlane>,
    operator: AuthOperator,
    ApiQuery(query): ApiQuery<TeamQuery>,
) -> ApiResult<ApiJson<AdminTeamList>> {
    Ok(ApiJson(AdminTeamList { teams: admin::find(&cp, &operator, query.email.as_deref()).await? }))
}

#[utoipa::path(get, path = "/api/v1/admin/teams/{id}", operation_id = "admin_get_team", tag = "admin", params(("id" = String, Path, description = "The team's id.")),
    responses((status = 200, body = TeamDetailBody, description = "The team and its members."), OperatorErrors), security(("session" = [])))]
pub(super) async fn get(
    State(cp): State<ControlPlane>,
    operator: AuthOperator,
    ApiPath(team): ApiPath<String>,
) -> ApiResult<ApiJson<TeamDetailBody>> {
    Ok(ApiJson(TeamDetailBody { team: admin::get(&cp, &operator, &team).await? }))
}

#[utoipa::path(post, path = "/api/v1/admin/teams/{id}/suspend", operation_id = "admin_suspend_team", tag = "admin", params(("id" = String, Path, description = "The team's id.")), request_body = Suspension,
    responses((status = 200, body = AdminTeamBody, description = "Suspended: its tokens and keys answer 403 `team_suspended`, its members read only, its push deliveries stop."), SuspendErrors), security(("session" = [])))]
pub(super) async fn suspend(
    State(cp): State<ControlPlane>,
    operator: AuthOperator,
    origin: RequestOrigin,
    ApiPath(team): ApiPath<String>,
    ApiJson(input): ApiJson<Suspension>,
) -> ApiResult<ApiJson<AdminTeamBody>> {
    Ok(ApiJson(AdminTeamBody { team: admin::suspend(&cp, &operator, &origin, &team, &input.reason).await? }))
}

#[utoipa::path(post, path = "/api/v1/admin/teams/{id}/unsuspend", operation_id = "admin_unsuspend_team", tag = "admin", params(("id" = String, Path, description = "The team's id.")),
    responses((status = 200, body = AdminTeamBody, description = "No longer suspended."), UnsuspendErrors), security(("session" = [])))]
pub(super) async fn unsuspend(
    State(cp): State<ControlPlane>,
    operator: AuthOperator,
    origin: RequestOrigin,
    ApiPath(team): ApiPath<String>,
) -> ApiResult<ApiJson<AdminTeamBody>> {
    Ok(ApiJson(AdminTeamBody { team: admin::unsuspend(&cp, &operator, &origin, &team).await? }))
}

#[utoipa::path(patch, path = "/api/v1/admin/teams/{id}/limits", operation_id = "admin_team_limits", tag = "admin", params(("id" = String, Path, description = "The team's id.")), request_body = LimitsChange,
    responses((status = 200, body = AdminTeamBody, description = "The team with its new limits."), LimitsErrors), security(("session" = [])))]
pub(super) async fn limits(
    State(cp): State<ControlPlane>,
    operator: AuthOperator,
    origin: RequestOrigin,
    ApiPath(team): ApiPath<String>,
    ApiJson(change): ApiJson<LimitsChange>,
) -> ApiResult<ApiJson<AdminTeamBody>> {
    Ok(ApiJson(AdminTeamBody { team: admin::set_limits(&cp, &operator, &origin, &team, change).await? }))
}
