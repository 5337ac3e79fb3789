//! Flash messages: a one-line notice ("Token revoked.") carried across the redirect that follows a
//! successful form, in a signed cookie that lives a minute and is cleared once a page shows it
//! (`headers::page_headers`). Signed so that nobody can plant text on a member's pages.

use crate::cookies;
use crate::state::ConsoleState;
use axum::http::header::{LOCATION, SET_COOKIE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

const PURPOSE: &str = "flash";
/// A flash is a short sentence; this keeps the cookie far below any size limit.
const MAX_CHARS: usize = 300;

fn encode(state: &ConsoleState, message: &str) -> String {
    let message: String = message.chars().take(MAX_CHARS).collect();
    let tag = state.signer().tag(PURPOSE, message.as_bytes());
    format!("{}.{tag}", URL_SAFE_NO_PAD.encode(message.as_bytes()))
}

/// The message in a flash cookie, if it is one we signed.
pub(crate) fn decode(state: &ConsoleState, value: &str) -> Option<String> {
    let (message, tag) = value.split_once('.')?;
    let message = URL_SAFE_NO_PAD.decode(message).ok()?;
    if !state.signer().verify(PURPOSE, &message, tag) {
        return None;
    }
    String::from_utf8(message).ok()
}

/// A 303 redirect to `location` that shows `message` on the page it lands on.
pub(crate) fn redirect(state: &ConsoleState, secure: bool, location: &str, message: &str) -> Response {
    let mut response = see_other(location);
    let cookie = cookies::set(cookies::FLASH, &encode(state, message), cookies::FLASH_MAX_AGE_SECS, secure);
    response.headers_mut().append(SET_COOKIE, cookie);
    response
}

/// A plain 303 See Other, so the browser follows a POST with a GET.
pub(crate) fn see_other(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    // Locations are our own paths built from slugs and uuids: always header-safe.
    response.headers_mut().insert(LOCATION, HeaderValue::from_str(location).expect("a header-safe path"));
    response
}
