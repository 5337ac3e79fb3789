//! What a member may set on a queue (name, visibility timeout, attempts, payload size, storage
//! limit), the request bodies that carry them, and the range checks, each naming its field.

use aqs_core::limits::{
    MAX_ATTEMPTS_DEFAULT, MAX_ATTEMPTS_MAX, MAX_ATTEMPTS_MIN, MIB, PAYLOAD_SIZE_DEFAULT, PAYLOAD_SIZES,
    STORAGE_DEFAULT, STORAGE_MAX, STORAGE_MIN, VISIBILITY_DEFAULT_SECS, VISIBILITY_MAX_SECS, VISIBILITY_MIN_SECS,
};
use aqs_core::{ApiError, ApiResult};
use serde::Deserialize;

pub const NAME_MAX_CHARS: usize = crate::text::NAME_MAX_CHARS;

/// `POST /api/v1/queues`: a name and optional settings, each with its default.
#[derive(Clone, Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewQueue {
    /// 1 to 64 characters; the slug is made from it.
    #[schema(min_length = 1, max_length = 64)]
    pub name: String,
    /// 1 s to 12 h; default 30.
    #[schema(minimum = 1, maximum = 43200)]
    pub visibility_timeout_seconds: Option<u32>,
    /// 1 to 100; default 5.
    #[schema(minimum = 1, maximum = 100)]
    pub max_attempts: Option<u32>,
    /// Bytes: 1 MiB (default), or 10 or 50 MiB as a paid add-on.
    pub payload_size: Option<u64>,
    /// Bytes: 1 MiB to 100 GiB; default 1 GiB.
    #[schema(minimum = 1048576, maximum = 107374182400_u64)]
    pub storage_limit: Option<u64>,
}

/// `PATCH /api/v1/queues/{slug}`: any subset of the settings. The slug never changes.
#[derive(Clone, Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QueueChanges {
    #[schema(min_length = 1, max_length = 64)]
    pub name: Option<String>,
    #[schema(minimum = 1, maximum = 43200)]
    pub visibility_timeout_seconds: Option<u32>,
    #[schema(minimum = 1, maximum = 100)]
    pub max_attempts: Option<u32>,
    /// Bytes: 1, 10 or 50 MiB (the larger two are paid add-ons).
    pub payload_size: Option<u64>,
    #[schema(minimum = 1048576, maximum = 107374182400_u64)]
    pub storage_limit: Option<u64>,
}

/// A complete, checked set of settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub name: String,
    pub visibility_timeout_seconds: u32,
    pub max_attempts: u32,
    pub payload_size: u64,
    pub storage_limit: u64,
}

impl NewQueue {
    pub fn check(self) -> ApiResult<Settings> {
        Ok(Settings {
            name: crate::text::checked_name(&self.name)?,
            visibility_timeout_seconds: check_visibility(
                self.visibility_timeout_seconds.unwrap_or(VISIBILITY_DEFAULT_SECS),
            )?,
            max_attempts: check_attempts(self.max_attempts.unwrap_or(MAX_ATTEMPTS_DEFAULT))?,
            payload_size: check_payload_size(self.payload_size.unwrap_or(PAYLOAD_SIZE_DEFAULT))?,
            storage_limit: check_storage_limit(self.storage_limit.unwrap_or(STORAGE_DEFAULT))?,
        })
    }
}

impl QueueChanges {
    /// Every given field's problem at once (`check` stops at the first), for a form that shows
    /// each beside its field.
    pub fn problems(&self) -> Vec<ApiError> {
        let mut found = Vec::new();
        if let Some(Err(err)) = self.name.as_deref().map(crate::text::checked_name) {
            found.push(err);
        }
        if let Some(Err(err)) = self.visibility_timeout_seconds.map(check_visibility) {
            found.push(err);
        }
        if let Some(Err(err)) = self.max_attempts.map(check_attempts) {
            found.push(err);
        }
        if let Some(Err(err)) = self.payload_size.map(check_payload_size) {
            found.push(err);
        }
        if let Some(Err(err)) = self.storage_limit.map(check_storage_limit) {
            found.push(err);
        }
        found
    }

    /// Checks every given field; what is absent stays `None`.
    pub fn check(self) -> ApiResult<Self> {
        Ok(Self {
            name: self.name.as_deref().map(crate::text::checked_name).transpose()?,
            visibility_timeout_seconds: self.visibility_timeout_seconds.map(check_visibility).transpose()?,
            max_attempts: self.max_attempts.map(check_attempts).transpose()?,
            payload_size: self.payload_size.map(check_payload_size).transpose()?,
            storage_limit: self.storage_limit.map(check_storage_limit).transpose()?,
        })
    }
}

fn check_visibility(secs: u32) -> ApiResult<u32> {
    in_range("visibility_timeout_seconds", secs, VISIBILITY_MIN_SECS, VISIBILITY_MAX_SECS)
}

fn check_attempts(attempts: u32) -> ApiResult<u32> {
    in_range("max_attempts", attempts, MAX_ATTEMPTS_MIN, MAX_ATTEMPTS_MAX)
}

fn check_payload_size(bytes: u64) -> ApiResult<u64> {
    if PAYLOAD_SIZES.contains(&bytes) {
        return Ok(bytes);
    }
    let allowed: Vec<String> = PAYLOAD_SIZES.iter().map(|size| format!("{size} ({} MiB)", size / MIB)).collect();
    Err(ApiError::field("payload_size", format!("choose one of {}", allowed.join(", "))))
}

fn check_storage_limit(bytes: u64) -> ApiResult<u64> {
    in_range("storage_limit", bytes, STORAGE_MIN, STORAGE_MAX)
}

fn in_range<T: PartialOrd + std::fmt::Display + Copy>(field: &str, value: T, min: T, max: T) -> ApiResult<T> {
    if value < min || value > max {
        return Err(ApiError::field(field, format!("must be between {min} and {max}")));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_what_is_missing() {
        let settings = NewQueue { name: "  jobs ".into(), ..Default::default() }.check().unwrap();
        assert_eq!(
            settings,
            Settings {
                name: "jobs".into(),
                visibility_timeout_seconds: 30,
                max_attempts: 5,
                payload_size: MIB,
                storage_limit: STORAGE_DEFAULT
            }
        );
    }

    #[test]
    fn each_error_names_its_field() {
        let err = |q: NewQueue| q.check().unwrap_err().to_string();
        let named = |name: &str| NewQueue { name: name.into(), ..Default::default() };
        assert!(err(named("   ")).starts_with("name"));
        assert!(err(named(&"n".repeat(65))).starts_with("name"));
        assert!(named(&"n".repeat(64)).check().is_ok());
        assert!(err(NewQueue { visibility_timeout_seconds: Some(0), ..named("q") }).starts_with("visibility"));
        assert!(err(NewQueue { max_attempts: Some(101), ..named("q") }).starts_with("max_attempts"));
        assert!(err(NewQueue { payload_size: Some(2 * MIB), ..named("q") }).starts_with("payload_size"));
        assert!(err(NewQueue { storage_limit: Some(MIB - 1), ..named("q") }).starts_with("storage_limit"));
    }
}
