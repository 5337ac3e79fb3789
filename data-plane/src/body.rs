//! Reading a JSON request body under a limit that depends on the queue (its payload size), which
//! a static `DefaultBodyLimit` cannot express. Errors answer in our format, like `ApiJson`.

use aqs_core::error::{ApiError, ApiResult};
use axum::body::{Body, Bytes};
use axum::http::HeaderMap;
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http_body_util::{BodyExt, LengthLimitError, Limited};

/// Reads at most `limit` bytes of a JSON body; 415 without a JSON content type, 413 past the limit.
/// An empty body (with `Content-Length: 0` or none at all) is allowed when `allow_empty` (routes
/// whose fields are all optional, or that explain what to send).
pub async fn read(headers: &HeaderMap, body: Body, limit: u64, allow_empty: bool) -> ApiResult<Bytes> {
    let declared = headers.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit) {
        return Err(too_large(limit));
    }
    let json = is_json(headers);
    let may_be_empty = allow_empty && declared.is_none_or(|len| len == 0);
    if !json && !may_be_empty {
        return Err(unsupported());
    }
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let bytes = match Limited::new(body, limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) if err.downcast_ref::<LengthLimitError>().is_some() => return Err(too_large(limit as u64)),
        Err(_) => return Err(ApiError::invalid("the request body could not be read")),
    };
    // Without a length, only an empty body may come without a JSON content type.
    if !json && !bytes.is_empty() {
        return Err(unsupported());
    }
    Ok(bytes)
}

fn unsupported() -> ApiError {
    ApiError::UnsupportedMediaType("send the body as JSON with Content-Type: application/json".into())
}

/// Parses `bytes` as `T`; an empty body parses as `{}` when the caller allowed it.
pub fn parse<'a, T: serde::Deserialize<'a>>(bytes: &'a [u8]) -> ApiResult<T> {
    let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) { b"{}" } else { bytes };
    serde_json::from_slice(bytes).map_err(|err| match err.classify() {
        serde_json::error::Category::Data => ApiError::invalid(format!("invalid field: {err}")),
        _ => ApiError::invalid(format!("malformed JSON: {err}")),
    })
}

fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else { return false };
    let mime = value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    mime == "application/json" || (mime.starts_with("application/") && mime.ends_with("+json"))
}

fn too_large(limit: u64) -> ApiError {
    ApiError::PayloadTooLarge(format!("the request body is larger than this route accepts ({limit} bytes)"))
}
