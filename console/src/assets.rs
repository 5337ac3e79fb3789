//! The stylesheet and script, compiled into the binary. Their addresses carry a hash of their
//! content, so a browser may cache them for a year and still never runs a stale one.

use axum::extract::Path;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::sync::LazyLock;

const CSS: &str = include_str!("../static/console.css");
const JS: &str = include_str!("../static/console.js");

static CSS_HREF: LazyLock<String> = LazyLock::new(|| href("console.css", CSS));
static JS_HREF: LazyLock<String> = LazyLock::new(|| href("console.js", JS));

fn href(name: &str, content: &str) -> String {
    let digest = Sha256::digest(content.as_bytes());
    format!("/static/{name}?v={}", hex::encode(&digest[..6]))
}

pub(crate) fn css_href() -> &'static str {
    &CSS_HREF
}

pub(crate) fn js_href() -> &'static str {
    &JS_HREF
}

pub(crate) async fn serve(Path(file): Path<String>) -> Response {
    let (content_type, body) = match file.as_str() {
        "console.css" => ("text/css; charset=utf-8", CSS),
        "console.js" => ("text/javascript; charset=utf-8", JS),
        _ => return crate::error::ConsoleError::NotFound.into_response(),
    };
    ([(CONTENT_TYPE, content_type), (CACHE_CONTROL, "public, max-age=31536000, immutable")], body).into_response()
}
