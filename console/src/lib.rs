//! The web console for members, served at `/`: server-rendered askama pages over the control plane
//! (members, teams with their invites, keys and audit log, queues, tokens, push targets, and the
//! operators' callback URLs) and the data-plane engine (depth, stats, messages in every state,
//! sending, receiving and deleting one, dead letters, the last hour, who consumes), and the
//! snippets that connect to a queue.
//!
//! Every page works without JavaScript. `static/console.js` only adds small enhancements: the copy
//! button, the live slug preview and the Overview refreshing a fragment instead of the whole page.
//!
//! The layers:
//! - [`router`] mounts the pages and the static assets, behind two layers: the CSRF guard (every
//!   POST) and the response headers (no caching of pages, no framing, a strict CSP); `finish`
//!   runs every POST on a task of its own, so a browser that leaves does not cut an action short;
//! - `extract`: who is asking (`Visitor`, `CurrentMember`) and the posted form;
//! - `form`: the flow of every state-changing form (claim its one-time id, act, redirect or show
//!   it again), so that a form posted twice acts once;
//! - `pages/`: one module per page or tab, each calling the control plane's service functions with
//!   the member id first, so a member only ever reaches their own queues.

mod assets;
mod body;
mod chart;
mod checks;
mod cookies;
mod csrf;
mod device;
mod error;
mod extract;
mod fields;
mod finish;
mod flash;
mod form;
mod format;
mod headers;
mod layout;
mod line_chart;
mod next;
mod once;
mod pages;
mod palette;
mod posted;
mod signer;
mod state;
mod tabs;
mod timing;

use aqs_control_plane::ControlPlane;
use aqs_core::config::Config;
use aqs_engine::Engine;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{get, post};

pub use tabs::Tab;

/// The console's routes, to be merged into the binary's router. The console reads messages through
/// the engine alone (a `DataPlane` converts into its engine), so a console-only process builds no
/// data plane.
pub fn router(config: &Config, control: ControlPlane, engine: impl Into<Engine>) -> Router {
    let state = state::ConsoleState::new(config, control, engine.into());
    Router::new()
        .route("/", get(pages::queue_list::show))
        .route("/signup", get(pages::auth::signup_form).post(pages::auth::signup))
        .route("/login", get(pages::auth::login_form).post(pages::auth::login))
        .route("/logout", post(pages::auth::logout))
        .route("/logout-all", get(pages::confirmations::logout_all).post(pages::auth::logout_all))
        .route("/account", get(pages::account::show))
        .route("/account/password", post(pages::account::change_password))
        .route("/account/sessions/{id}/end", post(pages::account::end_session))
        .route("/account/delete", post(pages::account::delete))
        .route("/new", get(pages::create_queue::form).post(pages::create_queue::submit))
        .route("/new/slug", get(pages::create_queue::slug_preview))
        .route("/queues/{slug}", get(pages::overview::show))
        .route("/queues/{slug}/created", get(pages::create_queue::created))
        .route("/queues/{slug}/tokens/created", get(pages::tokens::created))
        .route("/queues/{slug}/live", get(pages::overview::live))
        .route("/queues/{slug}/messages", get(pages::messages::show))
        .route("/queues/{slug}/messages/view", get(pages::message_view::show))
        .route(
            "/queues/{slug}/messages/delete",
            get(pages::confirmations::delete_message).post(pages::message_delete::delete),
        )
        .route("/queues/{slug}/messages/purge", get(pages::messages::confirm_purge).post(pages::messages::purge))
        .route("/queues/{slug}/messages/send", get(pages::try_out::send_form).post(pages::try_out::send))
        .route("/queues/{slug}/messages/receive", post(pages::try_out::receive))
        .route("/queues/{slug}/messages/received/{id}", get(pages::try_out::received))
        .route("/queues/{slug}/messages/received/{id}/{action}", post(pages::try_out::settle))
        .route("/queues/{slug}/activity", get(pages::activity::show))
        .route("/queues/{slug}/consumers", get(pages::consumers::show))
        .route("/queues/{slug}/connect", get(pages::connect::show))
        .route("/queues/{slug}/activity/live", get(pages::activity::live))
        .route("/queues/{slug}/tokens", get(pages::tokens::show).post(pages::tokens::create))
        .route("/queues/{slug}/tokens/{id}/revoke", get(pages::tokens::confirm_revoke).post(pages::tokens::revoke))
        .route("/queues/{slug}/dead-letters", get(pages::dead_letters::show))
        .route("/queues/{slug}/dead-letters/view", get(pages::message_view::show_dead))
        .route("/queues/{slug}/dead-letters/{action}", get(pages::dead_letters::confirm).post(pages::dead_letters::act))
        .route("/queues/{slug}/push", get(pages::push::show).post(pages::push::set))
        .route("/queues/{slug}/push/secret", get(pages::push_actions::secret))
        .route("/queues/{slug}/push/{action}", get(pages::push_actions::confirm).post(pages::push_actions::act))
        .route("/queues/{slug}/settings", get(pages::settings::show).post(pages::settings::update))
        .route("/queues/{slug}/pause", post(pages::settings::pause))
        .route("/queues/{slug}/resume", post(pages::settings::resume))
        .route("/queues/{slug}/delete", post(pages::settings::delete))
        .route("/admin/callback-urls", get(pages::callback_urls::show).post(pages::callback_urls::add))
        .route(
            "/admin/callback-urls/remove",
            get(pages::callback_urls::confirm_remove).post(pages::callback_urls::remove),
        )
        .route("/hosts", get(pages::hosts::show).post(pages::hosts::add_host))
        .route("/hosts/{id}/check", post(pages::hosts::check_host))
        .route("/hosts/{id}/remove", get(pages::confirmations::remove_host).post(pages::hosts::remove_host))
        .route("/hosts/domains", post(pages::hosts::add_domain))
        .route("/hosts/domains/{id}/verify", post(pages::hosts::verify_domain))
        .route("/hosts/domains/{id}/remove", get(pages::confirmations::remove_domain).post(pages::hosts::remove_domain))
        .route("/admin/hosts", get(pages::admin_hosts::show))
        .route("/admin/hosts/{id}/check", post(pages::admin_hosts::check))
        .route("/billing", get(pages::billing::show))
        .route("/billing/setup", post(pages::billing::setup))
        .route("/billing/portal", post(pages::billing::portal))
        .route("/billing/budget", post(pages::billing::budget))
        .route("/admin/billing", get(pages::billing_admin::show))
        .route("/admin/teams", get(pages::admin_teams::list))
        .route("/admin/teams/{id}", get(pages::admin_teams::show))
        .route("/admin/teams/{id}/suspend", post(pages::admin_teams::suspend))
        .route("/admin/teams/{id}/unsuspend", post(pages::admin_teams::unsuspend))
        .route("/admin/teams/{id}/limits", post(pages::admin_teams::limits))
        .route("/team", get(pages::team::show))
        .route("/team/switch", post(pages::team::switch))
        .route("/team/new", post(pages::team::create))
        .route("/team/shown", get(pages::team_access::shown))
        .route("/team/members/{id}/role", post(pages::team::change_role))
        .route("/team/members/{id}/remove", get(pages::team::confirm_remove).post(pages::team::remove))
        .route("/team/leave", get(pages::team::confirm_leave).post(pages::team::leave))
        .route("/team/delete", get(pages::team::confirm_delete).post(pages::team::delete))
        .route("/team/invites", post(pages::team_access::invite))
        .route("/team/invites/{id}/revoke", post(pages::team_access::revoke_invite))
        .route("/team/keys", post(pages::team_access::create_key))
        .route(
            "/team/keys/{id}/revoke",
            get(pages::team_access::confirm_revoke_key).post(pages::team_access::revoke_key),
        )
        .route("/invites/{secret}", get(pages::invite::show).post(pages::invite::accept))
        .route("/audit", get(pages::audit::show))
        .route("/static/{file}", get(assets::serve))
        .layer(middleware::from_fn_with_state(state.clone(), csrf::guard))
        // The guard reads every body itself under the route's limit (`csrf::body_limit`); axum's
        // default 2 MB cap would only cut a multipart upload the guard has already bounded.
        .layer(DefaultBodyLimit::disable())
        // Outside the guard, so its refusals (an expired or oversized form) keep the menu too.
        .layer(middleware::from_fn_with_state(state.clone(), error::error_pages_with_menu))
        .layer(middleware::from_fn_with_state(state.clone(), error::require_database))
        .layer(middleware::from_fn_with_state(state.clone(), headers::page_headers))
        // Outermost, so that a POST whose browser left still runs every layer to its end.
        .layer(middleware::from_fn(finish::run_to_the_end))
        .with_state(state)
}
