//! A form's POST body, read once and parsed by its content type: `multipart/form-data` (the send
//! form, whose file input uploads a binary body) or, for anything else, as
//! `application/x-www-form-urlencoded` (every other form). The CSRF guard (`csrf::guard`) reads the
//! body under the route's limit (`csrf::body_limit`), parses it here, checks the token among the
//! parsed fields and hands them on in the request's extensions, so a handler's `FormData` holds the
//! very fields that were checked, and the one-time id (`once`) is read from them alike, whichever
//! the encoding.

use crate::error::ConsoleError;
use crate::extract::FormData;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Multipart, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;

/// A file sent with a multipart form.
#[derive(Clone)]
pub(crate) struct Upload {
    /// The form field it came in.
    pub field: String,
    /// The name the browser gave it; empty when the file input was left empty.
    pub file_name: String,
    /// The part's content type, when it had one.
    pub content_type: Option<String>,
    pub bytes: Bytes,
}

/// Whether the request's body is `multipart/form-data`.
fn is_multipart(parts: &Parts) -> bool {
    parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().to_ascii_lowercase().starts_with("multipart/form-data"))
}

/// The fields (and files) of `bytes`, the whole body of the request `parts` heads.
pub(crate) async fn parse(parts: &Parts, bytes: Bytes) -> Result<FormData, ConsoleError> {
    if !is_multipart(parts) {
        return Ok(FormData::new(form_urlencoded::parse(&bytes).into_owned().collect(), Vec::new()));
    }
    let unreadable = || ConsoleError::BadRequest("The form could not be read: send it again.".into());
    // The body is already read whole under the route's limit; `Multipart` is given it with the
    // request's headers and extensions (the router lifts axum's default limit, `lib.rs`).
    let mut request = Request::new(Body::from(bytes));
    *request.headers_mut() = parts.headers.clone();
    *request.extensions_mut() = parts.extensions.clone();
    let mut multipart = Multipart::from_request(request, &()).await.map_err(|_| unreadable())?;
    let (mut fields, mut files) = (Vec::new(), Vec::new());
    while let Some(field) = multipart.next_field().await.map_err(|_| unreadable())? {
        let name = field.name().unwrap_or_default().to_owned();
        let file_name = field.file_name().map(str::to_owned);
        let content_type = field.content_type().map(str::to_owned);
        let data = field.bytes().await.map_err(|_| unreadable())?;
        match file_name {
            Some(file_name) => files.push(Upload { field: name, file_name, content_type, bytes: data }),
            // A text field as a browser sends it: UTF-8 (the page's charset).
            None => fields.push((name, String::from_utf8_lossy(&data).into_owned())),
        }
    }
    Ok(FormData::new(fields, files))
}
