//! Field errors: a form's problems, each shown beside its field, plus at most one for the whole
//! form. The control plane names the field of each validation error (`ApiError::InvalidField`),
//! and the console's inputs carry the same names, so its checks stay the only source of truth and
//! land beside the right input.

use crate::error::ConsoleError;
use aqs_core::ApiError;

#[derive(Debug, Default)]
pub(crate) struct FieldErrors {
    fields: Vec<(&'static str, String)>,
    /// A problem that belongs to no single field (e.g. "wrong email or password").
    pub form: Option<String>,
}

impl FieldErrors {
    pub(crate) fn add(&mut self, field: &'static str, message: impl Into<String>) {
        if self.get(field).is_none() {
            self.fields.push((field, sentence(&message.into())));
        }
    }

    /// The error of `field`, for the template.
    pub(crate) fn get(&self, field: &str) -> Option<&str> {
        self.fields.iter().find(|(f, _)| *f == field).map(|(_, m)| m.as_str())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.fields.is_empty() && self.form.is_none()
    }

    /// The same errors with `from`'s moved to `to`: for a page with two forms whose inputs share
    /// a name the control plane uses (`name`).
    pub(crate) fn rename(mut self, from: &str, to: &'static str) -> Self {
        for (field, _) in &mut self.fields {
            if *field == from {
                *field = to;
            }
        }
        self
    }

    pub(crate) fn set_form(&mut self, message: impl Into<String>) {
        self.form = Some(sentence(&message.into()));
    }

    /// Adds the errors of each control-plane refusal in `found` (see `from_api`).
    pub(crate) fn add_api(&mut self, found: Vec<ApiError>, fields: &[&'static str]) -> Result<(), ConsoleError> {
        for err in found {
            let more = Self::from_api(err, fields)?;
            for (field, message) in more.fields {
                if self.get(field).is_none() {
                    self.fields.push((field, message));
                }
            }
            if self.form.is_none() {
                self.form = more.form;
            }
        }
        Ok(())
    }

    /// Turns a control-plane refusal into errors on the form whose inputs are `fields`. Faults that
    /// are not the member's to fix (not found, unavailable, internal) stay errors of the page.
    pub(crate) fn from_api(err: ApiError, fields: &[&'static str]) -> Result<Self, ConsoleError> {
        let mut errors = Self::default();
        match err {
            ApiError::InvalidField { field, message } => match fields.iter().find(|f| **f == field) {
                Some(field) => errors.add(field, message),
                None => errors.set_form(format!("{field}: {message}")),
            },
            ApiError::InvalidRequest(message) => errors.set_form(message),
            ApiError::Conflict(message) | ApiError::QueueLimitReached(message) => errors.set_form(message),
            other => return Err(other.into()),
        }
        Ok(errors)
    }
}

/// "must be between 1 and 100" → "Must be between 1 and 100."
pub(crate) fn sentence(text: &str) -> String {
    let text = text.trim();
    let mut chars = text.chars();
    let mut out: String = chars.next().map(|c| c.to_uppercase().collect()).unwrap_or_default();
    out.push_str(chars.as_str());
    if !out.ends_with(['.', '!', '?']) {
        out.push('.');
    }
    out
}

/// Parses a whole number from a form field; an error beside the field otherwise. Empty means
/// "use the default" where `default` is given.
pub(crate) fn number<T: std::str::FromStr>(
    errors: &mut FieldErrors,
    field: &'static str,
    text: &str,
    default: Option<T>,
) -> Option<T> {
    let text = text.trim();
    if text.is_empty() {
        if default.is_none() {
            errors.add(field, "enter a whole number");
        }
        return default;
    }
    match text.parse() {
        Ok(value) => Some(value),
        Err(_) => {
            errors.add(field, "enter a whole number, such as 30");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_plane_messages_land_beside_their_field() {
        let err = ApiError::field("max_attempts", "must be between 1 and 100");
        let errors = FieldErrors::from_api(err, &["name", "max_attempts"]).unwrap();
        assert_eq!(errors.get("max_attempts"), Some("Must be between 1 and 100."));
        // A field this form has no input for, and a message that only looks like one: the form's.
        let err = ApiError::field("scopes", "give at least one");
        let errors = FieldErrors::from_api(err, &["name"]).unwrap();
        assert_eq!(errors.form.as_deref(), Some("Scopes: give at least one."));
        let err = ApiError::invalid("name: is not a field here");
        let errors = FieldErrors::from_api(err, &["name"]).unwrap();
        assert!(errors.get("name").is_none());
        assert_eq!(errors.form.as_deref(), Some("Name: is not a field here."));
        assert!(FieldErrors::from_api(ApiError::not_found("x"), &[]).is_err());
    }

    #[test]
    fn numbers_are_checked() {
        let mut errors = FieldErrors::default();
        assert_eq!(number::<u32>(&mut errors, "a", " 7 ", None), Some(7));
        assert_eq!(number::<u32>(&mut errors, "b", "", Some(30)), Some(30));
        assert_eq!(number::<u32>(&mut errors, "c", "x", Some(30)), None);
        assert_eq!(number::<u32>(&mut errors, "d", "", None), None);
        assert!(errors.get("a").is_none() && errors.get("b").is_none());
        assert!(errors.get("c").is_some() && errors.get("d").is_some());
    }
}
