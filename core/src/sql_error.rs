//! PostgreSQL failures as [`ApiError`], so that the control plane's services use `?` on every
//! sqlx call: an unreachable database is a 503 the client may retry (the cause kept for the log
//! line), a unique-constraint violation a 409 that says what already exists, anything else a 500.
//!
//! Nothing is logged here: the answer logs once (`ApiError`'s `IntoResponse`, at most once per
//! [`crate::error::OUTAGE_LOG_EVERY`] for an outage), and a background loop logs its own failure.
//! Only the control plane talks to PostgreSQL, so this is behind the `postgres` feature and the
//! data plane's build never compiles sqlx.

use crate::ApiError;

impl From<sqlx::Error> for ApiError {
    fn from(err: sqlx::Error) -> Self {
        match &err {
            sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) | sqlx::Error::Tls(_) => {
                Self::unavailable_because("the database", &err)
            }
            sqlx::Error::Database(db) if db.is_unique_violation() => Self::Conflict(conflict_message(db.constraint())),
            _ => Self::Internal(anyhow::Error::new(err).context("postgres")),
        }
    }
}

/// The unique indexes whose violation has its own message (their names as `migrations/` leaves
/// them), and the message.
const CONFLICTS: [(&str, &str); 6] = [
    ("members_email_key", "a member with this email already exists"),
    ("queues_live_slug_key", "a queue with this slug already exists"),
    ("hosts_hostname_key", "this hostname is already in use by another host"),
    ("domains_team_name_key", "your team already added this domain"),
    ("domains_verified_name_key", "another team holds this domain verified"),
    ("callback_urls_team_prefix_key", "this callback URL prefix is already authorised for the team"),
];

/// Says what already exists, by the name of the violated unique index.
fn conflict_message(constraint: Option<&str>) -> String {
    let known = CONFLICTS.iter().find(|(name, _)| Some(*name) == constraint);
    known.map_or("this already exists", |(_, message)| message).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_is_503_with_its_cause_for_the_log_and_not_for_the_client() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let err = ApiError::from(sqlx::Error::Io(refused));
        assert_eq!(err.code(), "service_unavailable");
        let ApiError::ServiceUnavailable { message, cause, .. } = &err else { panic!("{err:?}") };
        assert_eq!(message, "the database is temporarily unavailable; retry shortly");
        assert!(cause.as_deref().is_some_and(|c| c.contains("refused")), "{cause:?}");
        assert!(err.to_string().contains("refused"), "the Display a loop logs keeps the cause");
        assert_eq!(ApiError::from(sqlx::Error::PoolTimedOut).code(), "service_unavailable");
        assert_eq!(ApiError::from(sqlx::Error::RowNotFound).code(), "internal");
        assert!(conflict_message(Some("members_email_key")).contains("email"));
    }

    /// A renamed index would silently turn its conflict into "this already exists".
    #[test]
    fn every_named_index_exists_under_that_name_after_the_migrations() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../migrations");
        let mut sql = String::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            sql.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap());
        }
        for (name, _) in CONFLICTS {
            assert!(sql.contains(name), "no migration makes {name}");
            assert!(!sql.contains(&format!("ALTER INDEX {name} RENAME")), "{name} was renamed");
        }
    }
}
