//! `/api/v1/auth`: sign up, log in, log out (this session or all of them), and who am I.

use crate::auth::{self, AuthMember, Credentials, SignedIn};
use crate::members::Member;
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
