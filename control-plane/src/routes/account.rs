//! `/api/v1/account`: the member's own account as a whole (deleting it).

use crate::account::{self, AccountDeletion};
use crate::auth::AuthMember;
use crate::state::ControlPlane;
use crate::teams::RequestOrigin;
use aqs_core::{ApiJson, ApiResult};
use axum::extract::State;
use axum::http::StatusCode;

aqs_core::errors!(AccountErrors: "invalid_request", "unauthorized", "not_found", "conflict", "unsupported_media_type", "payload_too_large", "service_unavailable");

/// `DELETE /api/v1/account {confirm_email}`: deletes the account with its queues (and their
/// messages), tokens, hosts, domains and sessions; 204. The member cannot log in afterwards.
#[utoipa::path(delete, path = "/api/v1/account", operation_id = "account_delete", tag = "account", request_body = AccountDeletion,
    responses((status = 204, description = "The account and everything it owned are gone."), AccountErrors), security(("session" = [])))]
pub(super) async fn delete(
    State(cp): State<ControlPlane>,
    AuthMember(member): AuthMember,
    origin: RequestOrigin,
    ApiJson(confirm): ApiJson<AccountDeletion>,
) -> ApiResult<StatusCode> {
    account::delete(&cp, &member, confirm, origin).await?;
    Ok(StatusCode::NO_CONTENT)
}
