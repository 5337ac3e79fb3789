//! Talking to AQS: a bench member and its queues made through the management API (`/api/v1`), and
//! the queue API's request bodies (built once, as bytes) and answers.

use crate::client::{Call, Conn, Target, bearer};
use anyhow::Context;
use base64::Engine;
use bytes::Bytes;
use hyper::StatusCode;
use hyper::header::HeaderValue;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Queues a member may own (spec: "Queues per member 10").
const QUEUES_PER_MEMBER: usize = 10;

/// The message the bench publishes: the same object BullMQ's bench.mjs adds, as a JSON string.
pub fn sample_body() -> String {
    format!(r#"{{"type":"resize","key":"avatars/42.png","pad":"{}"}}"#, "x".repeat(64))
}

/// Makes bench members and queues; signs up another member when one has all its queues.
pub struct Tenancy {
    conn: Conn,
    session: HeaderValue,
    queues_made: usize,
    /// The queues made since the last `delete_made`, with their member's session.
    undeleted: Vec<(HeaderValue, String)>,
}

/// A queue made for one scenario, with its paths and tokens.
#[derive(Clone)]
pub struct BenchQueue {
    pub slug: String,
    /// One or more tokens with send and consume scopes; connections take them in turn so a
    /// per-token rate limit does not cap the whole run.
    pub tokens: Vec<HeaderValue>,
    /// The tokens' secrets, in the same order, for setup through `aqs-client`.
    pub secrets: Vec<String>,
}

impl Tenancy {
    pub async fn new(target: &Target) -> anyhow::Result<Self> {
        let mut conn = target.connect().await?;
        let session = sign_up(&mut conn).await?;
        Ok(Self { conn, session, queues_made: 0, undeleted: Vec::new() })
    }

    /// Queues of an existing member (the push scenarios' operator), who is never replaced.
    pub fn with_session(conn: Conn, session: HeaderValue) -> Self {
        Self { conn, session, queues_made: 0, undeleted: Vec::new() }
    }

    /// A fresh queue named after `name`, with `tokens` tokens (the first comes with the queue).
    pub async fn queue(&mut self, name: &str, tokens: usize) -> anyhow::Result<BenchQueue> {
        if self.queues_made == QUEUES_PER_MEMBER {
            self.session = sign_up(&mut self.conn).await?;
            self.queues_made = 0;
        }
        let suffix = &uuid::Uuid::new_v4().simple().to_string()[..8];
        let body = json!({ "name": format!("bench-{name}-{suffix}"), "visibility_timeout_seconds": 60 });
        let call = Call::post("/api/v1/queues", Some(&self.session), body.to_string())?;
        let created: Value = serde_json::from_slice(&self.conn.expect(&call, StatusCode::CREATED).await?)?;
        self.queues_made += 1;
        let slug = created["queue"]["slug"].as_str().context("queue answer has no queue.slug")?.to_owned();
        let first = created["token"]["secret"].as_str().context("queue answer has no token.secret")?;
        let mut secrets = vec![bearer(first)?];
        let mut raw = vec![first.to_owned()];
        for i in 1..tokens {
            let body = json!({ "name": format!("bench-{i}"), "scopes": ["send", "consume", "manage"] });
            let call = Call::post(&format!("/api/v1/queues/{slug}/tokens"), Some(&self.session), body.to_string())?;
            let minted: Value = serde_json::from_slice(&self.conn.expect(&call, StatusCode::CREATED).await?)?;
            let secret = minted["token"]["secret"].as_str().context("token answer has no token.secret")?;
            secrets.push(bearer(secret)?);
            raw.push(secret.to_owned());
        }
        self.undeleted.push((self.session.clone(), slug.clone()));
        Ok(BenchQueue { slug, tokens: secrets, secrets: raw })
    }

    /// Whether queues made here are still to be deleted.
    pub fn has_undeleted(&self) -> bool {
        !self.undeleted.is_empty()
    }

    /// Deletes every queue made since the last call, with its messages, so that one scenario's
    /// stored messages do not weigh on the next (Redis's memory, the forks of its AOF rewrites),
    /// as each peer's scenarios delete their queues.
    pub async fn delete_made(&mut self) -> anyhow::Result<()> {
        for (session, slug) in std::mem::take(&mut self.undeleted) {
            let mut call = Call::get(&format!("/api/v1/queues/{slug}"), Some(&session))?;
            call.method = hyper::Method::DELETE;
            self.conn.expect(&call, StatusCode::NO_CONTENT).await?;
        }
        Ok(())
    }
}

async fn sign_up(conn: &mut Conn) -> anyhow::Result<HeaderValue> {
    let id = uuid::Uuid::new_v4().simple().to_string();
    let body = json!({ "email": format!("bench-{id}@example.com"), "password": format!("pw-{id}") });
    let call = Call::post("/api/v1/auth/signup", None, body.to_string())?;
    let answer: Value = serde_json::from_slice(&conn.expect(&call, StatusCode::CREATED).await?)?;
    bearer(answer["session"].as_str().context("sign-up answer has no session")?)
}

impl BenchQueue {
    /// The token for connection `i`.
    pub fn token(&self, i: usize) -> &HeaderValue {
        &self.tokens[i % self.tokens.len()]
    }

    pub fn publish(&self, i: usize, body: &str) -> anyhow::Result<Call> {
        Call::post(&format!("/queue/v1/{}/messages", self.slug), Some(self.token(i)), publish_body(body))
    }

    pub fn publish_batch(&self, i: usize, body: &str, count: usize) -> anyhow::Result<Call> {
        Call::post(&format!("/queue/v1/{}/messages/batch", self.slug), Some(self.token(i)), batch_body(body, count))
    }

    pub fn consume(&self, i: usize, max_messages: u32, max_wait_seconds: u32) -> anyhow::Result<Call> {
        Call::post(
            &format!("/queue/v1/{}/consume", self.slug),
            Some(self.token(i)),
            consume_body(max_messages, max_wait_seconds, &[]),
        )
    }

    /// An ack call; its body is set per use with `ack_body`.
    pub fn ack(&self, i: usize) -> anyhow::Result<Call> {
        Call::post(&format!("/queue/v1/{}/ack", self.slug), Some(self.token(i)), Bytes::new())
    }

    pub fn stats(&self) -> anyhow::Result<Call> {
        Call::get(&format!("/queue/v1/{}/stats", self.slug), Some(self.token(0)))
    }

    /// The queue through `aqs-client` with token `i`, for setup outside the measured loops. No
    /// retries (so no generated idempotency keys): the stored messages are the measured ones.
    pub fn client(&self, target: &Target, i: usize) -> aqs_client::Queue {
        let secret = &self.secrets[i % self.secrets.len()];
        aqs_client::Client::builder(target.origin(), secret).max_retries(0).build().queue(&self.slug)
    }
}

pub fn publish_body(body: &str) -> Bytes {
    json!({ "body": body }).to_string().into()
}

pub fn batch_body(body: &str, count: usize) -> Bytes {
    let messages: Vec<Value> = (0..count).map(|_| json!({ "body": body })).collect();
    json!({ "messages": messages }).to_string().into()
}

pub fn ack_body(receipts: &[String]) -> Bytes {
    json!({ "receipts": receipts }).to_string().into()
}

/// A consume's body (leases of 60 s); with `ack`, the previous batch's receipts it acknowledges
/// first, as the SDKs' consumer loops send them.
pub fn consume_body(max_messages: u32, max_wait_seconds: u32, ack: &[String]) -> Bytes {
    let mut body =
        json!({ "max_messages": max_messages, "max_wait_seconds": max_wait_seconds, "visibility_seconds": 60 });
    if !ack.is_empty() {
        body["ack"] = json!(ack);
    }
    body.to_string().into()
}

/// The fields of a consume answer the bench reads.
#[derive(Debug, Deserialize)]
pub struct Consumed {
    pub messages: Vec<Delivered>,
    /// What the consume's `ack` receipts did, when it carried some.
    pub ack: Option<Acked>,
}

/// The field of an ack answer the bench reads.
#[derive(Debug, Deserialize)]
pub struct Acked {
    pub acked: u64,
}

#[derive(Debug, Deserialize)]
pub struct Delivered {
    pub receipt: String,
    pub body_base64: String,
}

impl Delivered {
    /// The send time a timed message carries (see `timed_body`).
    pub fn sent_at(&self) -> Option<Instant> {
        sent_at(&base64::engine::general_purpose::STANDARD.decode(&self.body_base64).ok()?)
    }
}

/// The send time a timed body carries (see `timed_body`), whichever queue delivered it.
pub fn sent_at(body: &[u8]) -> Option<Instant> {
    let text = std::str::from_utf8(body).ok()?;
    let micros: u64 = text.split("\"t\":").nth(1)?.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
    Some(epoch() + Duration::from_micros(micros))
}

/// The same object as `sample_body`, plus `t`: now, in microseconds since this process's epoch,
/// so the receiver (in this process) can time the trip without a shared clock. Returns the body
/// and the instant it names.
pub fn timed_body() -> (String, Instant) {
    // The epoch first: a send time before it would round to the epoch itself.
    epoch();
    let sent = Instant::now();
    (timed_body_at(sent), sent)
}

/// A timed body naming `at` (rounded down to the microsecond), e.g. an open-loop arrival's
/// scheduled time. Its length does not depend on `at` beyond the digits of `t`.
pub fn timed_body_at(at: Instant) -> String {
    let t = at.saturating_duration_since(epoch()).as_micros();
    format!(r#"{{"type":"resize","key":"avatars/42.png","t":{t},"pad":"{}"}}"#, "x".repeat(48))
}

/// The instant timed bodies count from; the first call fixes it.
pub fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timed_bodies_round_trip() {
        let (body, sent) = timed_body();
        assert!(serde_json::from_str::<Value>(&body).is_ok());
        let delivered = Delivered {
            receipt: "r".into(),
            body_base64: base64::engine::general_purpose::STANDARD.encode(body.as_bytes()),
        };
        let back = delivered.sent_at().unwrap();
        assert!(back <= sent && sent - back < Duration::from_micros(1));
    }

    #[test]
    fn a_scheduled_time_survives_any_queue() {
        let at = Instant::now() + Duration::from_millis(250);
        let body = timed_body_at(at);
        let back = sent_at(body.as_bytes()).unwrap();
        assert!(back <= at && at - back < Duration::from_micros(1));
        assert_eq!(sent_at(sample_body().as_bytes()), None);
    }

    #[test]
    fn request_bodies_are_the_documented_json() {
        let body = sample_body();
        assert_eq!(body.len(), 113);
        let one: Value = serde_json::from_slice(&publish_body(&body)).unwrap();
        assert_eq!(one["body"], body.as_str());
        let batch: Value = serde_json::from_slice(&batch_body(&body, 3)).unwrap();
        assert_eq!(batch["messages"].as_array().unwrap().len(), 3);
        let ack: Value = serde_json::from_slice(&ack_body(&["a".into(), "b".into()])).unwrap();
        assert_eq!(ack, json!({ "receipts": ["a", "b"] }));
    }
}
