//! Where to go after logging in or signing up: the page the visitor asked for before the form,
//! carried as `next` (a query parameter of `/login` or `/signup`, then a hidden field of its form;
//! the links between the two forms carry it too, so a visitor without an account keeps it). Only a
//! path on this site is followed: anything that could leave it (`//host`, `/\host`, a scheme,
//! control characters) is ignored and the visitor lands on their queues.

/// The longest `next` kept; a longer one is no page of ours.
const MAX_LEN: usize = 2048;

/// `next` when it is a safe, same-site relative path; `None` otherwise.
pub(crate) fn safe(next: &str) -> Option<&str> {
    let ok = next.starts_with('/')
        && !next.starts_with("//")
        && next.len() <= MAX_LEN
        && next.bytes().all(|b| b.is_ascii_graphic() && b != b'\\')
        // Back to the log-in or sign-up form would loop.
        && !["/login", "/signup", "/logout"].iter().any(|p| next == *p || next.starts_with(&format!("{p}?")));
    ok.then_some(next)
}

/// The log-in form's address that returns to `path` afterwards (plain `/login` for the queue list).
pub(crate) fn login_url(path: &str) -> String {
    form_url("/login", path)
}

/// `form` (`/login` or `/signup`) with `next` when `path` is a safe page other than the queue list.
pub(crate) fn form_url(form: &str, path: &str) -> String {
    match safe(path) {
        Some(path) if path != "/" => {
            format!("{form}?next={}", form_urlencoded::byte_serialize(path.as_bytes()).collect::<String>())
        }
        _ => form.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_same_site_paths_are_followed() {
        for good in ["/", "/queues/jobs", "/queues/jobs/tokens?x=1", "/account"] {
            assert_eq!(safe(good), Some(good), "{good}");
        }
        for bad in [
            "",
            "queues",
            "//evil.example.com",
            "/\\evil.example.com",
            "https://evil.example.com/",
            "/queues/a b",
            "/queues/\n",
            "/login",
            "/login?next=/x",
            "/signup",
        ] {
            assert_eq!(safe(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_log_in_address_carries_the_path() {
        assert_eq!(login_url("/"), "/login");
        assert_eq!(login_url("/queues/jobs/tokens"), "/login?next=%2Fqueues%2Fjobs%2Ftokens");
        assert_eq!(login_url("//evil.example.com"), "/login");
        assert_eq!(form_url("/signup", "/queues/jobs?tab=1"), "/signup?next=%2Fqueues%2Fjobs%3Ftab%3D1");
        assert_eq!(form_url("/signup", "https://evil.example.com/"), "/signup");
    }
}
