//! Response headers of every console response: pages are never cached (some show a secret once)
//! nor framed (clickjacking), the CSP allows only our own stylesheet and script, and a flash
//! message is cleared once a page has shown it.

use crate::cookies::{self, Cookies};
use crate::state::ConsoleState;
use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::http::header::{self, CACHE_CONTROL, CONTENT_TYPE, SET_COOKIE};
use axum::middleware::Next;
use axum::response::Response;

const CSP: &str = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

pub(crate) async fn page_headers(State(state): State<ConsoleState>, request: Request, next: Next) -> Response {
    let had_flash = Cookies::from_headers(request.headers()).get(cookies::FLASH).is_some();
    let secure = cookies::is_secure(state.https(), request.headers());
    let mut response = next.run(request).await;
    let is_page = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("text/html"));
    let headers = response.headers_mut();
    if !headers.contains_key(CACHE_CONTROL) {
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    if had_flash && is_page && response.status().is_success() {
        response.headers_mut().append(SET_COOKIE, cookies::clear(cookies::FLASH, secure));
    }
    response
}
