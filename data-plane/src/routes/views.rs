//! JSON shapes shared by several routes, and the conversions from engine records.

use aqs_core::error::{ApiError, ApiResult};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

/// The `{slug}` of every per-queue route.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub struct QueuePath {
    /// The queue's slug (a custom host serves the same routes at `/`, without it).
    slug: String,
}

/// `?limit=`: how many to list.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct LimitQuery {
    /// 1 to 100, default 10.
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u32>,
}

pub fn base64(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Stored attributes ("" for none) back to a JSON object.
pub fn attributes(stored: &str) -> Value {
    if stored.is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(stored).unwrap_or_else(|_| Value::Object(Default::default()))
}

/// Parses `?limit=` (1..=100, default 10) from a raw query string.
pub fn limit_param(query: Option<&str>) -> ApiResult<u32> {
    let raw = query.unwrap_or_default().split('&').find_map(|pair| pair.strip_prefix("limit="));
    match raw {
        None => Ok(10),
        Some(text) => match text.parse::<u32>() {
            Ok(n) if (1..=100).contains(&n) => Ok(n),
            _ => Err(ApiError::invalid("limit must be an integer from 1 to 100")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_defaults_and_bounds() {
        assert_eq!(limit_param(None).unwrap(), 10);
        assert_eq!(limit_param(Some("a=1&limit=100")).unwrap(), 100);
        assert!(limit_param(Some("limit=0")).is_err());
        assert!(limit_param(Some("limit=101")).is_err());
        assert!(limit_param(Some("limit=x")).is_err());
    }
}
