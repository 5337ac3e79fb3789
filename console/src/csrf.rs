//! CSRF protection for every form. A token is the HMAC of the visitor's binding under the session
//! secret: the session JWT for a member, the anonymous id (`aqs_anon`) before logging in. Pages put
//! it in a hidden `csrf` field; [`guard`] checks it on every POST before any handler runs, so a new
//! form cannot forget to. A missing or wrong token is a 403 page.

use crate::cookies::{self, Cookies};
use crate::error::ConsoleError;
use crate::state::ConsoleState;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The form field that carries the token.
pub(crate) const FIELD: &str = "csrf";
/// No console form comes near this; anything larger is not one of ours.
pub(crate) const BODY_LIMIT: usize = 64 * 1024;
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
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, BODY_LIMIT).await else {
        return ConsoleError::BadRequest("The form is too large.".into()).into_response();
    };
    let cookies = Cookies::from_headers(&parts.headers);
    let submitted = form_urlencoded::parse(&bytes).find(|(name, _)| name == FIELD).map(|(_, value)| value);
    let valid = match (binding(&cookies), submitted) {
        (Some(binding), Some(token)) => state.signer().verify(PURPOSE, binding.as_bytes(), &token),
        _ => false,
    };
    if !valid {
        tracing::info!(path = %parts.uri.path(), "console form rejected: missing or wrong CSRF token");
        return ConsoleError::Csrf.into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}
