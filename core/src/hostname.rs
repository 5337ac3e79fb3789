//! Hostnames of custom hosts and domains: the one normal form (lowercase ASCII, no trailing dot)
//! that PostgreSQL, the Redis projection and the data plane's `Host` lookup all use.

/// A syntactically valid DNS name of two or more labels, normalised; `None` otherwise.
/// Internationalised names must be given in their `xn--` form.
pub fn normalize(name: &str) -> Option<String> {
    let name = name.trim().trim_end_matches('.').to_ascii_lowercase();
    if name.len() < 3 || name.len() > 253 {
        return None;
    }
    let labels: Vec<&str> = name.split('.').collect();
    if labels.len() < 2 {
        return None;
    }
    let label_ok = |l: &&str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    if !labels.iter().all(label_ok) {
        return None;
    }
    // A top-level label of digits alone would make an IP address look like a name.
    if labels.last().is_some_and(|l| l.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    Some(name)
}

/// The host of a `Host` header value, port stripped and lowercased (`Queue.Example.com:8443` →
/// `queue.example.com`). Borrowed when already lowercase, as it is from every real client.
pub fn of_header(value: &str) -> std::borrow::Cow<'_, str> {
    let host = match value.rsplit_once(':') {
        // An IPv6 literal `[::1]:80` keeps its brackets; its colons are not a port.
        Some((host, port)) if !port.contains(']') && port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => value,
    };
    let host = host.trim_end_matches('.');
    if host.bytes().any(|b| b.is_ascii_uppercase()) {
        std::borrow::Cow::Owned(host.to_ascii_lowercase())
    } else {
        std::borrow::Cow::Borrowed(host)
    }
}

/// Whether `host` is `domain` or a name under it (both normalised).
pub fn is_under(host: &str, domain: &str) -> bool {
    host == domain
        || (host.len() > domain.len() && host.ends_with(domain) && host[..host.len() - domain.len()].ends_with('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalised_and_checked() {
        assert_eq!(normalize("Queue.Example.COM.").as_deref(), Some("queue.example.com"));
        assert_eq!(normalize("q.example.test").as_deref(), Some("q.example.test"));
        for bad in ["localhost", "a..b", "-a.com", "a-.com", "a_b.com", "1.2.3.4", "", "a b.com"] {
            assert_eq!(normalize(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_header_host_drops_its_port_and_case() {
        assert_eq!(of_header("Queue.Example.com:8443"), "queue.example.com");
        assert_eq!(of_header("queue.example.com"), "queue.example.com");
        assert_eq!(of_header("[::1]:80"), "[::1]");
        assert!(is_under("q.example.com", "example.com"));
        assert!(!is_under("qexample.com", "example.com"));
        assert!(!is_under("example.com.evil", "example.com"));
    }
}
