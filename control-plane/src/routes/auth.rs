//! `/api/v1/auth`: sign up, log in, log out (this session or all of them), who am I, change the
//! password, and the member's sessions.

use super::path::ApiPath;
use crate::auth::{self, AuthMember, Credentials, PasswordChange, SignedIn};
use crate::members::Member;
use crate::sessions::{Origin, Session};
use crate::state::ControlPlane;
use aqs_core::{ApiJson, ApiResult};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::StatusCode;

aqs_core::errors!(SignupErrors: "invalid_request", "conflict", "unsupported_media_type", "payload_too_large", "service_unavailable");

aqs_core::errors!(LoginErrors: "invalid_request", "unauthorized", "unsupported_media_type", "payload_too_large", "rate_limited", "service_unavailable");

aqs_core::errors!(SessionErrors: "unauthorized", "service_unavailable");

aqs_core::errors!(PasswordErrors: "invalid_request", "unauthorized", "unsupported_media_type", "payload_too_large", "service_unavailable");

aqs_core::errors!(EndSessionErrors: "unauthorized", "not_found", "service_unavailable");

#[utoipa::path(post, path = "/api/v1/auth/signup", operation_id = "auth_signup", tag = "auth", request_body = Credentials,
    responses((status = 201, body = SignedIn, description = "The new member and a 12 h session."), SignupErrors))]
pub(super) async fn signup(
    State(cp): State<ControlPlane>,
    origin: Origin,
    ApiJson(credentials): ApiJson<Credentials>,
) -> ApiResult<(StatusCode, ApiJson<SignedIn>)> {
    Ok((StatusCode::CREATED, ApiJson(auth::signup_from(&cp, credentials, origin).await?)))
}

#[utoipa::path(post, path = "/api/v1/auth/login", operation_id = "auth_login", tag = "auth", request_body = Credentials,
    responses((status = 200, body = SignedIn, description = "The member and a 12 h session."), LoginErrors))]
pub(super) async fn login(
    State(cp): State<ControlPlane>,
    origin: Origin,
    request: crate::teams::RequestOrigin,
    ApiJson(credentials): ApiJson<Credentials>,
) -> ApiResult<ApiJson<SignedIn>> {
    Ok(ApiJson(auth::login_requested(&cp, credentials, origin, request.request_id).await?))
}

#[derive(serde::Serialize, utoipa::ToSchema)]
pub(super) struct MemberBody {
    member: Member,
}

#[utoipa::path(get, path = "/api/v1/auth/me", operation_id = "auth_me", tag = "auth",
    responses((status = 200, body = MemberBody, description = "The member of this session."), SessionErrors), security(("session" = [])))]
pub(super) async fn me(AuthMember(member): AuthMember) -> ApiJson<MemberBody> {
    ApiJson(MemberBody { member })
}

/// `POST /api/v1/auth/logout`: ends the session that calls it; 204.
#[utoipa::path(post, path = "/api/v1/auth/logout", operation_id = "auth_logout", tag = "auth",
    responses((status = 204, description = "This session ended."), SessionErrors), security(("session" = [])))]
pub(super) async fn logout(State(cp): State<ControlPlane>, headers: HeaderMap) -> ApiResult<StatusCode> {
    auth::logout(&cp, auth::bearer(&headers)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(serde::Serialize, utoipa::ToSchema)]
pub(super) struct LoggedOutEverywhere {
    /// How many live sessions ended, the caller's included.
    sessions_ended: u64,
}

/// `POST /api/v1/auth/logout-all`: ends every session of the caller's member.
#[utoipa::path(post, path = "/api/v1/auth/logout-all", operation_id = "auth_logout_all", tag = "auth",
    responses((status = 200, body = LoggedOutEverywhere, description = "Every session of the member ended."), SessionErrors), security(("session" = [])))]
pub(super) async fn logout_all(
    State(cp): State<ControlPlane>,
    member: AuthMember,
) -> ApiResult<ApiJson<LoggedOutEverywhere>> {
    let sessions_ended = auth::logout_everywhere(&cp, member.id()).await?;
    Ok(ApiJson(LoggedOutEverywhere { sessions_ended }))
}

/// `POST /api/v1/auth/password`: ends every session of the member (this one too) and answers a
/// fresh session for the caller, as log-in does.
#[utoipa::path(post, path = "/api/v1/auth/password", operation_id = "auth_change_password", tag = "auth", request_body = PasswordChange,
    responses((status = 200, body = SignedIn, description = "Changed; every other session ended; a fresh session."), PasswordErrors), security(("session" = [])))]
pub(super) async fn change_password(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    origin: Origin,
    ApiJson(change): ApiJson<PasswordChange>,
) -> ApiResult<ApiJson<SignedIn>> {
    Ok(ApiJson(auth::change_password(&cp, member.id(), change, origin).await?))
}

#[derive(serde::Serialize, utoipa::ToSchema)]
pub(super) struct SessionList {
    sessions: Vec<Session>,
}

/// `GET /api/v1/auth/sessions`: the member's live sessions, newest first, the caller's marked.
#[utoipa::path(get, path = "/api/v1/auth/sessions", operation_id = "auth_sessions", tag = "auth",
    responses((status = 200, body = SessionList, description = "The live sessions, newest first."), SessionErrors), security(("session" = [])))]
pub(super) async fn sessions(State(cp): State<ControlPlane>, headers: HeaderMap) -> ApiResult<ApiJson<SessionList>> {
    Ok(ApiJson(SessionList { sessions: auth::sessions(&cp, auth::bearer(&headers)?).await? }))
}

/// `DELETE /api/v1/auth/sessions/{id}`: ends one of the member's sessions; 204.
#[utoipa::path(delete, path = "/api/v1/auth/sessions/{id}", operation_id = "auth_end_session", tag = "auth", params(("id" = Uuid, Path, description = "The session's id.")),
    responses((status = 204, description = "Ended."), EndSessionErrors), security(("session" = [])))]
pub(super) async fn end_session(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath(id): ApiPath<uuid::Uuid>,
) -> ApiResult<StatusCode> {
    auth::end_session(&cp, member.id(), id).await?;
    Ok(StatusCode::NO_CONTENT)
}
