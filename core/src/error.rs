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

/// An error answer's JSON, kept on the response so that the server can add the request's id to it
/// (`aqs::request_id`) without parsing the body back.
#[derive(Clone, Debug)]
pub struct ErrorBody(pub serde_json::Value);

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    InvalidRequest(String),
    /// One field of the request is wrong: said as `field: message`, and the answer names the field
    /// (`"field"`), so that a form can show the message beside its input without parsing text.
    #[error("{field}: {message}")]
    InvalidField { field: String, message: String },
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
    /// A request on the TLS listener whose `Host` is not the name the connection was opened for
    /// (SNI): it is answered by no route, whatever the name.
    #[error("{0}")]
    MisdirectedRequest(String),
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
    /// An operator suspended the team: its tokens and management keys are refused, its members
    /// may only read.
    #[error("{0}")]
    TeamSuspended(String),
    /// A token spent its budget of `limit` requests per `window_secs`: answered with `Retry-After`
    /// and the IETF draft's `RateLimit-*` headers.
    #[error("{message}")]
    RateLimited { message: String, retry_after_secs: u64, limit: u64, window_secs: u64 },
    /// A store cannot be reached. `message` is the answer's; `cause` (the store's own error) is
    /// for the log line only.
    #[error("{message}{}", cause.as_deref().map(|c| format!(" ({c})")).unwrap_or_default())]
    ServiceUnavailable { message: String, retry_after_secs: u64, cause: Option<String> },
    /// Fewer replicas than `AQS_REDIS_REPLICA_ACKS` confirmed a write in time: the write may exist,
    /// so a retry must be one that cannot store twice (an idempotency key, an ack).
    #[error("{0}")]
    ReplicationTimeout(String),
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

    /// `field` is wrong, as `message` says (e.g. `field("max_attempts", "must be between 1 and 100")`).
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidField { field: field.into(), message: message.into() }
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::NotFound(message.into())
    }

    /// Redis or PostgreSQL cannot be reached: the caller should retry shortly.
    pub fn unavailable(what: &str) -> Self {
        Self::outage(what, None)
    }

    /// [`ApiError::unavailable`], keeping the store's error (with its sources) for the log line.
    pub fn unavailable_because(what: &str, cause: &(dyn std::error::Error + 'static)) -> Self {
        Self::outage(what, Some(error_chain(cause)))
    }

    /// `what` cannot be reached now; `cause` (for the log line only) says why, when known.
    pub fn outage(what: &str, cause: Option<String>) -> Self {
        Self::ServiceUnavailable {
            message: format!("{what} is temporarily unavailable; retry shortly"),
            retry_after_secs: 1,
            cause,
        }
    }

    /// What the client is told: a server fault's detail (an internal error, an outage's cause)
    /// stays in the log.
    pub fn client_message(&self) -> String {
        match self {
            Self::Internal(_) => "internal error; the request may be retried".to_owned(),
            Self::ServiceUnavailable { message, .. } | Self::ReplicationTimeout(message) => message.clone(),
            Self::InBatch { index, source } => format!("messages[{index}]: {}", source.client_message()),
            other => other.to_string(),
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            Self::InvalidRequest(_) | Self::InvalidField { .. } | Self::ReceiptInvalid(_) => StatusCode::BAD_REQUEST,
            Self::InBatch { source, .. } => source.status(),
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) | Self::QueueLimitReached(_) | Self::TeamSuspended(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            Self::MisdirectedRequest(_) => StatusCode::MISDIRECTED_REQUEST,
            Self::Conflict(_)
            | Self::IdempotencyConflict(_)
            | Self::LeaseLost(_)
            | Self::QueuePaused(_)
            | Self::PushEnabled(_) => StatusCode::CONFLICT,
            Self::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::StorageLimitReached(_) => StatusCode::INSUFFICIENT_STORAGE,
            Self::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::ServiceUnavailable { .. } | Self::ReplicationTimeout(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::PaymentRequired { .. } => StatusCode::PAYMENT_REQUIRED,
            Self::OversizedMessagesStored { .. } => StatusCode::CONFLICT,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable machine-readable code clients switch on.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidRequest(_) | Self::InvalidField { .. } => "invalid_request",
            Self::InBatch { source, .. } => source.code(),
            Self::Unauthorized(_) => "unauthorized",
            Self::Forbidden(_) => "forbidden",
            Self::NotFound(_) => "not_found",
            Self::MethodNotAllowed(_) => "method_not_allowed",
            Self::MisdirectedRequest(_) => "misdirected_request",
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
            Self::TeamSuspended(_) => "team_suspended",
            Self::RateLimited { .. } => "rate_limited",
            Self::ServiceUnavailable { .. } => "service_unavailable",
            Self::ReplicationTimeout(_) => "replication_timeout",
            Self::PaymentRequired { .. } => "payment_required",
            Self::OversizedMessagesStored { .. } => "oversized_messages_stored",
            Self::Internal(_) => "internal",
        }
    }

    /// The error itself, out of its batch wrapper.
    fn unbatched(&self) -> &Self {
        match self {
            Self::InBatch { source, .. } => source.unbatched(),
            other => other,
        }
    }

    fn retry_after(&self) -> Option<u64> {
        match self {
            Self::RateLimited { retry_after_secs, .. } | Self::ServiceUnavailable { retry_after_secs, .. } => {
                Some(*retry_after_secs)
            }
            Self::ReplicationTimeout(_) => Some(1),
            Self::InBatch { source, .. } => source.retry_after(),
            _ => None,
        }
    }
}

/// Whether Redis cannot serve right now but will again: unreachable, or still loading its dataset
/// after a restart (the window grows with the AOF), or mid-failover (a cluster without a primary
/// for a slot, or a server that was the primary and is a read-only replica now).
pub fn redis_is_unavailable(err: &redis::RedisError) -> bool {
    use redis::{ErrorKind, ServerErrorKind};
    err.is_io_error()
        || err.is_connection_dropped()
        || err.is_timeout()
        || err.is_connection_refusal()
        || matches!(
            err.kind(),
            ErrorKind::Server(
                ServerErrorKind::BusyLoading
                    | ServerErrorKind::ClusterDown
                    | ServerErrorKind::MasterDown
                    | ServerErrorKind::ReadOnly
            )
        )
}

/// `err` and its sources in one line, each cause said once (some errors, redis's among them,
/// already print their source).
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut chain = err.to_string();
    let mut source = err.source();
    while let Some(err) = source {
        let text = err.to_string();
        if !chain.contains(&text) {
            chain.push_str(": ");
            chain.push_str(&text);
        }
        source = err.source();
    }
    chain
}

/// Nothing is logged here: the 503 is logged where it is answered ([`IntoResponse`], at most once
/// per [`OUTAGE_LOG_EVERY`]) and a background loop logs its own outage once, so an outage is not
/// logged once per failed call.
impl From<redis::RedisError> for ApiError {
    fn from(err: redis::RedisError) -> Self {
        if redis_is_unavailable(&err) {
            return Self::unavailable_because("storage", &err);
        }
        Self::Internal(anyhow::Error::new(err).context("redis"))
    }
}

/// How often a process says that it answers 503 while a store is away.
pub const OUTAGE_LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Logs a 503 answer at most once per [`OUTAGE_LOG_EVERY`], with its cause and how many went unsaid.
fn log_unavailable(message: &str, cause: Option<&str>) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST_SAID_S: AtomicU64 = AtomicU64::new(0);
    static UNSAID: AtomicU64 = AtomicU64::new(0);
    let now_s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let last = LAST_SAID_S.load(Ordering::Relaxed);
    if now_s >= last + OUTAGE_LOG_EVERY.as_secs()
        && LAST_SAID_S.compare_exchange(last, now_s, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    {
        let unsaid = UNSAID.swap(0, Ordering::Relaxed);
        match cause {
            Some(cause) => tracing::warn!(unsaid, cause, "answering 503: {message}"),
            None => tracing::warn!(unsaid, "answering 503: {message}"),
        }
    } else {
        UNSAID.fetch_add(1, Ordering::Relaxed);
    }
}

/// A refusal's `RateLimit-*` headers (draft-ietf-httpapi-ratelimit-headers): the budget, none of
/// it left, and the seconds until a request is admitted again (the same as `Retry-After`).
fn rate_limit_headers(headers: &mut header::HeaderMap, limit: u64, window_secs: u64, reset_secs: u64) {
    headers.insert("ratelimit-limit", HeaderValue::from(limit));
    headers.insert("ratelimit-remaining", HeaderValue::from(0));
    headers.insert("ratelimit-reset", HeaderValue::from(reset_secs));
    if let Ok(policy) = HeaderValue::try_from(format!("{limit};w={window_secs}")) {
        headers.insert("ratelimit-policy", policy);
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        match self.unbatched() {
            Self::Internal(err) => tracing::error!(error = ?err, "internal error"),
            Self::ServiceUnavailable { message, cause, .. } => log_unavailable(message, cause.as_deref()),
            Self::ReplicationTimeout(message) => log_unavailable(message, None),
            _ => {}
        }
        let message = self.client_message();
        let mut body = json!({ "error": self.code(), "message": message });
        if let Self::InBatch { index, .. } = &self {
            body["index"] = json!(index);
        }
        if let Self::InvalidField { field, .. } = self.unbatched() {
            body["field"] = json!(field);
        }
        if let Self::PaymentRequired { setup_url, .. } = &self {
            body["setup_url"] = json!(setup_url);
        }
        if let Self::OversizedMessagesStored { count, .. } = &self {
            body["count"] = json!(count);
        }
        let mut response = (status, Json(&body)).into_response();
        response.extensions_mut().insert(ErrorBody(body));
        if let Some(secs) = self.retry_after() {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if let Self::RateLimited { retry_after_secs, limit, window_secs, .. } = self.unbatched() {
            rate_limit_headers(response.headers_mut(), *limit, *window_secs, *retry_after_secs);
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
    fn redis_loading_its_dataset_is_503_with_retry_after() {
        use redis::{ErrorKind, RedisError, ServerErrorKind};
        let loading = RedisError::from((
            ErrorKind::Server(ServerErrorKind::BusyLoading),
            "LOADING Redis is loading the dataset in memory",
        ));
        let response = ApiError::from(loading).into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
        let refused = RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert_eq!(ApiError::from(refused).code(), "service_unavailable");
        let script_error = RedisError::from((ErrorKind::Server(ServerErrorKind::ResponseError), "ERR bad script"));
        assert_eq!(ApiError::from(script_error).code(), "internal");
    }

    #[test]
    fn an_outage_names_each_cause_once() {
        let refused = redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        let ApiError::ServiceUnavailable { cause: Some(cause), .. } = ApiError::from(refused) else {
            panic!("a refused connection is an outage with its cause");
        };
        let said = std::io::Error::from(std::io::ErrorKind::ConnectionRefused).to_string();
        assert_eq!(cause.matches(&said).count(), 1, "{cause}");
    }

    #[test]
    fn rate_limited_carries_retry_after_and_the_ratelimit_headers() {
        let err =
            ApiError::RateLimited { message: "slow down".into(), retry_after_secs: 10, limit: 6, window_secs: 60 };
        let response = ApiError::InBatch { index: 0, source: Box::new(err) }.into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        let headers = response.headers();
        assert_eq!(headers[header::RETRY_AFTER], "10");
        assert_eq!(headers["ratelimit-limit"], "6");
        assert_eq!(headers["ratelimit-remaining"], "0");
        assert_eq!(headers["ratelimit-reset"], "10");
        assert_eq!(headers["ratelimit-policy"], "6;w=60");
    }

    /// Counts the events emitted while it is the default subscriber.
    #[derive(Default)]
    struct Counting(std::sync::atomic::AtomicUsize);

    impl tracing::Subscriber for Counting {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, _: &tracing::Event<'_>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    #[test]
    fn converting_a_redis_error_logs_nothing() {
        let counting = std::sync::Arc::new(Counting::default());
        tracing::subscriber::with_default(counting.clone(), || {
            for _ in 0..100 {
                let refused = redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
                assert_eq!(ApiError::from(refused).code(), "service_unavailable");
            }
        });
        assert_eq!(counting.0.load(std::sync::atomic::Ordering::Relaxed), 0, "the caller logs, once");
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
