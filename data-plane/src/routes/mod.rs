//! The HTTP surface: `/queue/v1/health`, `/queue/v1/openapi.json` and the per-queue routes under
//! `/queue/v1/{slug}`.
//!
//! Each per-queue route declares here what it allows: the scopes of which the token needs one and
//! the rate budget it is charged to ([`access`]). Handlers take a
//! [`QueueContext`](crate::QueueContext), which answers 401, 404 and 403 in that order before the
//! handler reads anything; the budget is taken by the script the request runs (429 there, before
//! the script changes anything; `engine/src/rate.rs`).

mod admin;
mod alternatives;
mod consume;
mod dead_letters;
mod extend;
mod health;
mod openapi;
mod publish;
mod receipts;
mod stats;
pub(crate) mod views;

use crate::auth::{Access, access};
use crate::state::DataPlane;
use aqs_core::metrics::http::HttpMetricsLayer;
use aqs_core::openapi::Routes;
use aqs_core::token::Scope;
use aqs_engine::Class;
use axum::extract::DefaultBodyLimit;
use axum::http::HeaderValue;
use axum::http::header::CACHE_CONTROL;
use axum::routing::{get, post};
use axum::{Extension, Router};
use tower::ServiceBuilder;
use tower::layer::util::{Identity, Stack};
use tower_http::set_header::SetResponseHeaderLayer;

/// Body limit of the routes whose bodies are small (consume, ack, nack, extend, purge, dead-letter
/// actions): 100 receipts or ids fit many times over.
const SMALL_BODY_LIMIT: u64 = 256 * 1024;

/// Every data-plane route, at its full path, each measured (`aqs_core::metrics::http`): the
/// per-queue routes by their own layers ([`queue_route`]), the others here. A server merges this
/// after measuring its other routes, so nothing is measured twice.
pub fn router(state: DataPlane) -> Router {
    aqs_core::metrics::http::measured(service_routes().into_router())
        .merge(routes_at("/queue/v1/{slug}").into_router())
        .with_state(state)
}

/// The paths [`router`] serves, as its document must list them.
pub fn served_paths() -> Vec<String> {
    routes().paths().to_vec()
}

pub use openapi::document;

fn routes() -> Routes<DataPlane> {
    service_routes().merge(routes_at("/queue/v1/{slug}"))
}

/// The routes that are not a queue's.
fn service_routes() -> Routes<DataPlane> {
    Routes::new().route("/queue/v1/health", get(health::health)).route("/queue/v1/openapi.json", get(openapi::serve))
}

/// The per-queue routes relative to the queue's root. A custom host can serve them at `/` after
/// inserting a [`PinnedQueue`](crate::PinnedQueue) extension.
pub fn queue_routes() -> Router<DataPlane> {
    routes_at("").into_router()
}

/// The per-queue routes under `root`. The shared address registers them at their full paths
/// rather than nesting a router: a nest rewrites every request's URI, which showed in the
/// single-publish profile.
fn routes_at(root: &str) -> Routes<DataPlane> {
    let at = |path: &str| format!("{root}{path}");
    use Scope::{Consume, Manage, Send};
    const SEND: &[Scope] = &[Send];
    const CONSUME: &[Scope] = &[Consume];
    const MANAGE: &[Scope] = &[Manage];
    const SEND_OR_CONSUME: &[Scope] = &[Send, Consume];
    Routes::new()
        .route(&at("/messages"), post(publish::publish_one).layer(queue_route(SEND, Class::Messages)))
        .route(&at("/messages/batch"), post(publish::publish_batch).layer(queue_route(SEND, Class::Messages)))
        .route(&at("/consume"), post(consume::Consume).layer(queue_route(CONSUME, Class::Messages)))
        .route(&at("/ack"), post(consume::ack).layer(queue_route(CONSUME, Class::Messages)))
        .route(&at("/nack"), post(consume::nack).layer(queue_route(CONSUME, Class::Messages)))
        .route(&at("/extend"), post(extend::extend).layer(queue_route(CONSUME, Class::Messages)))
        .route(&at("/stats"), get(stats::stats).layer(queue_route(SEND_OR_CONSUME, Class::Reads)))
        .route(&at("/messages/peek"), get(admin::peek).layer(queue_route(MANAGE, Class::Reads)))
        .route(&at("/purge"), post(admin::purge).layer(queue_route(MANAGE, Class::Actions)))
        .route(&at("/dead-letters"), get(dead_letters::list).layer(queue_route(MANAGE, Class::Reads)))
        .route(&at("/dead-letters/replay"), post(dead_letters::replay).layer(queue_route(MANAGE, Class::Actions)))
        .route(&at("/dead-letters/purge"), post(dead_letters::purge).layer(queue_route(MANAGE, Class::Actions)))
}

/// What [`queue_route`] builds, written as tower nests it: innermost layer first.
type QueueRouteLayers = Stack<
    Extension<Access>,
    Stack<DefaultBodyLimit, Stack<SetResponseHeaderLayer<HeaderValue>, Stack<HttpMetricsLayer, Identity>>>,
>;

/// The layers of one per-queue route, outermost first: its request metrics (`HttpMetricsLayer`;
/// they record nothing unless metrics are on), `Cache-Control: no-store` (responses carry
/// messages and receipts: never cached by anything in between), axum's default body limit off
/// (handlers read their bodies themselves, after the scope check, under their own limit: a
/// per-queue one for publishes, see body.rs), and the route's [`Access`](crate::auth::Access).
///
/// One stack per route rather than a router-wide `.layer` (or `route_layer`) each: axum boxes a
/// route's future once per layer applied to it, and a held long poll keeps every one of those
/// boxes for its whole wait. Plain layers too, not `middleware::map_response`, which boxes a
/// future per request.
fn queue_route(scopes: &'static [Scope], class: Class) -> QueueRouteLayers {
    ServiceBuilder::new()
        .layer(HttpMetricsLayer)
        .layer(SetResponseHeaderLayer::overriding(CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .layer(DefaultBodyLimit::disable())
        .layer(access(scopes, class))
        .into_inner()
}
