//! The checks of the forms whose control-plane call stops at its first problem (sign-up, tokens,
//! push target, password change, budget): each mirrors, with the control plane's own limits, the
//! problems a form can have, so that a refused form shows every field's error at once, as create
//! and settings do through `QueueChanges::problems`. They only add to a refusal: what is accepted
//! is still the control plane's decision alone, and it runs first.

use crate::fields::FieldErrors;
use aqs_control_plane::auth::{PASSWORD_MAX_CHARS, PASSWORD_MIN_CHARS};
use aqs_control_plane::billing::account::BUDGET_MAX_CENTS;
use aqs_control_plane::tokens::NAME_MAX_CHARS;
use aqs_core::push as limits;
use aqs_core::token::Scope;

fn password(errors: &mut FieldErrors, field: &'static str, text: &str) {
    let chars = text.chars().count();
    if chars < PASSWORD_MIN_CHARS {
        errors.add(field, format!("use at least {PASSWORD_MIN_CHARS} characters"));
    } else if chars > PASSWORD_MAX_CHARS {
        errors.add(field, format!("use at most {PASSWORD_MAX_CHARS} characters"));
    }
}

/// Sign-up: an email (the control plane checks its form further) and a password.
pub(crate) fn signup(errors: &mut FieldErrors, email: &str, pass: &str) {
    let email = email.trim();
    if email.is_empty() || !email.contains('@') {
        errors.add("email", "enter an email address, such as ada@example.com");
    }
    password(errors, "password", pass);
}

/// Password change: the current password given, the new one of an accepted length.
pub(crate) fn password_change(errors: &mut FieldErrors, current: &str, new: &str) {
    if current.is_empty() {
        errors.add("current_password", "enter your current password");
    }
    password(errors, "new_password", new);
}

/// A new token: a name and at least one known scope.
pub(crate) fn token(errors: &mut FieldErrors, name: &str, scopes: &[&str]) {
    let chars = name.trim().chars().count();
    if chars == 0 || chars > NAME_MAX_CHARS {
        errors.add("name", format!("use 1 to {NAME_MAX_CHARS} characters"));
    }
    if scopes.is_empty() {
        errors.add("scopes", "give at least one of send, consume, manage");
    } else if let Some(unknown) = scopes.iter().find(|s| Scope::parse(s.trim()).is_none()) {
        errors.add("scopes", format!("unknown scope {unknown:?}; use send, consume or manage"));
    }
}

/// A push target: a handler URL, and each number given within its range.
pub(crate) fn push(errors: &mut FieldErrors, handler_url: &str, numbers: [(&'static str, Option<u32>); 4]) {
    if handler_url.trim().is_empty() {
        errors.add("handler_url", "enter the URL of your handler, such as https://example.com/aqs");
    }
    for (field, value) in numbers {
        let (min, max) = match field {
            "messages_per_run" => (limits::MESSAGES_PER_RUN_MIN, limits::MESSAGES_PER_RUN_MAX),
            "wait_seconds" => (0, limits::WAIT_MAX_SECS),
            "timeout_seconds" => (limits::TIMEOUT_MIN_SECS, limits::TIMEOUT_MAX_SECS),
            _ => (limits::CONCURRENCY_MIN, limits::CONCURRENCY_MAX),
        };
        if value.is_some_and(|v| v < min || v > max) {
            errors.add(field, format!("must be between {min} and {max}"));
        }
    }
}

/// A budget: dollars within the control plane's bound, an alert percent of 1 to 100.
pub(crate) fn budget(errors: &mut FieldErrors, dollars: Option<u64>, percent: Option<u32>) {
    if dollars.is_some_and(|d| d.saturating_mul(100) > BUDGET_MAX_CENTS) {
        errors.add("monthly_limit", format!("must be between 0 and {}", BUDGET_MAX_CENTS / 100));
    }
    if percent.is_some_and(|p| !(1..=100).contains(&p)) {
        errors.add("alert_percent", "must be between 1 and 100");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_problem_is_found_at_once() {
        let mut errors = FieldErrors::default();
        signup(&mut errors, "nobody", "short");
        assert!(errors.get("email").is_some() && errors.get("password").is_some());
        let mut errors = FieldErrors::default();
        token(&mut errors, "", &[]);
        assert!(errors.get("name").is_some() && errors.get("scopes").is_some());
        let mut errors = FieldErrors::default();
        push(
            &mut errors,
            "",
            [
                ("messages_per_run", Some(0)),
                ("wait_seconds", None),
                ("timeout_seconds", None),
                ("concurrency", Some(100_000)),
            ],
        );
        assert!(errors.get("handler_url").is_some() && errors.get("messages_per_run").is_some());
        assert!(errors.get("concurrency").is_some() && errors.get("wait_seconds").is_none());
    }
}
