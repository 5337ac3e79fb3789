//! The engine's own error: what storage fails with, in storage's terms. Every engine call returns
//! it; a route turns it into the API's answer with `?` (`From<StorageError> for ApiError` below,
//! the one place where a storage failure gets an HTTP status), and a background loop logs it as it
//! is, cause included.

use aqs_core::ApiError;
use aqs_core::error::{error_chain, redis_is_unavailable};

pub type StorageResult<T> = Result<T, StorageError>;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// Redis cannot be reached or cannot take writes now (down, loading its AOF, read-only, a
    /// failover under way): worth retrying shortly. `cause` (Redis's own error) is for the log.
    #[error("storage is unavailable: {cause}")]
    Unavailable { cause: String },
    /// Fewer replicas than `AQS_REDIS_REPLICA_ACKS` confirmed a write in time: it may be stored.
    #[error("{0}")]
    NotReplicated(String),
    /// A charged script refused the call: the token spent its budget of `limit` per window.
    #[error("rate limited: {limit} per {window_secs} s; retry after {retry_after_secs} s")]
    RateLimited { retry_after_secs: u64, limit: u64, window_secs: u64 },
    /// A script replied what it never replies (the message names the script), or Redis refused a
    /// command for a reason that is a bug here.
    #[error("{0:#}")]
    Unexpected(anyhow::Error),
}

impl From<redis::RedisError> for StorageError {
    fn from(err: redis::RedisError) -> Self {
        if redis_is_unavailable(&err) {
            return Self::Unavailable { cause: error_chain(&err) };
        }
        Self::Unexpected(anyhow::Error::new(err).context("redis"))
    }
}

impl From<anyhow::Error> for StorageError {
    fn from(err: anyhow::Error) -> Self {
        Self::Unexpected(err)
    }
}

impl From<StorageError> for ApiError {
    fn from(err: StorageError) -> Self {
        match err {
            StorageError::Unavailable { cause } => ApiError::outage("storage", Some(cause)),
            StorageError::NotReplicated(message) => ApiError::ReplicationTimeout(message),
            StorageError::RateLimited { retry_after_secs, limit, window_secs } => ApiError::RateLimited {
                message: "too many requests for this token; slow down".into(),
                retry_after_secs,
                limit,
                window_secs,
            },
            StorageError::Unexpected(err) => ApiError::Internal(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_is_a_503_with_its_cause_and_a_bug_a_500() {
        let refused = redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        let err = StorageError::from(refused);
        assert!(matches!(err, StorageError::Unavailable { .. }), "{err:?}");
        let api = ApiError::from(err);
        assert_eq!(api.code(), "service_unavailable");
        assert!(api.to_string().contains("refused"), "the cause stays for the log: {api}");

        let bug = StorageError::from(anyhow::anyhow!("publish.lua returned the status Paused"));
        assert_eq!(ApiError::from(bug).code(), "internal");
        let limited = StorageError::RateLimited { retry_after_secs: 2, limit: 10, window_secs: 1 };
        assert_eq!(ApiError::from(limited).code(), "rate_limited");
    }
}
