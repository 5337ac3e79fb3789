//! Routing by `Host`, in front of every listener: a request whose `Host` (port dropped, any case)
//! is a served custom host goes to the slug-less queue routes pinned to that host's queue, so the
//! ordinary handlers, token checks and tenancy rules do the work (a token of another queue is
//! 404). Everything else goes to the shared router untouched. The ACME HTTP-01 challenge path is
//! answered on any `Host`, from the projection.
//!
//! On a custom host: `/queue/v1/...` and unknown paths are 404, every answer carries
//! `Cache-Control: no-store`, and every route of a paused queue answers `409 queue_paused`.

use crate::auth::PinnedQueue;
use crate::state::DataPlane;
use aqs_core::ApiError;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, HOST};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::future::RouteFuture;
use axum::routing::get;
use std::convert::Infallible;
use std::task::{Context, Poll};
use tower::Service;
use tower_http::set_header::SetResponseHeaderLayer;

const CHALLENGE_PREFIX: &str = "/.well-known/acme-challenge/";

/// Wraps `shared` (every route of this process) so that custom hosts are served on it too.
pub fn route_by_host(shared: Router, state: DataPlane) -> Router {
    let custom = aqs_core::metrics::http::measured(crate::queue_routes())
        .fallback(|| async { ApiError::not_found("no such route on a custom host") })
        .method_not_allowed_fallback(|| async {
            ApiError::MethodNotAllowed("this route does not take that method".into())
        })
        .layer(axum::middleware::from_fn_with_state(state.clone(), refuse_paused))
        .layer(SetResponseHeaderLayer::overriding(CACHE_CONTROL, HeaderValue::from_static("no-store")))
        .with_state(state.clone());
    let challenge = Router::new()
        .route("/.well-known/acme-challenge/{token}", get(acme_challenge))
        .fallback(|| async { ApiError::not_found("no such challenge") })
        .with_state(state.clone());
    Router::new().fallback_service(HostRouting { state, shared, custom, challenge })
}

#[derive(Clone)]
struct HostRouting {
    state: DataPlane,
    shared: Router,
    custom: Router,
    challenge: Router,
}

impl Service<Request> for HostRouting {
    type Response = Response;
    type Error = Infallible;
    type Future = RouteFuture<Infallible>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        if request.uri().path().starts_with(CHALLENGE_PREFIX) {
            return self.challenge.call(request);
        }
        let served = request
            .headers()
            .get(HOST)
            .and_then(|h| h.to_str().ok())
            .or_else(|| request.uri().host())
            .and_then(|h| self.state.hosts.serving(&aqs_core::hostname::of_header(h)));
        match served {
            Some(served) => {
                request.extensions_mut().insert(PinnedQueue(served.queue));
                self.custom.call(request)
            }
            None => self.shared.call(request),
        }
    }
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
