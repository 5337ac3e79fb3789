//! `/api/v1/billing…` and `/api/v1/admin/billing`: the member's billing, payment-method setup,
//! the portal, the budget, Stripe's webhook, and the operators' list.

use crate::auth::AuthOperator;
use crate::billing::account::{self, Budget, BudgetInput, Overview};
use crate::billing::admin::{self, MemberBilling};
use crate::billing::webhook::{self, Received};
use crate::state::ControlPlane;
use crate::teams::Caller;
use aqs_core::{ApiJson, ApiQuery, ApiResult};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use serde::{Deserialize, Serialize};

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct BillingBody {
    billing: Overview,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct UrlBody {
    url: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct BudgetBody {
    budget: Budget,
}

#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct MembersBody {
    members: Vec<MemberBilling>,
}

aqs_core::errors!(BillingErrors: "unauthorized", "team_suspended", "forbidden", "conflict", "service_unavailable");

aqs_core::errors!(BudgetErrors: "invalid_request", "unauthorized", "team_suspended", "forbidden", "conflict", "unsupported_media_type", "payload_too_large", "service_unavailable");

aqs_core::errors!(WebhookErrors: "invalid_request", "conflict", "payload_too_large", "service_unavailable");

aqs_core::errors!(OperatorErrors: "invalid_request", "not_found", "service_unavailable");

#[utoipa::path(get, path = "/api/v1/billing", operation_id = "billing_get", tag = "billing",
    responses((status = 200, body = BillingBody, description = "Payment method, add-ons, usage and budget."), BillingErrors), security(("session" = [])))]
pub(super) async fn get(State(cp): State<ControlPlane>, caller: Caller) -> ApiResult<ApiJson<BillingBody>> {
    Ok(ApiJson(BillingBody { billing: account::overview(&cp, caller.team).await? }))
}

#[utoipa::path(post, path = "/api/v1/billing/setup", operation_id = "billing_setup", tag = "billing",
    responses((status = 200, body = UrlBody, description = "Where to add a payment method."), BillingErrors), security(("session" = [])))]
pub(super) async fn setup(State(cp): State<ControlPlane>, caller: Caller) -> ApiResult<ApiJson<UrlBody>> {
    Ok(ApiJson(UrlBody { url: account::setup_url(&cp, caller.team).await? }))
}

#[utoipa::path(post, path = "/api/v1/billing/portal", operation_id = "billing_portal", tag = "billing",
    responses((status = 200, body = UrlBody, description = "The payment provider's portal."), BillingErrors), security(("session" = [])))]
pub(super) async fn portal(State(cp): State<ControlPlane>, caller: Caller) -> ApiResult<ApiJson<UrlBody>> {
    Ok(ApiJson(UrlBody { url: account::portal_url(&cp, caller.team).await? }))
}

#[utoipa::path(put, path = "/api/v1/billing/budget", operation_id = "billing_budget", tag = "billing", request_body = BudgetInput,
    responses((status = 200, body = BudgetBody, description = "The budget as set."), BudgetErrors), security(("session" = [])))]
pub(super) async fn budget(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiJson(input): ApiJson<BudgetInput>,
) -> ApiResult<ApiJson<BudgetBody>> {
    Ok(ApiJson(BudgetBody { budget: account::set_budget(&cp, &caller, input).await? }))
}

#[utoipa::path(post, path = "/api/v1/billing/webhook", operation_id = "billing_webhook", tag = "billing", params(("stripe-signature" = Option<String>, Header, description = "The payment provider's signature of the body.")), request_body(content = serde_json::Value, description = "A payment-provider event."),
    responses((status = 200, body = Received, description = "Taken: not to be sent again."), WebhookErrors))]
pub(super) async fn webhook(
    State(cp): State<ControlPlane>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<ApiJson<Received>> {
    let signature = headers.get("stripe-signature").and_then(|v| v.to_str().ok());
    Ok(ApiJson(webhook::receive(&cp, signature, &body).await?))
}

/// `?status=` of the operators' billing list: parsed by `ApiQuery` into this struct, which also
/// documents it.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct SubscriptionStatusQuery {
    /// Only members whose subscription is in this status (empty: all).
    status: Option<String>,
}

/// `GET /api/v1/admin/billing?status=past_due`.
#[utoipa::path(get, path = "/api/v1/admin/billing", operation_id = "billing_admin_list", tag = "admin", params(SubscriptionStatusQuery),
    responses((status = 200, body = MembersBody, description = "Every member's billing."), OperatorErrors), security(("session" = [])))]
pub(super) async fn admin_list(
    State(cp): State<ControlPlane>,
    operator: AuthOperator,
    ApiQuery(query): ApiQuery<SubscriptionStatusQuery>,
) -> ApiResult<ApiJson<MembersBody>> {
    let status = query.status.as_deref().filter(|status| !status.is_empty());
    Ok(ApiJson(MembersBody { members: admin::list(&cp, &operator, status).await? }))
}
