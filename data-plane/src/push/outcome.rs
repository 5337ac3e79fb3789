//! What a handler's answer means for the messages it was about (`docs/push-delivery.md`, "What the
//! handler's answer means"), as a [`Verdict`] per message or a [`BatchVerdict`] per batch. Pure
//! functions: the tests drive them with answers made by hand.
//!
//! | answer | message mode | batch mode |
//! | --- | --- | --- |
//! | 2xx | ack | ack, except what the body's `retry` / `retry_all` names |
//! | 408, 429, 5xx, timeout, connection or TLS failure | retry (numeric `Retry-After`, else backoff) | retry the batch |
//! | any other 3xx or 4xx | dead-letter now, status + first KiB as reason | retry the batch |
//! | refused by the SSRF guard | retry (the name may resolve publicly again; max attempts bound it) | retry the batch |

use super::backoff::retry_after;
use super::deliver::Answer;
use aqs_core::push::{REASON_BODY_BYTES, RETRY_AFTER_MAX_SECS};
use serde::Deserialize;
use std::collections::HashMap;
use std::time::Duration;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Ack,
    /// Try again after `after`, or after the default backoff when `None`.
    Retry {
        after: Option<Duration>,
        reason: String,
    },
    /// Dead-letter now.
    Dead {
        reason: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchVerdict {
    AckAll,
    /// Acknowledge every message except these: message id → delay (`None` = default backoff).
    Partial {
        retry: HashMap<String, Option<Duration>>,
    },
    RetryAll {
        after: Option<Duration>,
        reason: String,
    },
}

impl Verdict {
    /// The `outcome` of `aqs_push_deliveries_total`.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Verdict::Ack => "acked",
            Verdict::Retry { .. } => "retried",
            Verdict::Dead { .. } => "dead_lettered",
        }
    }
}

impl BatchVerdict {
    /// The `outcome` of `aqs_push_deliveries_total`.
    pub fn metric_label(&self) -> &'static str {
        match self {
            BatchVerdict::AckAll => "acked",
            BatchVerdict::Partial { .. } => "partial",
            BatchVerdict::RetryAll { .. } => "retried",
        }
    }
}

pub fn message(answer: &Answer) -> Verdict {
    match answer {
        Answer::Status { status, .. } if (200..300).contains(status) => Verdict::Ack,
        Answer::Status { status, retry_after: header, body } if retryable(*status) => {
            Verdict::Retry { after: retry_after(header.as_deref()), reason: answered(*status, body) }
        }
        Answer::Status { status, body, .. } => Verdict::Dead { reason: answered(*status, body) },
        other => Verdict::Retry { after: None, reason: describe(other) },
    }
}

pub fn batch(answer: &Answer) -> BatchVerdict {
    match answer {
        Answer::Status { status, body, .. } if (200..300).contains(status) => batch_reply(body),
        Answer::Status { status, retry_after: header, body } => {
            BatchVerdict::RetryAll { after: retry_after(header.as_deref()), reason: answered(*status, body) }
        }
        other => BatchVerdict::RetryAll { after: None, reason: describe(other) },
    }
}

/// 408, 429 and 5xx are worth retrying; every other non-2xx is the handler's final word.
pub fn retryable(status: u16) -> bool {
    status == 408 || status == 429 || (500..600).contains(&status)
}

/// `handler answered 404: <first KiB of the body>`.
pub fn answered(status: u16, body: &[u8]) -> String {
    let head = String::from_utf8_lossy(&body[..body.len().min(REASON_BODY_BYTES)]);
    let head = head.trim();
    if head.is_empty() { format!("handler answered {status}") } else { format!("handler answered {status}: {head}") }
}

/// For the answers that carry no status.
pub fn describe(answer: &Answer) -> String {
    match answer {
        Answer::Status { status, body, .. } => answered(*status, body),
        Answer::TimedOut => "handler did not answer within the timeout".to_owned(),
        Answer::Failed(text) => text.clone(),
        Answer::Refused(refused) => refused.to_string(),
    }
}

#[derive(Deserialize)]
struct BatchReply {
    #[serde(default)]
    retry: Vec<RetryOne>,
    #[serde(default)]
    retry_all: Option<RetryAll>,
}

#[derive(Deserialize)]
struct RetryOne {
    id: String,
    delay_seconds: Option<u64>,
}

/// `"retry_all": {"delay_seconds": 30}`, `{}` or `true`.
#[derive(Deserialize)]
#[serde(untagged)]
enum RetryAll {
    Flag(bool),
    Delay { delay_seconds: Option<u64> },
}

/// A 2xx body: empty or not JSON acknowledges everything (the handler returned normally).
fn batch_reply(body: &[u8]) -> BatchVerdict {
    let Ok(reply) = serde_json::from_slice::<BatchReply>(body) else { return BatchVerdict::AckAll };
    let delay = |secs: Option<u64>| secs.map(|s| Duration::from_secs(s.min(RETRY_AFTER_MAX_SECS)));
    match reply.retry_all {
        Some(RetryAll::Flag(true)) => {
            return BatchVerdict::RetryAll { after: None, reason: "handler asked to retry the batch".into() };
        }
        Some(RetryAll::Delay { delay_seconds }) => {
            return BatchVerdict::RetryAll {
                after: delay(delay_seconds),
                reason: "handler asked to retry the batch".into(),
            };
        }
        Some(RetryAll::Flag(false)) | None => {}
    }
    if reply.retry.is_empty() {
        return BatchVerdict::AckAll;
    }
    BatchVerdict::Partial { retry: reply.retry.into_iter().map(|r| (r.id, delay(r.delay_seconds))).collect() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(status: u16, retry_after: Option<&str>, body: &str) -> Answer {
        Answer::Status { status, retry_after: retry_after.map(str::to_owned), body: body.as_bytes().to_vec() }
    }

    #[test]
    fn each_class_of_status() {
        for ok in [200, 201, 204, 299] {
            assert_eq!(message(&status(ok, None, "")), Verdict::Ack);
        }
        for retry in [408, 429, 500, 502, 503, 599] {
            assert!(matches!(message(&status(retry, None, "")), Verdict::Retry { after: None, .. }), "{retry}");
        }
        assert_eq!(
            message(&status(503, Some("7"), "busy")),
            Verdict::Retry { after: Some(Duration::from_secs(7)), reason: "handler answered 503: busy".into() }
        );
        assert!(matches!(
            message(&status(429, Some("Wed, 21 Oct 2015 07:28:00 GMT"), "")),
            Verdict::Retry { after: None, .. }
        ));
        for dead in [301, 302, 304, 400, 401, 403, 404, 410, 422] {
            assert!(matches!(message(&status(dead, None, "")), Verdict::Dead { .. }), "{dead}");
        }
        assert!(matches!(message(&Answer::TimedOut), Verdict::Retry { after: None, .. }));
        assert!(matches!(message(&Answer::Failed("x".into())), Verdict::Retry { .. }));
    }

    #[test]
    fn reasons_keep_the_status_and_the_first_kib() {
        let long = "x".repeat(5000);
        let Verdict::Dead { reason } = message(&status(400, None, &long)) else { panic!() };
        assert_eq!(reason, format!("handler answered 400: {}", "x".repeat(1024)));
    }

    #[test]
    fn batch_replies() {
        assert_eq!(batch(&status(200, None, "")), BatchVerdict::AckAll);
        assert_eq!(batch(&status(200, None, "ok")), BatchVerdict::AckAll);
        assert_eq!(batch(&status(200, None, r#"{"retry": []}"#)), BatchVerdict::AckAll);
        let BatchVerdict::Partial { retry } =
            batch(&status(200, None, r#"{"retry": [{"id": "a", "delay_seconds": 3}, {"id": "b"}]}"#))
        else {
            panic!()
        };
        assert_eq!(retry["a"], Some(Duration::from_secs(3)));
        assert_eq!(retry["b"], None);
        assert!(matches!(
            batch(&status(200, None, r#"{"retry_all": {"delay_seconds": 9}}"#)),
            BatchVerdict::RetryAll { after: Some(d), .. } if d == Duration::from_secs(9)
        ));
        assert!(matches!(batch(&status(404, None, "")), BatchVerdict::RetryAll { after: None, .. }));
        assert!(matches!(batch(&Answer::TimedOut), BatchVerdict::RetryAll { .. }));
    }
}
