//! One HTTP attempt: POST a signed body to the handler and say what happened, as an [`Answer`].
//! Nothing here decides what the answer means (that is `outcome`) or touches the queue.
//!
//! The client never follows redirects (a 3xx is an answer like any other), uses no proxy, resolves
//! through the SSRF guard, and speaks http and https (rustls, webpki roots).

use super::settings::PushSettings;
use super::ssrf::{GuardedResolver, Refused, check_literal, refusal_in};
use aqs_core::time::now_ms;
use reqwest::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const USER_AGENT: &str = concat!("AQS-Push/", env!("CARGO_PKG_VERSION"));

/// What one request came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The handler answered with a status. `body` is the start of its answer (up to the bytes the
    /// caller asked to keep).
    Status { status: u16, retry_after: Option<String>, body: Vec<u8> },
    /// No complete answer within the target's timeout.
    TimedOut,
    /// Connection, TLS or protocol failure.
    Failed(String),
    /// The SSRF guard refused the address.
    Refused(Refused),
}

#[derive(Clone, Debug)]
pub struct Attempt {
    pub answer: Answer,
    pub sent_at_ms: u64,
    pub latency: Duration,
}

/// The HTTP client of every dispatcher of a process.
pub struct PushClient {
    http: reqwest::Client,
    allow_private: bool,
}

impl PushClient {
    pub fn new(allow_private: bool) -> Self {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(Arc::new(GuardedResolver { allow_private }))
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(USER_AGENT)
            .build()
            .expect("the push HTTP client builds from static settings");
        Self { http, allow_private }
    }

    /// POSTs `body` signed as `webhook-id: id`, waiting up to the target's timeout, and keeps at
    /// most `keep` bytes of the answer.
    pub async fn send(&self, settings: &PushSettings, id: &str, body: Vec<u8>, keep: usize) -> Attempt {
        let sent_at_ms = now_ms();
        let started = Instant::now();
        let answer = match check_literal(&settings.url, self.allow_private) {
            Err(refused) => Answer::Refused(refused),
            Ok(()) => {
                let exchange = self.exchange(settings, id, body, keep, sent_at_ms);
                match tokio::time::timeout(settings.timeout(), exchange).await {
                    Ok(answer) => answer,
                    Err(_) => Answer::TimedOut,
                }
            }
        };
        Attempt { answer, sent_at_ms, latency: started.elapsed() }
    }

    async fn exchange(&self, settings: &PushSettings, id: &str, body: Vec<u8>, keep: usize, now: u64) -> Answer {
        let timestamp = now / 1000;
        let signature = settings.keys.header(id, timestamp, &body, now);
        let request = self
            .http
            .post(settings.url.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .header("webhook-id", id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(body);
        let mut response = match request.send().await {
            Ok(response) => response,
            Err(err) => return failure(&err),
        };
        let status = response.status().as_u16();
        let retry_after = response.headers().get(RETRY_AFTER).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let mut kept = Vec::new();
        while kept.len() < keep {
            match response.chunk().await {
                Ok(Some(chunk)) => kept.extend_from_slice(&chunk[..chunk.len().min(keep - kept.len())]),
                Ok(None) => break,
                // The status is the answer; a body cut short only shortens the reason.
                Err(_) => break,
            }
        }
        Answer::Status { status, retry_after, body: kept }
    }
}

fn failure(err: &reqwest::Error) -> Answer {
    if let Some(refused) = refusal_in(err) {
        return Answer::Refused(refused);
    }
    if err.is_timeout() {
        return Answer::TimedOut;
    }
    // reqwest's own text is generic ("error sending request"); the causes say what failed.
    let mut text = String::from("connection failed");
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    Answer::Failed(text)
}
