//! `ApiError`: the one error type of every HTTP route, mapped to a status and to the JSON body
//! `{"error": "<code>", "message": "<for humans>"}` in one place.
//!
//! Client mistakes carry a message that tells the caller what to fix. Server faults are logged once,
//! here, and answered with an opaque message: internal detail never reaches a client.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

pub type ApiResult<T> = Result<T, ApiError>;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    InvalidRequest(String),
    /// A bad entry in a batch: the message names the problem, `index` the entry.
    #[error("messages[{index}]: {source}")]
    InBatch { index: usize, source: Box<ApiError> },
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    IdempotencyConflict(String),
    #[error("{0}")]
    ReceiptInvalid(String),
    #[error("{0}")]
    LeaseLost(String),
    #[error("{0}")]
    PayloadTooLarge(String),
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("{0}")]
    QueuePaused(String),
    /// The queue delivers by push: pull consumers may not lease from it.
    #[error("{0}")]
    PushEnabled(String),
    #[error("{0}")]
    StorageLimitReached(String),
    #[error("{0}")]
    QueueLimitReached(String),
    #[error("{message}")]
    RateLimited { message: String, retry_after_secs: u64 },
    #[error("{message}")]
    ServiceUnavailable { message: String, retry_after_secs: u64 },
    /// A paid add-on needs a payment method first: `setup_url` collects one.
    #[error("{message}")]
    PaymentRequired { message: String, setup_url: String },
    /// A smaller payload size while `count` stored messages are larger than it.
    #[error("{message}")]
    OversizedMessagesStored { message: String, count: u64 },
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl ApiError {
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidRequest(message.into())
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::NotFound(message.into())
    }

    /// Redis or PostgreSQL cannot be reached: the caller should retry shortly.
    pub fn unavailable(what: &str) -> Self {
        Self::ServiceUnavailable {
            message: format!("{what} is temporarily unavailable; retry shortly"),
            retry_after_secs: 1,
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::InvalidRequest(_) | Self::ReceiptInvalid(_) => StatusCode::BAD_REQUEST,
            Self::InBatch { source, .. } => source.status(),
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) | Self::QueueLimitReached(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            Self::Conflict(_)
            | Self::IdempotencyConflict(_)
            | Self::LeaseLost(_)
            | Self::QueuePaused(_)
            | Self::PushEnabled(_) => StatusCode::CONFLICT,
            Self::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::StorageLimitReached(_) => StatusCode::INSUFFICIENT_STORAGE,
            Self::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::ServiceUnavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Self::PaymentRequired { .. } => StatusCode::PAYMENT_REQUIRED,
            Self::OversizedMessagesStored { .. } => StatusCode::CONFLICT,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable machine-readable code clients switch on.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidRequest(_) => "invalid_request",
            Self::InBatch { source, .. } => source.code(),
            Self::Unauthorized(_) => "unauthorized",
            Self::Forbidden(_) => "forbidden",
            Self::NotFound(_) => "not_found",
            Self::MethodNotAllowed(_) => "method_not_allowed",
            Self::Conflict(_) => "conflict",
            Self::IdempotencyConflict(_) => "idempotency_conflict",
            Self::ReceiptInvalid(_) => "receipt_invalid",
            Self::LeaseLost(_) => "lease_lost",
            Self::PayloadTooLarge(_) => "payload_too_large",
            Self::UnsupportedMediaType(_) => "unsupported_media_type",
            Self::QueuePaused(_) => "queue_paused",
            Self::PushEnabled(_) => "push_enabled",
            Self::StorageLimitReached(_) => "storage_limit_reached",
            Self::QueueLimitReached(_) => "queue_limit_reached",
            Self::RateLimited { .. } => "rate_limited",
            Self::ServiceUnavailable { .. } => "service_unavailable",
            Self::PaymentRequired { .. } => "payment_required",
            Self::OversizedMessagesStored { .. } => "oversized_messages_stored",
            Self::Internal(_) => "internal",
        }
    }

    fn retry_after(&self) -> Option<u64> {
        match self {
            Self::RateLimited { retry_after_secs, .. } | Self::ServiceUnavailable { retry_after_secs, .. } => {
                Some(*retry_after_secs)
            }
            Self::InBatch { source, .. } => source.retry_after(),
            _ => None,
        }
    }
}

impl From<redis::RedisError> for ApiError {
    fn from(err: redis::RedisError) -> Self {
        if err.is_io_error() || err.is_connection_dropped() || err.is_timeout() || err.is_connection_refusal() {
            tracing::warn!(error = %err, "redis unreachable");
            return Self::unavailable("storage");
        }
        Self::Internal(anyhow::Error::new(err).context("redis"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let message = match &self {
            Self::Internal(err) => {
                tracing::error!(error = ?err, "internal error");
                "internal error; the request may be retried".to_owned()
            }
            other => other.to_string(),
        };
        let mut body = json!({ "error": self.code(), "message": message });
        if let Self::InBatch { index, .. } = &self {
            body["index"] = json!(index);
        }
        if let Self::PaymentRequired { setup_url, .. } = &self {
            body["setup_url"] = json!(setup_url);
        }
        if let Self::OversizedMessagesStored { count, .. } = &self {
            body["count"] = json!(count);
        }
        let mut response = (status, Json(body)).into_response();
        if let Some(secs) = self.retry_after() {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_errors_keep_the_inner_status_and_code() {
        let err = ApiError::InBatch { index: 3, source: Box::new(ApiError::PayloadTooLarge("too big".into())) };
        assert_eq!(err.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(err.code(), "payload_too_large");
        assert_eq!(err.to_string(), "messages[3]: too big");
    }

    #[test]
    fn billing_errors_carry_their_fields() {
        let err = ApiError::OversizedMessagesStored { message: "m".into(), count: 2 };
        assert_eq!((err.status(), err.code()), (StatusCode::CONFLICT, "oversized_messages_stored"));
        let err = ApiError::PaymentRequired { message: "m".into(), setup_url: "https://x".into() };
        assert_eq!((err.status(), err.code()), (StatusCode::PAYMENT_REQUIRED, "payment_required"));
    }

    #[test]
    fn unavailable_sets_retry_after() {
        let response = ApiError::unavailable("storage").into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
    }
}
