//! `/api/v1/auth`: sign up, log in, log out (this session or all of them), who am I, change the
//! password, and the member's sessions.

use super::path::ApiPath;
use crate::auth::{self, AuthMember, Credentials, PasswordChange, SignedIn};
use crate::members::Member;
use crate::sessions::Session;
use crate::state::ControlPlane;
use aqs_core::{ApiJson, ApiResult};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::StatusCode;

pub(super) async fn signup(
    State(cp): State<ControlPlane>,
    ApiJson(credentials): ApiJson<Credentials>,
) -> ApiResult<(StatusCode, ApiJson<SignedIn>)> {
    Ok((StatusCode::CREATED, ApiJson(auth::signup(&cp, credentials).await?)))
}

pub(super) async fn login(
    State(cp): State<ControlPlane>,
    ApiJson(credentials): ApiJson<Credentials>,
) -> ApiResult<ApiJson<SignedIn>> {
    Ok(ApiJson(auth::login(&cp, credentials).await?))
}

#[derive(serde::Serialize)]
pub(super) struct MemberBody {
    member: Member,
}

pub(super) async fn me(AuthMember(member): AuthMember) -> ApiJson<MemberBody> {
    ApiJson(MemberBody { member })
}

/// `POST /api/v1/auth/logout`: ends the session that calls it; 204.
pub(super) async fn logout(State(cp): State<ControlPlane>, headers: HeaderMap) -> ApiResult<StatusCode> {
    auth::logout(&cp, auth::bearer(&headers)?).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(serde::Serialize)]
pub(super) struct LoggedOutEverywhere {
    /// How many live sessions ended, the caller's included.
    sessions_ended: u64,
}

/// `POST /api/v1/auth/logout-all`: ends every session of the caller's member.
pub(super) async fn logout_all(
    State(cp): State<ControlPlane>,
    member: AuthMember,
) -> ApiResult<ApiJson<LoggedOutEverywhere>> {
    let sessions_ended = auth::logout_everywhere(&cp, member.id()).await?;
    Ok(ApiJson(LoggedOutEverywhere { sessions_ended }))
}

/// `POST /api/v1/auth/password`: ends every session of the member (this one too) and answers a
/// fresh session for the caller, as log-in does.
pub(super) async fn change_password(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiJson(change): ApiJson<PasswordChange>,
) -> ApiResult<ApiJson<SignedIn>> {
    Ok(ApiJson(auth::change_password(&cp, member.id(), change).await?))
}

#[derive(serde::Serialize)]
pub(super) struct SessionList {
    sessions: Vec<Session>,
}

/// `GET /api/v1/auth/sessions`: the member's live sessions, newest first, the caller's marked.
pub(super) async fn sessions(State(cp): State<ControlPlane>, headers: HeaderMap) -> ApiResult<ApiJson<SessionList>> {
    Ok(ApiJson(SessionList { sessions: auth::sessions(&cp, auth::bearer(&headers)?).await? }))
}

/// `DELETE /api/v1/auth/sessions/{id}`: ends one of the member's sessions; 204.
pub(super) async fn end_session(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath(id): ApiPath<uuid::Uuid>,
) -> ApiResult<StatusCode> {
    auth::end_session(&cp, member.id(), id).await?;
    Ok(StatusCode::NO_CONTENT)
}
