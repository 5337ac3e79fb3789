//! `/api/v1/queues/{slug}/tokens`: a queue's tokens.

use super::path::ApiPath;
use crate::slug::Slug;
use crate::state::ControlPlane;
use crate::teams::Caller;
use crate::tokens::{self, CreatedToken, NewToken, Token};
use aqs_core::{ApiJson, ApiResult};
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct Minted {
    token: CreatedToken,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct TokenList {
    tokens: Vec<Token>,
}

aqs_core::errors!(MintErrors: "invalid_request", "unauthorized", "team_suspended", "forbidden", "not_found", "conflict", "unsupported_media_type", "payload_too_large", "service_unavailable");

aqs_core::errors!(SlugErrors: "unauthorized", "team_suspended", "forbidden", "not_found", "conflict", "service_unavailable");

#[utoipa::path(post, path = "/api/v1/queues/{slug}/tokens", operation_id = "tokens_mint", tag = "tokens", params(("slug" = String, Path, description = "The queue's slug.")), request_body = NewToken,
    responses((status = 201, body = Minted, description = "The token with its secret, shown this once."), MintErrors), security(("session" = [])))]
pub(super) async fn mint(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiPath(slug): ApiPath<Slug>,
    ApiJson(input): ApiJson<NewToken>,
) -> ApiResult<(StatusCode, ApiJson<Minted>)> {
    let token = tokens::mint(&cp, &caller, &slug, input).await?;
    Ok((StatusCode::CREATED, ApiJson(Minted { token })))
}

#[utoipa::path(get, path = "/api/v1/queues/{slug}/tokens", operation_id = "tokens_list", tag = "tokens", params(("slug" = String, Path, description = "The queue's slug.")),
    responses((status = 200, body = TokenList, description = "The queue's tokens, without secrets."), SlugErrors), security(("session" = [])))]
pub(super) async fn list(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiPath(slug): ApiPath<Slug>,
) -> ApiResult<ApiJson<TokenList>> {
    Ok(ApiJson(TokenList { tokens: tokens::list(&cp, caller.team, &slug).await? }))
}

#[utoipa::path(delete, path = "/api/v1/queues/{slug}/tokens/{id}", operation_id = "tokens_revoke", tag = "tokens", params(("slug" = String, Path, description = "The queue's slug."), ("id" = String, Path, description = "The token's id.")),
    responses((status = 204, description = "Revoked on every replica within a second."), SlugErrors), security(("session" = [])))]
pub(super) async fn revoke(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiPath((slug, id)): ApiPath<(Slug, String)>,
) -> ApiResult<StatusCode> {
    tokens::revoke(&cp, &caller, &slug, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
