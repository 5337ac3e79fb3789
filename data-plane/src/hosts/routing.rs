//! Routing of custom hosts, one wrapper per listener.
//!
//! The TLS listener ([`tls_listener`]) serves custom hosts and nothing else: a request goes to the
//! slug-less queue routes pinned to the host named by the connection's SNI, and only when its
//! `Host` (port dropped, any case) is that same name; any other `Host` (another custom host, the
//! service's own name, a missing one) is `421 misdirected_request`, so a certificate never vouches
//! for a queue or a page it was not issued for. The ordinary handlers, token checks and tenancy
//! rules do the rest (a token of another queue is 404).
//!
//! The plain listener ([`plain_listener`]) never serves a custom host's queue: a token must not
//! cross the network in cleartext. For a custom host's name it answers the ACME HTTP-01 challenge
//! (which the ACME server asks over plain HTTP) and redirects everything else to `https://` with
//! `308`; every other name reaches the shared router untouched. The challenge path is answered on
//! any `Host`, from the projection, because a host's first certificate is validated before the host
//! is in the table.
//!
//! On a custom host: `/queue/v1/...` and unknown paths are 404, every answer carries
//! `Cache-Control: no-store`, and every route of a paused queue answers `409 queue_paused`.

use crate::auth::PinnedQueue;
use crate::state::DataPlane;
use aqs_core::ApiError;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, HOST, LOCATION};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::future::RouteFuture;
use axum::routing::get;
use futures_util::future::Either;
use std::convert::Infallible;
use std::future::Ready;
use std::task::{Context, Poll};
use tower::Service;
use tower_http::set_header::SetResponseHeaderLayer;

const CHALLENGE_PREFIX: &str = "/.well-known/acme-challenge/";

/// The name a TLS connection was opened for (its SNI), put on each of its requests by the TLS
/// listener; `None` when the client sent none.
#[derive(Clone, Debug)]
pub struct ServerName(pub Option<String>);

/// The plain listener's router: `shared` (every route of this process), with the names of custom
/// hosts taken out of it (challenge answers and redirects only).
pub fn plain_listener(shared: Router, state: DataPlane) -> PlainRouting {
    let challenge = Router::new()
        .route("/.well-known/acme-challenge/{token}", get(acme_challenge))
        .fallback(|| async { ApiError::not_found("no such challenge") })
        .with_state(state.clone());
    PlainRouting { state, shared, challenge }
}

/// The TLS listener's router: the custom host named by SNI, for requests whose `Host` names it.
pub fn tls_listener(state: DataPlane) -> Router {
    // The queue routes measure themselves (`routes::queue_route`).
    let custom = crate::queue_routes()
        .fallback(|| async { ApiError::not_found("no such route on a custom host") })
        .method_not_allowed_fallback(|| async {
            ApiError::MethodNotAllowed("this route does not take that method".into())
        })
        .layer(axum::middleware::from_fn_with_state(state.clone(), refuse_paused))
        .layer(SetResponseHeaderLayer::overriding(CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .with_state(state.clone());
    Router::new().fallback_service(TlsRouting { state, custom })
}

/// The request's `Host` (else the URI's authority), port and trailing dot dropped, lowercase.
fn host_of(request: &Request) -> Option<String> {
    request
        .headers()
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| request.uri().host())
        .map(|h| aqs_core::hostname::of_header(h).into_owned())
}

/// The plain listener's service ([`plain_listener`]).
#[derive(Clone)]
pub struct PlainRouting {
    state: DataPlane,
    shared: Router,
    challenge: Router,
}

impl Service<Request> for PlainRouting {
    type Response = Response;
    type Error = Infallible;
    type Future = Answer;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if request.uri().path().starts_with(CHALLENGE_PREFIX) {
            return Either::Left(self.challenge.call(request));
        }
        match host_of(&request).filter(|name| self.state.hosts.is_custom(name)) {
            Some(name) => ready(to_https(&name, &request)),
            None => Either::Left(self.shared.call(request)),
        }
    }
}

/// `308` to the same path and query at `https://<name>` (the edge's port 443).
fn to_https(name: &str, request: &Request) -> Response {
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str());
    match HeaderValue::try_from(format!("https://{name}{path}")) {
        Ok(location) => (StatusCode::PERMANENT_REDIRECT, [(LOCATION, location)]).into_response(),
        Err(_) => ApiError::invalid("the request's path cannot be redirected").into_response(),
    }
}

#[derive(Clone)]
struct TlsRouting {
    state: DataPlane,
    custom: Router,
}

impl Service<Request> for TlsRouting {
    type Response = Response;
    type Error = Infallible;
    type Future = Answer;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let sni = request.extensions().get::<ServerName>().and_then(|s| s.0.as_deref()).map(normalise);
        let Some(sni) = sni else {
            return misdirected("this connection named no host (SNI); connect with the custom host's name");
        };
        match host_of(&request) {
            Some(host) if host == sni => {}
            Some(host) => {
                return misdirected(&format!("this connection is for {sni}, not {host}; open one for {host}"));
            }
            None => return misdirected(&format!("the request names no Host; this connection is for {sni}")),
        }
        match self.state.hosts.serving(&sni) {
            Some(served) => {
                request.extensions_mut().insert(PinnedQueue(served.queue));
                Either::Left(self.custom.call(request))
            }
            // Removed (or expired) after this connection's handshake.
            None => ready(ApiError::not_found("no custom host by this name").into_response()),
        }
    }
}

fn normalise(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

fn misdirected(message: &str) -> Answer {
    ready(ApiError::MisdirectedRequest(message.to_owned()).into_response())
}

/// A routed request, or an answer given without routing it.
type Answer = Either<RouteFuture<Infallible>, Ready<Result<Response, Infallible>>>;

fn ready(response: Response) -> Answer {
    Either::Right(std::future::ready(Ok(response)))
}

/// A paused queue's hosts answer 409 on every route, stats included; a queue gone from the
/// projection (deleted) is 404.
async fn refuse_paused(State(state): State<DataPlane>, request: Request, next: Next) -> Response {
    let Some(PinnedQueue(queue)) = request.extensions().get::<PinnedQueue>().copied() else {
        return ApiError::not_found("no such route").into_response();
    };
    let mut conn = state.engine.conn();
    match state.auth.meta(&mut conn, queue).await {
        Ok(Some(meta)) if meta.paused => {
            ApiError::QueuePaused("the queue is paused; its custom hosts serve again once it is resumed".into())
                .into_response()
        }
        Ok(Some(_)) => next.run(request).await,
        Ok(None) => ApiError::not_found("no such queue").into_response(),
        Err(err) => err.into_response(),
    }
}

/// `GET /.well-known/acme-challenge/{token}`: the key authorization the reconciler stored, as
/// plain text, on any `Host` (the ACME server sends `host:port`).
async fn acme_challenge(State(state): State<DataPlane>, Path(token): Path<String>) -> Response {
    if token.is_empty()
        || token.len() > 256
        || !token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return ApiError::not_found("no such challenge").into_response();
    }
    let mut conn = state.engine.conn();
    let answer: redis::RedisResult<Option<String>> =
        redis::cmd("GET").arg(state.engine.keys().acme_challenge(&token)).query_async(&mut conn).await;
    match answer {
        Ok(Some(value)) => (StatusCode::OK, [(CONTENT_TYPE, "text/plain")], Body::from(value)).into_response(),
        Ok(None) => ApiError::not_found("no such challenge").into_response(),
        Err(err) => ApiError::from(err).into_response(),
    }
}
