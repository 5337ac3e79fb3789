//! CSRF protection for every form. A token is the HMAC of the visitor's binding under the session
//! secret: the session JWT for a member, the anonymous id (`aqs_anon`) before logging in. Pages put
//! it in a hidden `csrf` field; [`guard`] checks it on every POST before any handler runs, so a new
//! form cannot forget to, whether the form is urlencoded or multipart (`posted.rs`). A missing or
//! wrong token is a 403 page.

use crate::cookies::{self, Cookies};
use crate::error::ConsoleError;
use crate::posted;
use crate::state::ConsoleState;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The form field that carries the token.
pub(crate) const FIELD: &str = "csrf";
/// No console form comes near this; anything larger is not one of ours...
pub(crate) const BODY_LIMIT: usize = 64 * 1024;
/// ...but the send form, whose body may be as large as the largest payload size a queue can have.
/// Form encoding writes a byte as up to three ("%7B"), plus the other fields (a file uploaded as
/// multipart takes one per byte); the queue's own size is then checked beside the field.
const SEND_BODY_LIMIT: usize = 3 * PAYLOAD_SIZE_MAX as usize + BODY_LIMIT;
const PAYLOAD_SIZE_MAX: u64 = aqs_core::limits::PAYLOAD_SIZES[aqs_core::limits::PAYLOAD_SIZES.len() - 1];

/// The largest form body accepted at `path`.
pub(crate) fn body_limit(path: &str) -> usize {
    if path.ends_with("/messages/send") { SEND_BODY_LIMIT } else { BODY_LIMIT }
}
const PURPOSE: &str = "csrf";

/// What a token is bound to: the session cookie when there is one, else the anonymous id.
pub(crate) fn binding(cookies: &Cookies) -> Option<&str> {
    cookies.get(cookies::SESSION).or_else(|| cookies.get(cookies::ANON))
}

/// The token for a binding.
pub(crate) fn token(state: &ConsoleState, binding: &str) -> String {
    state.signer().tag(PURPOSE, binding.as_bytes())
}

/// Checks the `csrf` field of every POST against the request's binding; other methods pass.
pub(crate) async fn guard(State(state): State<ConsoleState>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let cookies = Cookies::from_headers(&parts.headers);
    // Without a binding no token can be valid: refused before a (possibly large) body is read.
    if binding(&cookies).is_none() {
        return ConsoleError::Csrf.into_response();
    }
    let Ok(bytes) = axum::body::to_bytes(body, body_limit(parts.uri.path())).await else {
        return ConsoleError::BadRequest("The form is too large.".into()).into_response();
    };
    // Urlencoded or multipart alike: the token is a field of the parsed form.
    let form = match posted::parse(&parts, bytes.clone()).await {
        Ok(form) => form,
        Err(err) => return err.into_response(),
    };
    let submitted = form.has(FIELD).then(|| form.get(FIELD));
    let valid = match (binding(&cookies), submitted) {
        (Some(binding), Some(token)) => state.signer().verify(PURPOSE, binding.as_bytes(), token),
        _ => false,
    };
    if !valid {
        tracing::info!(path = %parts.uri.path(), "console form rejected: missing or wrong CSRF token");
        return ConsoleError::Csrf.into_response();
    }
    // The handler's `FormData` is this checked form, not a second parse.
    parts.extensions.insert(form);
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}
