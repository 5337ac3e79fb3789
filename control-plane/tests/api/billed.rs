//! `spawn_billed`: the control plane with billing on against the fake Stripe (`fake_stripe`), the
//! real outbox loop running, and helpers to add a card, buy add-ons and deliver signed webhooks.

use super::fake_stripe::{FakeStripe, WEBHOOK_SECRET, sign};
use super::support::{Reply, TestApp, spawn_app_with};
use aqs_core::ids::QueueId;
use aqs_core::time::now_ms;
use aqs_engine::{Engine, NewMessage, PublishOutcome};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::time::{Duration, Instant};
use tokio_util::sync::{CancellationToken, DropGuard};

pub struct Billed {
    pub app: TestApp,
    pub stripe: FakeStripe,
    pub engine: Engine,
    _stop: DropGuard,
}

pub async fn spawn_billed(db: PgPool) -> Billed {
    let stripe = FakeStripe::start().await;
    let app = spawn_app_with(db, stripe.billing_on()).await;
    let stop = CancellationToken::new();
    aqs_control_plane::spawn_background(&app.cp, stop.clone());
    let engine = Engine::new(app.redis.clone(), app.keys.clone());
    Billed { app, stripe, engine, _stop: stop.drop_guard() }
}

pub fn now_secs() -> i64 {
    (now_ms() / 1000) as i64
}

pub fn event(id: &str, kind: &str, created: i64, object: Value) -> String {
    json!({"id": id, "object": "event", "type": kind, "created": created, "livemode": false,
           "api_version": "2024-06-20", "data": {"object": object}})
    .to_string()
}

impl Billed {
    pub async fn deliver(&self, payload: &str, signature: Option<String>) -> Reply {
        let mut request =
            self.app.client.post(format!("{}/api/v1/billing/webhook", self.app.base)).body(payload.to_owned());
        if let Some(signature) = signature {
            request = request.header("Stripe-Signature", signature);
        }
        self.app.raw(request).await
    }

    /// Delivers `payload` correctly signed, now.
    pub async fn deliver_signed(&self, payload: &str) -> Reply {
        let at = now_secs();
        self.deliver(payload, Some(format!("t={at},v1={}", sign(payload, WEBHOOK_SECRET, at)))).await
    }

    /// The member goes through Checkout: a customer, a card on it, and the webhook that says so.
    pub async fn add_card(&self, session: &str) -> String {
        let setup = self.app.post(session, "/api/v1/billing/setup", json!({})).await.expect(200);
        assert!(setup["url"].as_str().unwrap().starts_with("https://checkout.stripe.test/"), "{setup}");
        let customer = self.stripe.checkout_sessions().last().unwrap()["customer"].as_str().unwrap().to_owned();
        self.stripe.attach_card(&customer, "visa", "4242");
        let completed = event(
            &format!("evt_cs_{customer}"),
            "checkout.session.completed",
            now_secs(),
            json!({"id": "cs_x", "object": "checkout.session", "mode": "setup", "customer": customer}),
        );
        self.deliver_signed(&completed).await.expect(200);
        customer
    }

    pub async fn queue(&self, session: &str, name: &str) -> (String, QueueId) {
        let body = self.app.queue(session, name).await;
        let id = QueueId::parse(body["queue"]["id"].as_str().unwrap()).unwrap();
        (body["queue"]["slug"].as_str().unwrap().to_owned(), id)
    }

    pub async fn set_size(&self, session: &str, slug: &str, size: u64) -> Reply {
        self.app.patch(session, &format!("/api/v1/queues/{slug}"), json!({"payload_size": size})).await
    }

    pub async fn publish(&self, queue: QueueId, bytes: usize) -> PublishOutcome {
        let message = NewMessage {
            body: vec![b'x'; bytes],
            content_type: "application/octet-stream".into(),
            attributes: String::new(),
            group_id: None,
            idempotency_key: None,
            delay_ms: 0,
        };
        self.engine.publish(queue, &[message], now_ms()).await.unwrap()
    }

    /// Waits (bounded) until the fake Stripe's live items are `want`.
    pub async fn until_items(&self, want: Vec<(String, u64, String)>) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.stripe.live_items() != want {
            assert!(Instant::now() < deadline, "Stripe has {:?}, expected {want:?}", self.stripe.live_items());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

pub fn item(price: &str, queues: &[QueueId]) -> (String, u64, String) {
    let mut ids: Vec<String> = queues.iter().map(|q| q.0.simple().to_string()).collect();
    ids.sort();
    (price.to_owned(), ids.len() as u64, ids.join(","))
}
