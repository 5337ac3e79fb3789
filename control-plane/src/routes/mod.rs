//! The `/api/v1` HTTP routes: thin handlers that parse the request, call the service layer and
//! shape the answer. Paths are full, so the binary can merge this router with the others.

mod account;
mod admin;
mod admin_teams;
mod audit;
mod auth;
mod billing;
mod hosts;
mod keys;
mod openapi;
mod path;
mod push;
mod queues;
mod teams;
mod tokens;

use crate::state::ControlPlane;
use crate::teams::TeamRole;
use crate::teams::need;
use aqs_core::openapi::Routes;
use axum::Router;
use axum::middleware;
use axum::routing::{delete, get, patch, post, put};

pub use openapi::document;

pub fn router(state: ControlPlane) -> Router {
    routes()
        // Every route here needs PostgreSQL: while it is down they answer 503 without waiting.
        .map(|router| router.layer(middleware::from_fn_with_state(state.clone(), crate::database::require_database)))
        .merge(document_route())
        .into_router()
        .with_state(state)
}

/// The paths [`router`] serves, as its document must list them.
pub fn served_paths() -> Vec<String> {
    routes().merge(document_route()).paths().to_vec()
}

/// The document needs no database: it is served outside the layer that answers 503 without one.
fn document_route() -> Routes<ControlPlane> {
    Routes::new().route("/api/v1/openapi.json", get(openapi::serve))
}

const VIEWER: TeamRole = TeamRole::Viewer;
const DEVELOPER: TeamRole = TeamRole::Developer;
const ADMIN: TeamRole = TeamRole::Admin;
const OWNER: TeamRole = TeamRole::Owner;

/// Each team route declares the least role it needs beside it (`need`), which the `Caller`
/// extractor checks; a team route without one answers 500, never serves (docs/teams.md).
fn routes() -> Routes<ControlPlane> {
    Routes::new()
        .route("/api/v1/auth/signup", post(auth::signup))
        .route("/api/v1/auth/login", post(auth::login))
        .route("/api/v1/auth/me", get(auth::me))
        .route("/api/v1/auth/logout", post(auth::logout))
        .route("/api/v1/auth/logout-all", post(auth::logout_all))
        .route("/api/v1/auth/password", post(auth::change_password))
        .route("/api/v1/auth/sessions", get(auth::sessions))
        .route("/api/v1/auth/sessions/{id}", delete(auth::end_session))
        .route("/api/v1/account", delete(account::delete))
        .route("/api/v1/queues", post(queues::create).layer(need(ADMIN)).merge(get(queues::list).layer(need(VIEWER))))
        .route(
            "/api/v1/queues/{slug}",
            get(queues::get).layer(need(VIEWER)).merge(patch(queues::update).delete(queues::delete).layer(need(ADMIN))),
        )
        .route("/api/v1/queues/{slug}/pause", post(queues::pause).layer(need(ADMIN)))
        .route("/api/v1/queues/{slug}/resume", post(queues::resume).layer(need(ADMIN)))
        .route(
            "/api/v1/queues/{slug}/tokens",
            post(tokens::mint).layer(need(DEVELOPER)).merge(get(tokens::list).layer(need(VIEWER))),
        )
        .route("/api/v1/queues/{slug}/tokens/{id}", delete(tokens::revoke).layer(need(DEVELOPER)))
        .route(
            "/api/v1/queues/{slug}/push",
            get(push::get).layer(need(VIEWER)).merge(put(push::set).delete(push::stop).layer(need(ADMIN))),
        )
        .route("/api/v1/queues/{slug}/push/rotate-secret", post(push::rotate_secret).layer(need(ADMIN)))
        .route("/api/v1/queues/{slug}/push/deliveries", get(push::deliveries).layer(need(VIEWER)))
        .route("/api/v1/push/callback-urls", get(push::callback_urls).layer(need(VIEWER)))
        .route("/api/v1/admin/members", get(admin::find_member))
        .route("/api/v1/admin/members/{id}/callback-urls", get(admin::list).post(admin::add))
        .route("/api/v1/admin/members/{id}/callback-urls/{url_id}", delete(admin::remove))
        .route("/api/v1/admin/teams", get(admin_teams::find))
        .route("/api/v1/admin/teams/{id}", get(admin_teams::get))
        .route("/api/v1/admin/teams/{id}/suspend", post(admin_teams::suspend))
        .route("/api/v1/admin/teams/{id}/unsuspend", post(admin_teams::unsuspend))
        .route("/api/v1/admin/teams/{id}/limits", patch(admin_teams::limits))
        .route(
            "/api/v1/domains",
            post(hosts::create_domain).layer(need(ADMIN)).merge(get(hosts::list_domains).layer(need(VIEWER))),
        )
        .route(
            "/api/v1/domains/{id}",
            get(hosts::get_domain).layer(need(VIEWER)).merge(delete(hosts::delete_domain).layer(need(ADMIN))),
        )
        .route("/api/v1/domains/{id}/verify", post(hosts::verify_domain).layer(need(ADMIN)))
        .route(
            "/api/v1/hosts",
            post(hosts::create_host).layer(need(ADMIN)).merge(get(hosts::list_hosts).layer(need(VIEWER))),
        )
        .route(
            "/api/v1/hosts/{id}",
            get(hosts::get_host).layer(need(VIEWER)).merge(delete(hosts::delete_host).layer(need(ADMIN))),
        )
        .route("/api/v1/hosts/{id}/check", post(hosts::check_host).layer(need(ADMIN)))
        .route("/api/v1/admin/hosts", get(hosts::admin_list))
        .route("/api/v1/admin/hosts/{id}/check", post(hosts::admin_check))
        .route("/api/v1/billing", get(billing::get).layer(need(VIEWER)))
        .route("/api/v1/billing/setup", post(billing::setup).layer(need(OWNER)))
        .route("/api/v1/billing/portal", post(billing::portal).layer(need(OWNER)))
        .route("/api/v1/billing/budget", put(billing::budget).layer(need(OWNER)))
        .route("/api/v1/billing/webhook", post(billing::webhook))
        .route("/api/v1/admin/billing", get(billing::admin_list))
        // Teams and invites take a member's session and check the role of the team in the path
        // themselves (routes/teams.rs); keys act on the AQS-Team header's team.
        .route("/api/v1/teams", get(teams::list).post(teams::create))
        .route("/api/v1/teams/{id}", delete(teams::delete))
        .route("/api/v1/teams/{id}/members", get(teams::members))
        .route("/api/v1/teams/{id}/members/{member_id}", patch(teams::change_role).delete(teams::remove_member))
        .route("/api/v1/teams/{id}/invites", get(teams::pending_invites).post(teams::invite))
        .route("/api/v1/teams/{id}/invites/{invite_id}", delete(teams::revoke_invite))
        .route("/api/v1/invites/{secret}", get(teams::preview))
        .route("/api/v1/invites/{secret}/accept", post(teams::accept))
        .route("/api/v1/keys", post(keys::create).merge(get(keys::list)).layer(need(ADMIN)))
        .route("/api/v1/keys/{id}", delete(keys::revoke).layer(need(ADMIN)))
        .route("/api/v1/audit", get(audit::list).layer(need(ADMIN)))
        .route("/api/v1/admin/audit", get(audit::admin_list))
}
