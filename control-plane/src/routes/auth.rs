//! `/api/v1/auth`: sign up, log in, and who am I.

use crate::auth::{self, AuthMember, Credentials, SignedIn};
use crate::members::Member;
use crate::state::ControlPlane;
use aqs_core::{ApiJson, ApiResult};
use axum::extract::State;
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
