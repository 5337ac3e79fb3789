//! The console's cookies: reading the `Cookie` header and writing `Set-Cookie` lines.
//!
//! - `aqs_session`: the control plane's session JWT (12 hours), HttpOnly, SameSite=Lax, Path=/,
//!   Secure when served over TLS;
//! - `aqs_anon`: a random id for a visitor who is not logged in, so the sign-up and log-in forms
//!   carry a CSRF token too (login CSRF is a real attack: it logs a victim into our account);
//! - `aqs_flash`: a signed, short-lived message shown once after a redirect.

use axum::http::HeaderValue;
use axum::http::header::{COOKIE, HeaderMap};

pub(crate) const SESSION: &str = "aqs_session";
pub(crate) const ANON: &str = "aqs_anon";
pub(crate) const FLASH: &str = "aqs_flash";
/// The team the switcher chose (its id); none means the member's personal team.
pub(crate) const TEAM: &str = "aqs_team";

/// How long the session cookie lives: as long as the session JWT inside it.
pub(crate) const SESSION_MAX_AGE_SECS: u64 = 12 * 3600;
pub(crate) const ANON_MAX_AGE_SECS: u64 = 12 * 3600;
/// Long enough to survive a redirect, short enough that a stale message never shows up later.
pub(crate) const FLASH_MAX_AGE_SECS: u64 = 60;

/// The cookies of a request, by name (the first of duplicates wins).
#[derive(Clone, Debug, Default)]
pub(crate) struct Cookies(Vec<(String, String)>);

impl Cookies {
    pub(crate) fn from_headers(headers: &HeaderMap) -> Self {
        let mut pairs = Vec::new();
        for value in headers.get_all(COOKIE) {
            let Ok(text) = value.to_str() else { continue };
            for part in text.split(';') {
                if let Some((name, value)) = part.trim().split_once('=') {
                    pairs.push((name.trim().to_owned(), value.trim().trim_matches('"').to_owned()));
                }
            }
        }
        Self(pairs)
    }

    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, v)| n == name && !v.is_empty()).map(|(_, v)| v.as_str())
    }
}

/// A `Set-Cookie` value with the console's fixed attributes.
pub(crate) fn set(name: &str, value: &str, max_age_secs: u64, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    let line = format!("{name}={value}; Path=/; Max-Age={max_age_secs}; HttpOnly; SameSite=Lax{secure}");
    // Names are our constants and values are JWTs, base64url or hex: always a valid header.
    HeaderValue::from_str(&line).expect("cookie values are header-safe")
}

/// A `Set-Cookie` value that deletes the cookie.
pub(crate) fn clear(name: &str, secure: bool) -> HeaderValue {
    set(name, "", 0, secure)
}

/// True when the request came over TLS: the public URL is https, or a proxy says so.
pub(crate) fn is_secure(https: bool, headers: &HeaderMap) -> bool {
    https
        || headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|proto| proto.trim().eq_ignore_ascii_case("https"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cookie_headers() {
        let mut headers = HeaderMap::new();
        headers.append(COOKIE, HeaderValue::from_static("a=1; aqs_session=abc.def; empty="));
        headers.append(COOKIE, HeaderValue::from_static("b=\"2\""));
        let cookies = Cookies::from_headers(&headers);
        assert_eq!(cookies.get(SESSION), Some("abc.def"));
        assert_eq!(cookies.get("b"), Some("2"));
        assert_eq!(cookies.get("empty"), None);
        assert_eq!(cookies.get("missing"), None);
    }

    #[test]
    fn set_cookie_lines_carry_the_attributes() {
        assert_eq!(set(SESSION, "x", 10, false), "aqs_session=x; Path=/; Max-Age=10; HttpOnly; SameSite=Lax");
        assert!(set(SESSION, "x", 10, true).to_str().unwrap().ends_with("; Secure"));
        assert!(clear(FLASH, false).to_str().unwrap().contains("Max-Age=0"));
    }

    #[test]
    fn forwarded_proto_https_makes_it_secure() {
        let mut headers = HeaderMap::new();
        assert!(!is_secure(false, &headers));
        assert!(is_secure(true, &headers));
        headers.insert("x-forwarded-proto", HeaderValue::from_static("https"));
        assert!(is_secure(false, &headers));
    }
}
