//! JSON shapes shared by several routes, and the conversions from engine records.

use aqs_core::error::{ApiError, ApiResult};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

/// The `{slug}` of every per-queue route (parsed as a `Slug` by `QueueContext`; this documents it).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub struct QueuePath {
    /// The queue's slug (a custom host serves the same routes at `/`, without it).
    slug: String,
}

/// `?limit=` of the list routes: parsed by `ApiQuery` into this struct, which also documents it.
#[derive(serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LimitQuery {
    /// 1 to 100, default 10.
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u32>,
}

impl LimitQuery {
    /// The limit asked for, or 10.
    pub fn limit(&self) -> ApiResult<u32> {
        match self.limit {
            None => Ok(10),
            Some(n) if (1..=100).contains(&n) => Ok(n),
            Some(_) => Err(ApiError::invalid("limit must be an integer from 1 to 100")),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_defaults_and_bounds() {
        let limit = |limit| LimitQuery { limit }.limit();
        assert_eq!(limit(None).unwrap(), 10);
        assert_eq!(limit(Some(100)).unwrap(), 100);
        assert!(limit(Some(0)).is_err());
        assert!(limit(Some(101)).is_err());
    }
}
