//! Free text that members type and PostgreSQL stores or searches: names, emails, URLs. Control
//! characters (Unicode category Cc: NUL, tab, CR, LF, DEL, the C1 range) are refused with a 400
//! that names the field, before anything reaches the database: PostgreSQL cannot store NUL at all
//! (it would be a 500), and a CR or LF inside a name breaks every list, header and log line that
//! shows it. Every service function that takes such text calls [`refuse_control`] first.

use aqs_core::{ApiError, ApiResult};

/// 400 `invalid_request` when `text` holds a control character; `field` names the request field.
pub fn refuse_control(field: &str, text: &str) -> ApiResult<()> {
    match text.chars().find(|c| c.is_control()) {
        Some(c) => {
            Err(ApiError::field(field, format!("control characters (here U+{:04X}) are not allowed", u32::from(c))))
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_refused_and_named() {
        for bad in ["a\0b", "line\nbreak", "cr\r", "tab\there", "del\u{7f}", "c1\u{85}"] {
            let message = refuse_control("name", bad).unwrap_err().to_string();
            assert!(message.starts_with("name: control characters"), "{bad:?}: {message}");
        }
        assert!(refuse_control("name", "a\0b").unwrap_err().to_string().contains("U+0000"));
        for good in ["Image jobs", "Zoë’s queue — 2026", "ada@example.com", ""] {
            assert!(refuse_control("name", good).is_ok(), "{good:?}");
        }
    }
}
