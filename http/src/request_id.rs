//! Request ids: every request carries an `x-request-id` (the caller's, when it sent a sane one: 1
//! to 128 visible ASCII characters; otherwise one made here), which the response echoes, the
//! request's log span records, and every error answer's JSON carries as `"request_id"`.
//!
//! One service wrapped around the whole router, rather than tower-http's set, propagate and trace
//! layers: the caller's id must be checked before it is kept, the error body needs the id, and the
//! hot path pays for one wrapper instead of four.

use aqs_core::error::ErrorBody;
use axum::body::Body;
use axum::http::header::CONTENT_LENGTH;
use axum::http::{HeaderName, HeaderValue, Request, Response};
use pin_project_lite::pin_project;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use tower::Service;
use tracing::Instrument;
use tracing::instrument::Instrumented;

pub const X_REQUEST_ID: &str = "x-request-id";
const MAX_LEN: usize = 128;

/// Wraps a service (the router) so that its requests and responses carry request ids.
#[derive(Clone, Debug)]
pub struct RequestId<S> {
    inner: S,
}

impl<S> RequestId<S> {
    pub fn new(inner: S) -> Self {
        Self { inner }
    }
}

/// Whether a caller's id may be kept: it goes into logs and answers as it is.
pub fn is_sane(value: &HeaderValue) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty() && bytes.len() <= MAX_LEN && bytes.iter().all(|b| b.is_ascii_graphic())
}

/// A new id: this process's random prefix and a counter (unique without a random draw per
/// request), 32 hex characters.
pub fn generate() -> HeaderValue {
    static PREFIX: OnceLock<u64> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let prefix = *PREFIX.get_or_init(|| uuid::Uuid::new_v4().as_u64_pair().0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    HeaderValue::try_from(format!("{prefix:016x}{n:016x}")).expect("hex is a valid header value")
}

impl<S, B> Service<Request<B>> for RequestId<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        let id = match request.headers().get(X_REQUEST_ID) {
            Some(id) if is_sane(id) => id.clone(),
            _ => {
                let id = generate();
                request.headers_mut().insert(HeaderName::from_static(X_REQUEST_ID), id.clone());
                id
            }
        };
        let span = tracing::info_span!("request", request_id = id.to_str().unwrap_or_default());
        ResponseFuture { inner: self.inner.call(request).instrument(span), id: Some(id) }
    }
}

pin_project! {
    /// The inner response with the id added.
    pub struct ResponseFuture<F> {
        #[pin]
        inner: Instrumented<F>,
        id: Option<HeaderValue>,
    }
}

impl<F, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<Body>, E>>,
{
    type Output = Result<Response<Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut response = ready!(this.inner.poll(cx))?;
        let id = this.id.take().expect("a response future is not polled after it completed");
        // Only error answers carry the body along (`ErrorBody`): a success costs a lookup in an
        // empty extension map.
        if let Some(ErrorBody(mut body)) = response.extensions_mut().remove::<ErrorBody>() {
            body["request_id"] = id.to_str().unwrap_or_default().into();
            match serde_json::to_vec(&body) {
                Ok(bytes) => {
                    response.headers_mut().remove(CONTENT_LENGTH);
                    *response.body_mut() = Body::from(bytes);
                }
                Err(err) => tracing::warn!(error = %err, "cannot add the request id to an error answer"),
            }
        }
        response.headers_mut().insert(HeaderName::from_static(X_REQUEST_ID), id);
        Poll::Ready(Ok(response))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_visible_ascii_ids_are_kept() {
        assert!(is_sane(&HeaderValue::from_static("abc-123_XYZ.:/")));
        assert!(is_sane(&HeaderValue::try_from("a".repeat(128)).unwrap()));
        assert!(!is_sane(&HeaderValue::try_from("a".repeat(129)).unwrap()));
        assert!(!is_sane(&HeaderValue::from_static("")));
        assert!(!is_sane(&HeaderValue::from_static("has space")));
        assert!(!is_sane(&HeaderValue::from_bytes(b"caf\xc3\xa9").unwrap()));
    }

    #[test]
    fn generated_ids_are_sane_and_distinct() {
        let (a, b) = (generate(), generate());
        assert!(is_sane(&a) && is_sane(&b));
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
