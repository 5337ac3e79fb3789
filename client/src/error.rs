//! The client's error: the API's refusals by code, and the failures on the way to it.

use std::time::Duration;

/// The API's `error` codes (`docs/errors.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorCode {
    InvalidRequest,
    ReceiptInvalid,
    Unauthorized,
    PaymentRequired,
    Forbidden,
    QueueLimitReached,
    TeamSuspended,
    NotFound,
    MethodNotAllowed,
    Conflict,
    IdempotencyConflict,
    LeaseLost,
    QueuePaused,
    PushEnabled,
    OversizedMessagesStored,
    PayloadTooLarge,
    UnsupportedMediaType,
    MisdirectedRequest,
    RateLimited,
    ServiceUnavailable,
    ReplicationTimeout,
    StorageLimitReached,
    Internal,
    /// A code this client does not know (a newer server), or `http_<status>` for an answer
    /// without the API's envelope.
    Other(String),
}

impl ErrorCode {
    pub fn parse(code: &str) -> Self {
        match code {
            "invalid_request" => Self::InvalidRequest,
            "receipt_invalid" => Self::ReceiptInvalid,
            "unauthorized" => Self::Unauthorized,
            "payment_required" => Self::PaymentRequired,
            "forbidden" => Self::Forbidden,
            "queue_limit_reached" => Self::QueueLimitReached,
            "team_suspended" => Self::TeamSuspended,
            "not_found" => Self::NotFound,
            "method_not_allowed" => Self::MethodNotAllowed,
            "conflict" => Self::Conflict,
            "idempotency_conflict" => Self::IdempotencyConflict,
            "lease_lost" => Self::LeaseLost,
            "queue_paused" => Self::QueuePaused,
            "push_enabled" => Self::PushEnabled,
            "oversized_messages_stored" => Self::OversizedMessagesStored,
            "payload_too_large" => Self::PayloadTooLarge,
            "unsupported_media_type" => Self::UnsupportedMediaType,
            "misdirected_request" => Self::MisdirectedRequest,
            "rate_limited" => Self::RateLimited,
            "service_unavailable" => Self::ServiceUnavailable,
            "replication_timeout" => Self::ReplicationTimeout,
            "storage_limit_reached" => Self::StorageLimitReached,
            "internal" => Self::Internal,
            other => Self::Other(other.to_owned()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Self::InvalidRequest => "invalid_request",
            Self::ReceiptInvalid => "receipt_invalid",
            Self::Unauthorized => "unauthorized",
            Self::PaymentRequired => "payment_required",
            Self::Forbidden => "forbidden",
            Self::QueueLimitReached => "queue_limit_reached",
            Self::TeamSuspended => "team_suspended",
            Self::NotFound => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::Conflict => "conflict",
            Self::IdempotencyConflict => "idempotency_conflict",
            Self::LeaseLost => "lease_lost",
            Self::QueuePaused => "queue_paused",
            Self::PushEnabled => "push_enabled",
            Self::OversizedMessagesStored => "oversized_messages_stored",
            Self::PayloadTooLarge => "payload_too_large",
            Self::UnsupportedMediaType => "unsupported_media_type",
            Self::MisdirectedRequest => "misdirected_request",
            Self::RateLimited => "rate_limited",
            Self::ServiceUnavailable => "service_unavailable",
            Self::ReplicationTimeout => "replication_timeout",
            Self::StorageLimitReached => "storage_limit_reached",
            Self::Internal => "internal",
            Self::Other(code) => code,
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The service refused the request: a non-2xx answer with `{"error", "message"}`.
    #[error("{status} {code}: {message}")]
    Api {
        code: ErrorCode,
        status: u16,
        message: String,
        /// For a batch publish: the entry the error is about.
        index: Option<usize>,
        retry_after: Option<Duration>,
    },
    /// Refused here before anything was sent (more than 100 entries, an empty batch, ...).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// The service could not be reached, or its answer could not be read.
    #[error("transport: {0}")]
    Transport(#[from] reqwest::Error),
    #[error("unexpected answer: {0}")]
    Decode(#[from] serde_json::Error),
}

impl Error {
    /// The API's code, for a refusal by the service (`InvalidRequest` for one refused here).
    pub fn code(&self) -> Option<&ErrorCode> {
        match self {
            Self::Api { code, .. } => Some(code),
            Self::Invalid(_) => Some(&ErrorCode::InvalidRequest),
            _ => None,
        }
    }

    /// The HTTP status of a refusal by the service.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Api { status, .. } => Some(*status),
            _ => None,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    /// Every code of the table in `docs/errors.md`, and `internal`, is one this client knows and
    /// names back as itself.
    #[test]
    fn every_documented_code_is_known() {
        let table = include_str!("../../docs/errors.md");
        let codes: Vec<&str> = table
            .lines()
            .filter(|line| line.starts_with("| 4") || line.starts_with("| 5"))
            .filter_map(|line| line.split('`').nth(1))
            .chain(["internal"])
            .collect();
        assert!(codes.len() > 20, "the table was not read: {codes:?}");
        for code in codes {
            let parsed = ErrorCode::parse(code);
            assert!(!matches!(parsed, ErrorCode::Other(_)), "{code} is not known to the client");
            assert_eq!(parsed.as_str(), code);
        }
    }
}
