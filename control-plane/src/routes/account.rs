//! `/api/v1/account`: the member's own account as a whole (deleting it).

use crate::account::{self, AccountDeletion};
use crate::auth::AuthMember;
use crate::state::ControlPlane;
use aqs_core::{ApiJson, ApiResult};
use axum::extract::State;
use axum::http::StatusCode;

/// `DELETE /api/v1/account {confirm_email}`: deletes the account with its queues (and their
/// messages), tokens, hosts, domains and sessions; 204. The member cannot log in afterwards.
pub(super) async fn delete(
    State(cp): State<ControlPlane>,
    AuthMember(member): AuthMember,
    ApiJson(confirm): ApiJson<AccountDeletion>,
) -> ApiResult<StatusCode> {
    account::delete(&cp, &member, confirm).await?;
    Ok(StatusCode::NO_CONTENT)
}
