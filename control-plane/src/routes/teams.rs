//! `/api/v1/teams` and `/api/v1/invites`: a member's teams, the members and roles of one team, and
//! invite links.
//!
//! These routes are about people, so they take a member's session only: a management key gets 403
//! (it acts on queues and settings for automation, and must not invite or promote anyone). The
//! team of `/teams/{id}/…` is the one in the path, not the `AQS-Team` header; a team the member is
//! not in is 404.

use super::path::ApiPath;
use crate::auth::{self, AuthMember};
use crate::keys;
use crate::members::Member;
use crate::state::ControlPlane;
use crate::teams::manage::{self, TeamMember, TeamSummary, parse_role};
use crate::teams::{Caller, CreatedInvite, Invite, InvitePreview, NewInvite, RequestOrigin, TeamRole, invites};
use aqs_core::{ApiError, ApiJson, ApiResult};
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A member with a session, as these routes take: a management key is 403, anything else 401.
pub(super) struct PersonMember(Member);

impl FromRequestParts<ControlPlane> for PersonMember {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, cp: &ControlPlane) -> Result<Self, Self::Rejection> {
        if keys::is_key(auth::bearer(&parts.headers)?) {
            return Err(ApiError::Forbidden(
                "management keys act on queues and settings, not on teams and their members: use a member's session"
                    .into(),
            ));
        }
        let AuthMember(member) = AuthMember::from_request_parts(parts, cp).await?;
        Ok(Self(member))
    }
}

/// The member acting on the team `{id}` of the path: 404 when they are not in it, 403
/// `team_suspended` for a change to a suspended team.
async fn team_caller(
    cp: &ControlPlane,
    member: &Member,
    team: Uuid,
    method: &Method,
    origin: RequestOrigin,
) -> ApiResult<Caller> {
    let writes = !matches!(*method, Method::GET | Method::HEAD);
    Caller::of_member(cp, member, Some(team), writes, origin).await
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct TeamList {
    teams: Vec<TeamSummary>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct TeamBody {
    team: TeamSummary,
}

/// `POST /api/v1/teams`.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NewTeam {
    /// 1 to 64 characters.
    name: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct MemberList {
    members: Vec<TeamMember>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct TeamMemberBody {
    member: TeamMember,
}

/// `PATCH /api/v1/teams/{id}/members/{member_id}`.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RoleChange {
    #[schema(value_type = TeamRole)]
    role: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct InviteList {
    invites: Vec<Invite>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct PreviewBody {
    invite: InvitePreview,
}

aqs_core::errors!(ListErrors: "unauthorized", "team_suspended", "forbidden", "service_unavailable");
aqs_core::errors!(CreateErrors: "invalid_request", "unauthorized", "team_suspended", "forbidden", "unsupported_media_type", "payload_too_large", "service_unavailable");
aqs_core::errors!(ReadErrors: "unauthorized", "team_suspended", "forbidden", "not_found", "service_unavailable");
aqs_core::errors!(ChangeErrors: "invalid_request", "unauthorized", "forbidden", "not_found", "conflict", "team_suspended", "unsupported_media_type", "payload_too_large", "service_unavailable");
aqs_core::errors!(RemoveErrors: "unauthorized", "forbidden", "not_found", "conflict", "team_suspended", "service_unavailable");
aqs_core::errors!(PreviewErrors: "not_found", "service_unavailable");
aqs_core::errors!(AcceptErrors: "unauthorized", "team_suspended", "forbidden", "not_found", "conflict", "service_unavailable");

#[utoipa::path(get, path = "/api/v1/teams", operation_id = "teams_list", tag = "teams",
    responses((status = 200, body = TeamList, description = "The member's teams with their role in each, the personal team first."), ListErrors), security(("session" = [])))]
pub(super) async fn list(
    State(cp): State<ControlPlane>,
    PersonMember(member): PersonMember,
) -> ApiResult<ApiJson<TeamList>> {
    Ok(ApiJson(TeamList { teams: manage::list(&cp, member.id).await? }))
}

#[utoipa::path(post, path = "/api/v1/teams", operation_id = "teams_create", tag = "teams", request_body = NewTeam,
    responses((status = 201, body = TeamBody, description = "The new team, with the member its owner."), CreateErrors), security(("session" = [])))]
pub(super) async fn create(
    State(cp): State<ControlPlane>,
    PersonMember(member): PersonMember,
    origin: RequestOrigin,
    ApiJson(input): ApiJson<NewTeam>,
) -> ApiResult<(StatusCode, ApiJson<TeamBody>)> {
    let team = manage::create(&cp, &member, origin, input.name).await?;
    Ok((StatusCode::CREATED, ApiJson(TeamBody { team })))
}

#[utoipa::path(delete, path = "/api/v1/teams/{id}", operation_id = "teams_delete", tag = "teams",
    params(("id" = Uuid, Path, description = "The team's id.")),
    responses((status = 204, description = "Deleted: its keys revoked, its invites withdrawn, its members removed."), RemoveErrors), security(("session" = [])))]
pub(super) async fn delete(
    State(cp): State<ControlPlane>,
    PersonMember(member): PersonMember,
    origin: RequestOrigin,
    method: Method,
    ApiPath(team): ApiPath<Uuid>,
) -> ApiResult<StatusCode> {
    let caller = team_caller(&cp, &member, team, &method, origin).await?;
    manage::delete_team(&cp, &caller).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/api/v1/teams/{id}/members", operation_id = "teams_members", tag = "teams",
    params(("id" = Uuid, Path, description = "The team's id.")),
    responses((status = 200, body = MemberList, description = "The team's members, owners first."), ReadErrors), security(("session" = [])))]
pub(super) async fn members(
    State(cp): State<ControlPlane>,
    PersonMember(member): PersonMember,
    origin: RequestOrigin,
    method: Method,
    ApiPath(team): ApiPath<Uuid>,
) -> ApiResult<ApiJson<MemberList>> {
    let caller = team_caller(&cp, &member, team, &method, origin).await?;
    Ok(ApiJson(MemberList { members: manage::members(&cp, &caller).await? }))
}

#[utoipa::path(patch, path = "/api/v1/teams/{id}/members/{member_id}", operation_id = "teams_change_role", tag = "teams",
    params(("id" = Uuid, Path, description = "The team's id."), ("member_id" = Uuid, Path, description = "The member's id.")),
    request_body = RoleChange,
    responses((status = 200, body = TeamMemberBody, description = "The member with the new role (owners only; the last owner stays one: 409)."), ChangeErrors), security(("session" = [])))]
pub(super) async fn change_role(
    State(cp): State<ControlPlane>,
    PersonMember(member): PersonMember,
    origin: RequestOrigin,
    method: Method,
    ApiPath((team, member_id)): ApiPath<(Uuid, Uuid)>,
    ApiJson(input): ApiJson<RoleChange>,
) -> ApiResult<ApiJson<TeamMemberBody>> {
    let caller = team_caller(&cp, &member, team, &method, origin).await?;
    let role = parse_role("role", &input.role)?;
    Ok(ApiJson(TeamMemberBody { member: manage::change_role(&cp, &caller, member_id, role).await? }))
}

#[utoipa::path(delete, path = "/api/v1/teams/{id}/members/{member_id}", operation_id = "teams_remove_member", tag = "teams",
    params(("id" = Uuid, Path, description = "The team's id."), ("member_id" = Uuid, Path, description = "The member's id; your own to leave.")),
    responses((status = 204, description = "Removed (owners), or left (your own id). The last owner cannot leave: 409."), RemoveErrors), security(("session" = [])))]
pub(super) async fn remove_member(
    State(cp): State<ControlPlane>,
    PersonMember(member): PersonMember,
    origin: RequestOrigin,
    method: Method,
    ApiPath((team, member_id)): ApiPath<(Uuid, Uuid)>,
) -> ApiResult<StatusCode> {
    let caller = team_caller(&cp, &member, team, &method, origin).await?;
    manage::remove(&cp, &caller, member_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/v1/teams/{id}/invites", operation_id = "teams_invite", tag = "teams",
    params(("id" = Uuid, Path, description = "The team's id.")), request_body = NewInvite,
    responses((status = 201, body = CreatedInvite, description = "The invite and its link, `<public url>/invites/<secret>`: shown this once, valid 7 days, single use."), ChangeErrors), security(("session" = [])))]
pub(super) async fn invite(
    State(cp): State<ControlPlane>,
    PersonMember(member): PersonMember,
    origin: RequestOrigin,
    method: Method,
    ApiPath(team): ApiPath<Uuid>,
    ApiJson(input): ApiJson<NewInvite>,
) -> ApiResult<(StatusCode, ApiJson<CreatedInvite>)> {
    let caller = team_caller(&cp, &member, team, &method, origin).await?;
    Ok((StatusCode::CREATED, ApiJson(invites::create(&cp, &caller, input).await?)))
}

#[utoipa::path(get, path = "/api/v1/teams/{id}/invites", operation_id = "teams_invites", tag = "teams",
    params(("id" = Uuid, Path, description = "The team's id.")),
    responses((status = 200, body = InviteList, description = "The team's pending invites, newest first (owners)."), ReadErrors), security(("session" = [])))]
pub(super) async fn pending_invites(
    State(cp): State<ControlPlane>,
    PersonMember(member): PersonMember,
    origin: RequestOrigin,
    method: Method,
    ApiPath(team): ApiPath<Uuid>,
) -> ApiResult<ApiJson<InviteList>> {
    let caller = team_caller(&cp, &member, team, &method, origin).await?;
    Ok(ApiJson(InviteList { invites: invites::pending(&cp, &caller).await? }))
}

#[utoipa::path(delete, path = "/api/v1/teams/{id}/invites/{invite_id}", operation_id = "teams_revoke_invite", tag = "teams",
    params(("id" = Uuid, Path, description = "The team's id."), ("invite_id" = Uuid, Path, description = "The invite's id.")),
    responses((status = 204, description = "Withdrawn: its link answers 404."), RemoveErrors), security(("session" = [])))]
pub(super) async fn revoke_invite(
    State(cp): State<ControlPlane>,
    PersonMember(member): PersonMember,
    origin: RequestOrigin,
    method: Method,
    ApiPath((team, invite)): ApiPath<(Uuid, Uuid)>,
) -> ApiResult<StatusCode> {
    let caller = team_caller(&cp, &member, team, &method, origin).await?;
    invites::revoke(&cp, &caller, invite).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/api/v1/invites/{secret}", operation_id = "invites_preview", tag = "teams",
    params(("secret" = String, Path, description = "The secret of the invite link.")),
    responses((status = 200, body = PreviewBody, description = "The team and role the link offers; no session needed."), PreviewErrors))]
pub(super) async fn preview(
    State(cp): State<ControlPlane>,
    ApiPath(secret): ApiPath<String>,
) -> ApiResult<ApiJson<PreviewBody>> {
    Ok(ApiJson(PreviewBody { invite: invites::preview(&cp, &secret).await? }))
}

#[utoipa::path(post, path = "/api/v1/invites/{secret}/accept", operation_id = "invites_accept", tag = "teams",
    params(("secret" = String, Path, description = "The secret of the invite link.")),
    responses((status = 200, body = TeamBody, description = "Joined: the team with the role the invite gave. Any signed-in member holding the link may accept it, once."), AcceptErrors), security(("session" = [])))]
pub(super) async fn accept(
    State(cp): State<ControlPlane>,
    PersonMember(member): PersonMember,
    origin: RequestOrigin,
    ApiPath(secret): ApiPath<String>,
) -> ApiResult<ApiJson<TeamBody>> {
    Ok(ApiJson(TeamBody { team: invites::accept(&cp, &member, origin, &secret).await? }))
}
