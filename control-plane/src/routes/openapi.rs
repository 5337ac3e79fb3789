//! `GET /api/v1/openapi.json`: the management API's OpenAPI 3.1 document, generated from the
//! handlers' `#[utoipa::path]` annotations and the types they answer with. Served without a session.

use super::{account, admin, admin_teams, audit, auth, billing, hosts, keys, push, queues, teams, tokens};
use aqs_core::openapi;
use axum::http::HeaderValue;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use std::sync::LazyLock;
use utoipa::OpenApi;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "AQS management API",
        description = "Members, sessions, queues, tokens, push targets, custom hosts and billing. Sign \
            up or log in for a session and send it as `Authorization: Bearer <session>`. Operator \
            routes answer 404 to everyone else. Every error is `{\"error\", \"message\"}` with the \
            status its code names.",
    ),
    paths(
        serve,
        auth::signup,
        auth::login,
        auth::me,
        auth::logout,
        auth::logout_all,
        auth::change_password,
        auth::sessions,
        auth::end_session,
        account::delete,
        queues::create,
        queues::list,
        queues::get,
        queues::update,
        queues::delete,
        queues::pause,
        queues::resume,
        tokens::mint,
        tokens::list,
        tokens::revoke,
        push::set,
        push::get,
        push::stop,
        push::rotate_secret,
        push::deliveries,
        push::callback_urls,
        admin::find_member,
        admin::list,
        admin::add,
        admin::remove,
        admin_teams::find,
        admin_teams::get,
        admin_teams::suspend,
        admin_teams::unsuspend,
        admin_teams::limits,
        hosts::create_domain,
        hosts::list_domains,
        hosts::get_domain,
        hosts::delete_domain,
        hosts::verify_domain,
        hosts::create_host,
        hosts::list_hosts,
        hosts::get_host,
        hosts::delete_host,
        hosts::check_host,
        hosts::admin_list,
        hosts::admin_check,
        billing::get,
        billing::setup,
        billing::portal,
        billing::budget,
        billing::webhook,
        billing::admin_list,
        teams::list,
        teams::create,
        teams::delete,
        teams::members,
        teams::change_role,
        teams::remove_member,
        teams::invite,
        teams::pending_invites,
        teams::revoke_invite,
        teams::preview,
        teams::accept,
        keys::create,
        keys::list,
        keys::revoke,
        audit::list,
        audit::admin_list,
    ),
    tags(
        (name = "auth", description = "Sign up, log in, sessions."),
        (name = "account", description = "The member's account as a whole."),
        (name = "queues", description = "A member's queues."),
        (name = "tokens", description = "A queue's tokens."),
        (name = "push", description = "Push delivery to an HTTP handler."),
        (name = "hosts", description = "Root domains and custom hosts."),
        (name = "billing", description = "Payment method, paid add-ons, budget."),
        (name = "teams", description = "Teams, their members and roles, invite links."),
        (name = "keys", description = "Management keys: a team's credential for automation."),
        (name = "audit", description = "The team's audit log (owners and admins)."),
        (name = "admin", description = "Operators only (404 to everyone else)."),
    )
)]
struct ManagementApi;

/// The document, with the error schema and the session's security scheme.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = ManagementApi::openapi();
    openapi::finish(
        &mut doc,
        "session",
        "The session JWT that sign-up, log-in and a password change answer (valid 12 h, until logged \
         out); operators use their own session.",
        Some("JWT"),
    );
    doc
}

static DOCUMENT: LazyLock<String> = LazyLock::new(|| document().to_json().expect("the OpenAPI document serialises"));

/// This document.
#[utoipa::path(get, path = "/api/v1/openapi.json", operation_id = "management_openapi", tag = "auth",
    responses((status = 200, description = "The OpenAPI 3.1 document of the management API.",
        content_type = "application/json", body = Object)))]
pub(super) async fn serve() -> Response {
    ([(CONTENT_TYPE, HeaderValue::from_static("application/json"))], DOCUMENT.as_str()).into_response()
}
