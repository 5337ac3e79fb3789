//! How long a handler's connection may wait idle before a delivery must not reuse it.
//!
//! A server closes a keep-alive connection once it has been idle for its own timeout (Node's
//! default is 5 s, Apache's 5 s, uvicorn's 5 s). A request sent at about that moment crosses the
//! server's close on the wire: the server never reads it, and the delivery fails and is retried
//! later, one attempt spent. So a connection is reused only well inside the server's timeout:
//! the one its answer states (`Keep-Alive: timeout=N`, as Node and Apache send), less a margin for
//! the trip and the timers, or else a default shorter than the common servers' 5 s. An answer that
//! says `Connection: close` leaves nothing to reuse.

use hyper::HeaderMap;
use hyper::header::{CONNECTION, HeaderName, HeaderValue};
use std::time::Duration;

/// Kept this long when the answer states no timeout: under the 5 s of the common servers.
pub const DEFAULT: Duration = Duration::from_secs(4);
/// What is left unused of a stated timeout, for the request's trip and the server's timer.
pub const MARGIN: Duration = Duration::from_secs(1);
/// The longest a connection waits idle whatever the server states.
pub const LONGEST: Duration = Duration::from_secs(300);
/// Named once: a name given as text is parsed again on every lookup, here once per delivery.
const KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");

/// How long the connection that carried this answer may wait idle and still carry the next
/// request, or `None` when it must not carry another.
pub fn reuse_for(headers: &HeaderMap) -> Option<Duration> {
    if headers.get_all(CONNECTION).iter().any(says_close) {
        return None;
    }
    let stated = headers.get_all(KEEP_ALIVE).iter().find_map(stated_timeout);
    match stated {
        None => Some(DEFAULT),
        Some(timeout) => Some(timeout.saturating_sub(MARGIN).min(LONGEST)).filter(|d| !d.is_zero()),
    }
}

fn says_close(value: &HeaderValue) -> bool {
    value.to_str().is_ok_and(|v| v.split(',').any(|token| token.trim().eq_ignore_ascii_case("close")))
}

/// `timeout=N` (seconds) of a `Keep-Alive` value such as `timeout=5, max=1000`.
fn stated_timeout(value: &HeaderValue) -> Option<Duration> {
    value.to_str().ok()?.split(',').find_map(|param| {
        let (name, seconds) = param.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("timeout") {
            return None;
        }
        seconds.trim().trim_matches('"').parse::<u64>().ok().map(Duration::from_secs)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(headers: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn an_answer_without_a_stated_timeout_is_kept_under_the_common_servers_five_seconds() {
        assert_eq!(reuse_for(&answer(&[])), Some(DEFAULT));
        assert!(DEFAULT < Duration::from_secs(5));
        assert_eq!(reuse_for(&answer(&[("connection", "keep-alive")])), Some(DEFAULT));
    }

    #[test]
    fn a_stated_timeout_is_kept_less_the_margin_and_never_past_the_longest() {
        assert_eq!(reuse_for(&answer(&[("keep-alive", "timeout=5")])), Some(Duration::from_secs(4)));
        assert_eq!(reuse_for(&answer(&[("keep-alive", "max=100, Timeout = 15")])), Some(Duration::from_secs(14)));
        assert_eq!(reuse_for(&answer(&[("keep-alive", "timeout=86400")])), Some(LONGEST));
        // Too short to reuse safely.
        assert_eq!(reuse_for(&answer(&[("keep-alive", "timeout=1")])), None);
        assert_eq!(reuse_for(&answer(&[("keep-alive", "timeout=0")])), None);
        // A value that says nothing usable is no statement.
        assert_eq!(reuse_for(&answer(&[("keep-alive", "timeout=soon")])), Some(DEFAULT));
        assert_eq!(reuse_for(&answer(&[("keep-alive", "max=5")])), Some(DEFAULT));
    }

    #[test]
    fn connection_close_is_never_reused() {
        assert_eq!(reuse_for(&answer(&[("connection", "close")])), None);
        assert_eq!(reuse_for(&answer(&[("connection", "Upgrade, Close"), ("keep-alive", "timeout=60")])), None);
    }
}
