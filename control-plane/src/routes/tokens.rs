//! `/api/v1/queues/{slug}/tokens`: a queue's tokens.

use super::path::ApiPath;
use crate::auth::AuthMember;
use crate::slug::Slug;
use crate::state::ControlPlane;
use crate::tokens::{self, CreatedToken, NewToken, Token};
use aqs_core::{ApiJson, ApiResult};
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;

#[derive(Serialize)]
pub(super) struct Minted {
    token: CreatedToken,
}

#[derive(Serialize)]
pub(super) struct TokenList {
    tokens: Vec<Token>,
}

pub(super) async fn mint(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath(slug): ApiPath<Slug>,
    ApiJson(input): ApiJson<NewToken>,
) -> ApiResult<(StatusCode, ApiJson<Minted>)> {
    let token = tokens::mint(&cp, member.id(), &slug, input).await?;
    Ok((StatusCode::CREATED, ApiJson(Minted { token })))
}

pub(super) async fn list(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath(slug): ApiPath<Slug>,
) -> ApiResult<ApiJson<TokenList>> {
    Ok(ApiJson(TokenList { tokens: tokens::list(&cp, member.id(), &slug).await? }))
}

pub(super) async fn revoke(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiPath((slug, id)): ApiPath<(Slug, String)>,
) -> ApiResult<StatusCode> {
    tokens::revoke(&cp, member.id(), &slug, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
