//! `Client` (origin, token, retry policy) and `Queue`, one method per queue API route.
//!
//! Retries: a 429 or 503 is tried again after its `Retry-After` (seconds; an exponential backoff
//! when it has none), a connection failure after an exponential backoff, up to `max_retries`
//! times. A publish that may be retried carries an idempotency key (the caller's or a generated
//! one), so a retry stores nothing twice.

use crate::error::{Error, ErrorCode, Result};
use crate::types::*;
use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::time::Duration;

/// The most entries one batch publish takes (and receipts one ack or nack takes).
pub const BATCH_MAX: usize = 100;

#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    origin: String,
    bearer: String,
    max_retries: u32,
    max_wait: Duration,
}

pub struct ClientBuilder {
    origin: String,
    token: String,
    max_retries: u32,
    max_wait: Duration,
    http: Option<reqwest::Client>,
}

impl ClientBuilder {
    /// Retries of a 429, a 503 or a connection failure (default 5; 0 returns every answer as is).
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// The longest wait between two tries (default 30 s).
    pub fn max_retry_wait(mut self, wait: Duration) -> Self {
        self.max_wait = wait;
        self
    }

    /// A reqwest client of the caller's (its pool, timeouts, TLS roots).
    pub fn http_client(mut self, http: reqwest::Client) -> Self {
        self.http = Some(http);
        self
    }

    pub fn build(self) -> Client {
        let origin = self.origin.trim_end_matches('/');
        Client {
            http: self.http.unwrap_or_default(),
            origin: origin.strip_suffix("/queue/v1").unwrap_or(origin).to_owned(),
            bearer: format!("Bearer {}", self.token),
            max_retries: self.max_retries,
            max_wait: self.max_wait,
        }
    }
}

impl Client {
    /// `origin` is the service's address without `/queue/v1`, e.g. `http://127.0.0.1:8080`.
    pub fn new(origin: impl Into<String>, token: impl Into<String>) -> Self {
        Self::builder(origin, token).build()
    }

    pub fn builder(origin: impl Into<String>, token: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            origin: origin.into(),
            token: token.into(),
            max_retries: 5,
            max_wait: Duration::from_secs(30),
            http: None,
        }
    }

    /// The queue with this slug.
    pub fn queue(&self, slug: impl Into<String>) -> Queue {
        Queue { client: self.clone(), slug: slug.into() }
    }

    /// `GET /queue/v1/health` (no token needed).
    pub async fn health(&self) -> Result<Health> {
        self.call(Method::GET, "health", None::<&()>).await
    }

    async fn call<T: DeserializeOwned>(&self, method: Method, path: &str, body: Option<&impl Serialize>) -> Result<T> {
        let url = format!("{}/queue/v1/{path}", self.origin);
        let body = body.map(serde_json::to_vec).transpose()?;
        let mut attempt = 0;
        loop {
            let mut request = self.http.request(method.clone(), &url).header("authorization", &self.bearer);
            if let Some(body) = &body {
                request = request.header("content-type", "application/json").body(body.clone());
            }
            let wait = match request.send().await {
                Ok(response) if response.status().is_success() => {
                    return Ok(serde_json::from_slice(&response.bytes().await?)?);
                }
                Ok(response) => {
                    let status = response.status();
                    let error = refusal(response).await;
                    let retryable = matches!(status, StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE);
                    if !retryable || attempt >= self.max_retries {
                        return Err(error);
                    }
                    match &error {
                        Error::Api { retry_after: Some(after), .. } => *after,
                        _ => self.backoff(attempt),
                    }
                }
                Err(err) if attempt < self.max_retries && (err.is_connect() || err.is_timeout()) => {
                    self.backoff(attempt)
                }
                Err(err) => return Err(err.into()),
            };
            tokio::time::sleep(wait.min(self.max_wait)).await;
            attempt += 1;
        }
    }

    fn backoff(&self, attempt: u32) -> Duration {
        (Duration::from_millis(100) * 2u32.saturating_pow(attempt.min(16))).min(self.max_wait)
    }
}

/// A non-2xx answer as the API's error.
async fn refusal(response: reqwest::Response) -> Error {
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let text = response.text().await.unwrap_or_default();
    let envelope: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let code = envelope["error"].as_str().map(ErrorCode::parse).unwrap_or(ErrorCode::Other(format!("http_{status}")));
    let message = envelope["message"].as_str().map(str::to_owned).unwrap_or_else(|| text.chars().take(200).collect());
    let index = envelope["index"].as_u64().map(|i| i as usize);
    Error::Api { code, status, message, index, retry_after }
}

/// One queue: every route of `/queue/v1/{slug}/…`.
#[derive(Debug, Clone)]
pub struct Queue {
    client: Client,
    slug: String,
}

#[derive(Serialize)]
struct Batch<'a> {
    messages: &'a [NewMessage],
}

#[derive(Serialize)]
struct Receipts<'a> {
    receipts: &'a [String],
}

#[derive(Serialize)]
struct NackRequest<'a> {
    receipts: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    delay_seconds: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

#[derive(Serialize)]
struct ExtendRequest<'a> {
    receipts: &'a [String],
    visibility_seconds: u64,
}

#[derive(Serialize)]
struct PurgeRequest {
    state: &'static str,
}

#[derive(Serialize)]
struct SelectionBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    ids: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    all: Option<bool>,
}

impl<'a> SelectionBody<'a> {
    fn of(selection: &'a Selection) -> Self {
        match selection {
            Selection::All => Self { ids: None, all: Some(true) },
            Selection::Ids(ids) => Self { ids: Some(ids), all: None },
        }
    }
}

#[derive(serde::Deserialize)]
struct Purged {
    purged: u64,
}

#[derive(serde::Deserialize)]
struct Replayed {
    replayed: u64,
}

#[derive(serde::Deserialize)]
struct Messages<T> {
    messages: Vec<T>,
}

#[derive(serde::Serialize)]
struct ConsumeAcking<'a> {
    #[serde(flatten)]
    request: &'a ConsumeRequest,
    ack: &'a [String],
}

#[derive(serde::Deserialize)]
struct Acking {
    messages: Vec<Delivered>,
    ack: Acked,
}

impl Queue {
    pub fn slug(&self) -> &str {
        &self.slug
    }

    async fn call<T: DeserializeOwned>(&self, method: Method, route: &str, body: Option<&impl Serialize>) -> Result<T> {
        self.client.call(method, &format!("{}/{route}", self.slug), body).await
    }

    /// `POST messages`: 201, or 200 with `duplicate` for a repeated idempotency key.
    pub async fn publish(&self, message: NewMessage) -> Result<Published> {
        self.call(Method::POST, "messages", Some(&self.keyed(message))).await
    }

    /// `POST messages/batch`: 1 to 100 messages; more is refused here and sends nothing.
    pub async fn publish_batch(&self, messages: Vec<NewMessage>) -> Result<Vec<Published>> {
        if messages.is_empty() || messages.len() > BATCH_MAX {
            return Err(Error::Invalid(format!("a batch takes 1 to {BATCH_MAX} messages; got {}", messages.len())));
        }
        let messages: Vec<NewMessage> = messages.into_iter().map(|m| self.keyed(m)).collect();
        let answer: Messages<Published> =
            self.call(Method::POST, "messages/batch", Some(&Batch { messages: &messages })).await?;
        Ok(answer.messages)
    }

    /// `POST consume`: up to `max_messages` (1–100), waiting up to `max_wait_seconds` (0–20).
    pub async fn consume(&self, request: &ConsumeRequest) -> Result<Vec<Delivered>> {
        let answer: Messages<Delivered> = self.call(Method::POST, "consume", Some(request)).await?;
        Ok(answer.messages)
    }

    /// `POST consume` that first acknowledges `ack` (1 to 100 receipts, a consumer's previous
    /// batch) as [`Queue::ack`] would: one request instead of two. Answers the messages and what
    /// the acknowledgements did.
    pub async fn consume_acking(&self, request: &ConsumeRequest, ack: &[String]) -> Result<(Vec<Delivered>, Acked)> {
        if ack.is_empty() || ack.len() > BATCH_MAX {
            return Err(Error::Invalid(format!("ack takes 1 to {BATCH_MAX} receipts; got {}", ack.len())));
        }
        let answer: Acking = self.call(Method::POST, "consume", Some(&ConsumeAcking { request, ack })).await?;
        Ok((answer.messages, answer.ack))
    }

    pub async fn ack(&self, receipts: &[String]) -> Result<Acked> {
        self.call(Method::POST, "ack", Some(&Receipts { receipts })).await
    }

    /// `POST nack`: back to the queue after `delay_seconds`; `error` becomes the dead-letter reason
    /// when this was the last attempt.
    pub async fn nack(&self, receipts: &[String], delay_seconds: u64, error: Option<&str>) -> Result<Nacked> {
        let request = NackRequest { receipts, delay_seconds: (delay_seconds > 0).then_some(delay_seconds), error };
        self.call(Method::POST, "nack", Some(&request)).await
    }

    /// `POST extend`: a heartbeat for long work. Each named lease now ends `visibility_seconds`
    /// (1 s to 12 h) from now; the answer's `new_receipt`s replace the ones sent.
    pub async fn extend(&self, receipts: &[String], visibility_seconds: u64) -> Result<ExtendAnswer> {
        self.call(Method::POST, "extend", Some(&ExtendRequest { receipts, visibility_seconds })).await
    }

    pub async fn stats(&self) -> Result<Stats> {
        self.call(Method::GET, "stats", None::<&()>).await
    }

    /// `GET messages/peek?limit=` (1–100).
    pub async fn peek(&self, limit: u32) -> Result<Vec<Peeked>> {
        let answer: Messages<Peeked> =
            self.call(Method::GET, &format!("messages/peek?limit={limit}"), None::<&()>).await?;
        Ok(answer.messages)
    }

    /// `POST purge`: deletes waiting ready messages; returns how many.
    pub async fn purge(&self) -> Result<u64> {
        let answer: Purged = self.call(Method::POST, "purge", Some(&PurgeRequest { state: "ready" })).await?;
        Ok(answer.purged)
    }

    /// `GET dead-letters?limit=` (1–100).
    pub async fn dead_letters(&self, limit: u32) -> Result<Vec<DeadLetter>> {
        #[derive(serde::Deserialize)]
        struct Letters {
            dead_letters: Vec<DeadLetter>,
        }
        let answer: Letters = self.call(Method::GET, &format!("dead-letters?limit={limit}"), None::<&()>).await?;
        Ok(answer.dead_letters)
    }

    pub async fn replay_dead_letters(&self, selection: &Selection) -> Result<u64> {
        let answer: Replayed =
            self.call(Method::POST, "dead-letters/replay", Some(&SelectionBody::of(selection))).await?;
        Ok(answer.replayed)
    }

    pub async fn purge_dead_letters(&self, selection: &Selection) -> Result<u64> {
        let answer: Purged = self.call(Method::POST, "dead-letters/purge", Some(&SelectionBody::of(selection))).await?;
        Ok(answer.purged)
    }
}

impl Queue {
    /// `message` with an idempotency key when a retry could otherwise store it twice.
    fn keyed(&self, mut message: NewMessage) -> NewMessage {
        if message.idempotency_key.is_none() && self.client.max_retries > 0 {
            message.idempotency_key = Some(uuid::Uuid::new_v4().to_string());
        }
        message
    }
}
