//! `/api/v1/billing…` and `/api/v1/admin/billing`: the member's billing, payment-method setup,
//! the portal, the budget, Stripe's webhook, and the operators' list.

use crate::auth::{AuthMember, AuthOperator};
use crate::billing::account::{self, Budget, BudgetInput, Overview};
use crate::billing::admin::{self, MemberBilling};
use crate::billing::webhook::{self, Received};
use crate::state::ControlPlane;
use aqs_core::{ApiJson, ApiResult};
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use serde::Serialize;

#[derive(Serialize)]
pub(super) struct BillingBody {
    billing: Overview,
}

#[derive(Serialize)]
pub(super) struct UrlBody {
    url: String,
}

#[derive(Serialize)]
pub(super) struct BudgetBody {
    budget: Budget,
}

#[derive(Serialize)]
pub(super) struct MembersBody {
    members: Vec<MemberBilling>,
}

pub(super) async fn get(State(cp): State<ControlPlane>, member: AuthMember) -> ApiResult<ApiJson<BillingBody>> {
    Ok(ApiJson(BillingBody { billing: account::overview(&cp, member.id()).await? }))
}

pub(super) async fn setup(State(cp): State<ControlPlane>, member: AuthMember) -> ApiResult<ApiJson<UrlBody>> {
    Ok(ApiJson(UrlBody { url: account::setup_url(&cp, member.id()).await? }))
}

pub(super) async fn portal(State(cp): State<ControlPlane>, member: AuthMember) -> ApiResult<ApiJson<UrlBody>> {
    Ok(ApiJson(UrlBody { url: account::portal_url(&cp, member.id()).await? }))
}

pub(super) async fn budget(
    State(cp): State<ControlPlane>,
    member: AuthMember,
    ApiJson(input): ApiJson<BudgetInput>,
) -> ApiResult<ApiJson<BudgetBody>> {
    Ok(ApiJson(BudgetBody { budget: account::set_budget(&cp, member.id(), input).await? }))
}

pub(super) async fn webhook(
    State(cp): State<ControlPlane>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<ApiJson<Received>> {
    let signature = headers.get("stripe-signature").and_then(|v| v.to_str().ok());
    Ok(ApiJson(webhook::receive(&cp, signature, &body).await?))
}

/// `GET /api/v1/admin/billing?status=past_due`.
pub(super) async fn admin_list(
    State(cp): State<ControlPlane>,
    operator: AuthOperator,
    RawQuery(query): RawQuery,
) -> ApiResult<ApiJson<MembersBody>> {
    let status = url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .find(|(key, _)| key == "status")
        .map(|(_, value)| value.into_owned())
        .filter(|value| !value.is_empty());
    Ok(ApiJson(MembersBody { members: admin::list(&cp, &operator, status.as_deref()).await? }))
}
