//! `GET /api/v1/audit`: the caller's team's audit log (owners and admins), and
//! `GET /api/v1/admin/audit`: any team's, for operators (404 to everyone else).
//!
//! Both page newest first. `before` is an event id (UUID v7): give a page's `next_before` to read
//! the page after it; a time is not accepted, as an id continues exactly where a page ended even
//! when events share a second. `limit` is 1 to 200 (default 50). `action` is one action name
//! (`queue.created`); `actor` is an actor's id (a UUID) or email. A bad value is a 400
//! `invalid_request` naming the parameter.

use crate::audit::{self, Filter, Page, RawFilter};
use crate::auth::AuthOperator;
use crate::state::ControlPlane;
use crate::teams::Caller;
use aqs_core::{ApiJson, ApiQuery, ApiResult};
use axum::extract::State;
use serde::Deserialize;

/// The query of the team's audit log.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct AuditQuery {
    /// Only events of this action, such as `queue.created`.
    action: Option<String>,
    /// Only events of this actor: a member's, key's or operator's id, or an email.
    actor: Option<String>,
    /// The id of an event: only older events (a page's `next_before`).
    before: Option<String>,
    /// Events per page, 1 to 200; default 50.
    limit: Option<String>,
}

/// The query of the operators' audit log: the team's, plus which team.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct AdminAuditQuery {
    /// Only this team's events (its id); every team's without it.
    team: Option<String>,
    /// Only events of this action, such as `queue.created`.
    action: Option<String>,
    /// Only events of this actor: a member's, key's or operator's id, or an email.
    actor: Option<String>,
    /// The id of an event: only older events (a page's `next_before`).
    before: Option<String>,
    /// Events per page, 1 to 200; default 50.
    limit: Option<String>,
}

aqs_core::errors!(AuditErrors: "invalid_request", "unauthorized", "team_suspended", "forbidden", "not_found", "service_unavailable");

aqs_core::errors!(AdminAuditErrors: "invalid_request", "not_found", "service_unavailable");

#[utoipa::path(get, path = "/api/v1/audit", operation_id = "audit_list", tag = "audit", params(AuditQuery),
    responses((status = 200, body = Page, description = "The team's events, newest first, and the `before` of the next page."), AuditErrors),
    security(("session" = [])))]
pub(super) async fn list(
    State(cp): State<ControlPlane>,
    caller: Caller,
    ApiQuery(query): ApiQuery<AuditQuery>,
) -> ApiResult<ApiJson<Page>> {
    let filter = Filter::parse(RawFilter {
        team: None,
        action: query.action,
        actor: query.actor,
        before: query.before,
        limit: query.limit,
    })?;
    Ok(ApiJson(audit::team_page(cp.db(), caller.team, &filter).await?))
}

#[utoipa::path(get, path = "/api/v1/admin/audit", operation_id = "audit_admin_list", tag = "admin", params(AdminAuditQuery),
    responses((status = 200, body = Page, description = "Events of every team (or one), newest first, and the `before` of the next page."), AdminAuditErrors),
    security(("session" = [])))]
pub(super) async fn admin_list(
    State(cp): State<ControlPlane>,
    _operator: AuthOperator,
    ApiQuery(query): ApiQuery<AdminAuditQuery>,
) -> ApiResult<ApiJson<Page>> {
    let filter = Filter::parse(RawFilter {
        team: query.team,
        action: query.action,
        actor: query.actor,
        before: query.before,
        limit: query.limit,
    })?;
    Ok(ApiJson(audit::any_page(cp.db(), &filter).await?))
}
