//! The HTTP series (`aqs_http_requests_total`, `aqs_http_request_duration_seconds`): a layer for
//! `Router::route_layer` (or a route's own layer stack, as the data plane's queue routes take it),
//! so that the route's template (`MatchedPath`) is known and the `route` label stays bounded
//! whatever paths clients send. Wrapped around a fallback, where no template
//! exists, it labels the request `unmatched`.
//!
//! A service and a named future rather than `middleware::from_fn`: no extra boxed future per
//! request. Two registry lookups per request (a counter and a histogram) are its whole cost.

use super::{HTTP_REQUEST_DURATION, HTTP_REQUESTS};
use axum::Router;
use axum::extract::MatchedPath;
use axum::http::{Method, Request, Response};
use pin_project_lite::pin_project;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll, ready};
use std::time::Instant;
use tower::{Layer, Service};

/// The `route` label of a request that no route matched.
pub const UNMATCHED: &str = "unmatched";

/// `router` with every route measured, when metrics are on (else as it is: no cost at all).
pub fn measured<S: Clone + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    if super::enabled() && router.has_routes() { router.route_layer(HttpMetricsLayer) } else { router }
}

#[derive(Clone, Copy, Debug, Default)]
pub struct HttpMetricsLayer;

impl<S> Layer<S> for HttpMetricsLayer {
    type Service = HttpMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        HttpMetrics { inner }
    }
}

#[derive(Clone, Debug)]
pub struct HttpMetrics<S> {
    inner: S,
}

/// What a finished request is recorded under.
struct Labels {
    route: String,
    method: &'static str,
    started: Instant,
}

impl<S, B, R> Service<Request<B>> for HttpMetrics<S>
where
    S: Service<Request<B>, Response = Response<R>>,
{
    type Response = Response<R>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let labels = super::enabled().then(|| Labels {
            route: request.extensions().get::<MatchedPath>().map_or(UNMATCHED, MatchedPath::as_str).to_owned(),
            method: method_label(request.method()),
            started: Instant::now(),
        });
        ResponseFuture { inner: self.inner.call(request), labels }
    }
}

pin_project! {
    pub struct ResponseFuture<F> {
        #[pin]
        inner: F,
        labels: Option<Labels>,
    }
}

impl<F, R, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<R>, E>>,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = ready!(this.inner.poll(cx));
        if let (Some(labels), Ok(response)) = (this.labels.take(), &result) {
            let took = labels.started.elapsed().as_secs_f64();
            let status = status_label(response.status().as_u16());
            metrics::histogram!(HTTP_REQUEST_DURATION, "route" => labels.route.clone(), "method" => labels.method)
                .record(took);
            metrics::counter!(HTTP_REQUESTS, "route" => labels.route, "method" => labels.method, "status" => status)
                .increment(1);
        }
        Poll::Ready(result)
    }
}

/// The methods routes take; anything else (a route only matches its own methods, so this is a
/// 405) is `other`, keeping the label bounded.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// A status as a label, without formatting one per request.
fn status_label(code: u16) -> &'static str {
    static LABELS: OnceLock<Vec<String>> = OnceLock::new();
    let labels = LABELS.get_or_init(|| (100..600).map(|code| code.to_string()).collect());
    code.checked_sub(100).and_then(|i| labels.get(usize::from(i))).map_or("other", String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_methods_have_bounded_labels() {
        assert_eq!(status_label(200), "200");
        assert_eq!(status_label(404), "404");
        assert_eq!(status_label(599), "599");
        assert_eq!(status_label(99), "other");
        assert_eq!(status_label(600), "other");
        assert_eq!(method_label(&Method::PATCH), "PATCH");
        assert_eq!(method_label(&Method::from_bytes(b"BREW").unwrap()), "other");
    }
}
