//! Push targets through the management API, for the push scenarios: the bench operator (the member
//! `infra/bench` names in `AQS_OPERATOR_EMAILS`) authorises the handler's origin as a callback URL
//! for itself, makes the push queues and turns push on and off. The service must allow handlers on
//! loopback (`AQS_PUSH_ALLOW_PRIVATE_NETWORKS=true`).

use crate::api::Tenancy;
use crate::client::{Call, Conn, Target, bearer};
use anyhow::Context;
use hyper::header::HeaderValue;
use hyper::{Method, StatusCode};
use serde_json::{Value, json};

/// The member the bench signs up (or logs in) as operator; `infra/bench` and the smoke test start
/// the service with it in `AQS_OPERATOR_EMAILS`.
pub const OPERATOR_EMAIL: &str = "bench-operator@example.com";
const OPERATOR_PASSWORD: &str = "bench-operator-password";

/// How a queue is pushed.
#[derive(Debug, Clone, Copy)]
pub enum Mode {
    /// One POST per message, at most `concurrency` in flight.
    Message { concurrency: u32 },
    /// One POST per batch of up to `per_run`, at most `concurrency` batches in flight.
    Batch { per_run: u32, concurrency: u32 },
}

/// The operator's session, with the handler's origin authorised for it.
pub struct PushOperator {
    conn: Conn,
    session: HeaderValue,
}

impl PushOperator {
    /// Signs up (or, on a second run against the same database, logs in) the bench operator and
    /// authorises `handler_base` (`http://localhost:PORT`) for it.
    pub async fn new(target: &Target, handler_base: &str) -> anyhow::Result<Self> {
        let mut conn = target.connect().await?;
        let credentials = json!({ "email": OPERATOR_EMAIL, "password": OPERATOR_PASSWORD }).to_string();
        let signup = Call::post("/api/v1/auth/signup", None, credentials.clone())?;
        let (status, answer) = conn.send(&signup).await?;
        let answer = if status == StatusCode::CREATED {
            answer
        } else {
            conn.expect(&Call::post("/api/v1/auth/login", None, credentials)?, StatusCode::OK).await?
        };
        let answer: Value = serde_json::from_slice(&answer)?;
        let session = bearer(answer["session"].as_str().context("sign-in answer has no session")?)?;
        let member = answer["member"]["id"].as_str().context("sign-in answer has no member.id")?;
        let prefix = json!({ "prefix": format!("{handler_base}/") }).to_string();
        let call = Call::post(&format!("/api/v1/admin/members/{member}/callback-urls"), Some(&session), prefix)?;
        match conn.send(&call).await? {
            (StatusCode::CREATED | StatusCode::CONFLICT, _) => {}
            (StatusCode::NOT_FOUND, _) => anyhow::bail!(
                "{OPERATOR_EMAIL} is not an operator: start the service with AQS_OPERATOR_EMAILS={OPERATOR_EMAIL}"
            ),
            (status, body) => {
                anyhow::bail!("adding the callback URL answered {status}: {}", String::from_utf8_lossy(&body))
            }
        }
        Ok(Self { conn, session })
    }

    /// The operator's queues, made and deleted like any bench member's.
    pub async fn tenancy(&self, target: &Target) -> anyhow::Result<Tenancy> {
        Ok(Tenancy::with_session(target.connect().await?, self.session.clone()))
    }

    /// Turns push on for `slug`, delivering to `handler_url`.
    pub async fn start(&mut self, slug: &str, handler_url: &str, mode: Mode) -> anyhow::Result<()> {
        let body = match mode {
            Mode::Message { concurrency } => {
                json!({ "handler_url": handler_url, "mode": "message", "timeout_seconds": 30, "concurrency": concurrency })
            }
            Mode::Batch { per_run, concurrency } => json!({
                "handler_url": handler_url, "mode": "batch", "messages_per_run": per_run, "wait_seconds": 0,
                "timeout_seconds": 30, "concurrency": concurrency,
            }),
        };
        let mut call = Call::post(&format!("/api/v1/queues/{slug}/push"), Some(&self.session), body.to_string())?;
        call.method = Method::PUT;
        self.conn.expect(&call, StatusCode::CREATED).await.context("turning push on")?;
        Ok(())
    }

    /// Turns push off for `slug` (its dispatchers stop within a second).
    pub async fn stop(&mut self, slug: &str) -> anyhow::Result<()> {
        let mut call = Call::get(&format!("/api/v1/queues/{slug}/push"), Some(&self.session))?;
        call.method = Method::DELETE;
        self.conn.expect(&call, StatusCode::NO_CONTENT).await.context("turning push off")?;
        Ok(())
    }
}
