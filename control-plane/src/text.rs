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

/// The longest name of a token, a management key or a team, in characters.
pub const NAME_MAX_CHARS: usize = 64;

/// A name as stored: without control characters, trimmed, 1 to [`NAME_MAX_CHARS`] characters
/// (400 on the field `name` otherwise).
pub fn checked_name(name: &str) -> ApiResult<String> {
    refuse_control("name", name)?;
    let name = name.trim();
    let chars = name.chars().count();
    if chars == 0 || chars > NAME_MAX_CHARS {
        return Err(ApiError::field("name", format!("use 1 to {NAME_MAX_CHARS} characters")));
    }
    Ok(name.to_owned())
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

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(checked_name("  Platform ").unwrap(), "Platform");
        assert!(checked_name("").unwrap_err().to_string().starts_with("name"));
        assert!(checked_name(&"x".repeat(65)).unwrap_err().to_string().starts_with("name"));
        assert!(checked_name("a\nb").unwrap_err().to_string().starts_with("name"));
        assert_eq!(checked_name(&"é".repeat(64)).unwrap().chars().count(), 64);
    }
}
