//! Maps PostgreSQL failures to `ApiError` in one place: an unreachable database is a 503 the
//! client may retry, a unique-constraint violation is a 409, anything else a logged 500.

use aqs_core::ApiError;

/// Use as `.map_err(db_error)` on every sqlx call that serves a request.
pub(crate) fn db_error(err: sqlx::Error) -> ApiError {
    match &err {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) | sqlx::Error::Tls(_) => {
            tracing::warn!(error = %err, "postgres unreachable");
            ApiError::unavailable("the database")
        }
        sqlx::Error::Database(db) if db.is_unique_violation() => ApiError::Conflict(conflict_message(db.constraint())),
        _ => ApiError::Internal(anyhow::Error::new(err).context("postgres")),
    }
}

/// Says what already exists, by the name of the violated unique index (see `migrations/`).
fn conflict_message(constraint: Option<&str>) -> String {
    match constraint {
        Some("members_email_key") => "a member with this email already exists".into(),
        Some("queues_live_slug_key") => "a queue with this slug already exists".into(),
        Some("hosts_hostname_key") => "this hostname is already in use by another host".into(),
        Some("domains_member_name_key") => "you already added this domain".into(),
        Some("callback_urls_member_prefix_key") => {
            "this callback URL prefix is already authorised for the member".into()
        }
        _ => "this already exists".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_failures_are_503() {
        assert_eq!(db_error(sqlx::Error::PoolTimedOut).code(), "service_unavailable");
        assert_eq!(db_error(sqlx::Error::RowNotFound).code(), "internal");
        assert!(conflict_message(Some("members_email_key")).contains("email"));
    }
}
