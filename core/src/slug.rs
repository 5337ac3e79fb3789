//! Queue slugs: the part of a queue's address that names it (`/queue/v1/<slug>`), derived from the
//! queue's name, globally unique among live queues, and fixed for the queue's life (renaming a
//! queue keeps its address).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

pub const SLUG_MAX_LEN: usize = 48;
const SUFFIX_LEN: usize = 4;
const SUFFIX_CHARS: &[u8; 36] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// Lowercase a-z, 0-9 and single dashes: every run of other characters becomes one `-`, dashes
/// are trimmed from both ends, and the result is cut to 48 characters. `None` when nothing is left
/// (a name of only punctuation or non-Latin letters).
pub fn derive(name: &str) -> Option<String> {
    let mut slug = String::with_capacity(name.len().min(SLUG_MAX_LEN));
    let mut pending_dash = false;
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if pending_dash && !slug.is_empty() {
                slug.push('-');
            }
            pending_dash = false;
            slug.push(c);
            if slug.len() >= SLUG_MAX_LEN {
                break;
            }
        } else {
            pending_dash = true;
        }
    }
    slug.truncate(SLUG_MAX_LEN);
    let slug = slug.trim_end_matches('-').to_owned();
    (!slug.is_empty()).then_some(slug)
}

/// `base` plus a random `-xxxx` suffix, cutting `base` so that the whole stays within 48.
pub fn with_random_suffix(base: &str) -> String {
    let keep = base.len().min(SLUG_MAX_LEN - SUFFIX_LEN - 1);
    let base = base[..keep].trim_end_matches('-');
    let suffix: String =
        (0..SUFFIX_LEN).map(|_| SUFFIX_CHARS[rand::random_range(0..SUFFIX_CHARS.len())] as char).collect();
    format!("{base}-{suffix}")
}

/// A queue slug, checked once where it enters (a path segment: `ApiPath<Slug>` in the management
/// API, the queue routes' `{slug}` in the data plane, the console's `PagePath<Slug>`): a segment
/// that could not be a slug we made is a 404 without a query, and every service function takes a
/// `&Slug`, so none checks again.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Slug(String);

impl Slug {
    pub fn parse(text: &str) -> Option<Self> {
        is_valid(text).then(|| Self(text.to_owned()))
    }

    /// A slug read back from PostgreSQL: made by [`derive`] or [`with_random_suffix`], so valid.
    pub fn stored(text: String) -> Self {
        debug_assert!(is_valid(&text), "{text:?}");
        Self(text)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Serialize for Slug {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl std::ops::Deref for Slug {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Slug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Slug {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).ok_or_else(|| serde::de::Error::custom("not a queue slug"))
    }
}

/// True when `text` could be a slug we made.
pub fn is_valid(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= SLUG_MAX_LEN
        && !text.starts_with('-')
        && !text.ends_with('-')
        && !text.contains("--")
        && text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derives_lowercase_dashed_slugs() {
        assert_eq!(derive("Image Jobs").as_deref(), Some("image-jobs"));
        assert_eq!(derive("  --Hello,   World!! 2026 ").as_deref(), Some("hello-world-2026"));
        assert_eq!(derive("émails_à_envoyer").as_deref(), Some("mails-envoyer"));
        assert_eq!(derive("a__b--c").as_deref(), Some("a-b-c"));
        assert_eq!(derive("!!!"), None);
        assert_eq!(derive("日本語"), None);
        assert_eq!(derive(""), None);
    }

    #[test]
    fn slugs_are_at_most_48_characters_without_a_trailing_dash() {
        let long = derive(&"x".repeat(64)).unwrap();
        assert_eq!(long.len(), 48);
        let cut_at_dash = derive(&format!("{} tail", "y".repeat(47))).unwrap();
        assert_eq!(cut_at_dash, "y".repeat(47));
        assert!(is_valid(&long) && is_valid(&cut_at_dash));
    }

    #[test]
    fn suffixed_slugs_stay_valid_and_short() {
        for base in ["jobs", &"z".repeat(48), &format!("{}-abc", "q".repeat(42))] {
            let slug = with_random_suffix(base);
            assert!(slug.len() <= SLUG_MAX_LEN, "{slug}");
            assert!(is_valid(&slug), "{slug}");
            assert_ne!(slug, base);
        }
        assert!(with_random_suffix("jobs").starts_with("jobs-"));
    }

    #[test]
    fn rejects_what_we_never_make() {
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", "a b", &"a".repeat(49)] {
            assert!(!is_valid(bad), "{bad:?}");
            assert_eq!(Slug::parse(bad), None, "{bad:?}");
            assert!(serde_json::from_value::<Slug>(serde_json::Value::from(bad)).is_err(), "{bad:?}");
        }
        assert!(is_valid("image-jobs-x7k2"));
        let slug: Slug = serde_json::from_str("\"image-jobs-x7k2\"").unwrap();
        assert_eq!((slug.as_str(), slug.to_string()), ("image-jobs-x7k2", "image-jobs-x7k2".to_owned()));
    }
}
