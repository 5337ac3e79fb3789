//! Timestamps in API bodies: RFC 3339 in UTC with second precision (`2026-11-03T12:00:00Z`), the
//! form the product documentation shows.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serializer;

pub(crate) fn rfc3339<S: Serializer>(at: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&at.to_rfc3339_opts(SecondsFormat::Secs, true))
}

pub(crate) fn rfc3339_opt<S: Serializer>(at: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match at {
        Some(at) => rfc3339(at, s),
        None => s.serialize_none(),
    }
}
