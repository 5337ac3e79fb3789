//! A fake of the few Stripe API endpoints billing calls, on 127.0.0.1:0 inside the test binary,
//! speaking Stripe's wire format: form-encoded bodies with bracketed keys (`items[0][price]`,
//! `metadata[queues]`), JSON objects with `id` and `object`, list objects, Stripe's error envelope,
//! and `Idempotency-Key` (a repeated key answers the first answer again and creates nothing).
//! The real async-stripe client talks to it. `set_down(true)` makes every call a 500, and
//! `lose_next_answer()` applies the next write but answers 500, as a dropped connection would.

use aqs_core::config::Config;
use aqs_core::secret::Secret;
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

pub const SECRET_KEY: &str = "sk_test_fake";
pub const PRICE_10MIB: &str = "price_payload_10mib";
pub const PRICE_50MIB: &str = "price_payload_50mib";
pub const PRICE_10MIB_CENTS: u64 = 900;
pub const PRICE_50MIB_CENTS: u64 = 2900;
pub const WEBHOOK_SECRET: &str = "whsec_fake_signing_secret";

/// The `v1` signature of a webhook delivery made at `at` (Unix seconds), as Stripe computes it.
pub fn sign(payload: &str, secret: &str, at: i64) -> String {
    use hmac::{Hmac, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{at}.{payload}").as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

#[derive(Default)]
struct World {
    down: bool,
    lose_next_answer: bool,
    next_id: u64,
    now: i64,
    customers: BTreeMap<String, Value>,
    payment_methods: Vec<Value>,
    subscriptions: BTreeMap<String, Value>,
    checkout_sessions: Vec<Value>,
    /// Idempotency-Key → the status and body first answered.
    answered: HashMap<String, (u16, Value)>,
    /// Every write that changed something: "POST /v1/subscriptions", …
    writes: Vec<String>,
}

#[derive(Clone)]
pub struct FakeStripe {
    pub base: String,
    world: Arc<Mutex<World>>,
}

impl FakeStripe {
    /// Settings that turn billing on against this fake.
    pub fn billing_on(&self) -> impl FnOnce(&mut Config) + Send + 'static {
        let base = self.base.clone();
        move |config| {
            config.stripe_secret_key = Secret::new(SECRET_KEY);
            config.stripe_webhook_secret = Secret::new(WEBHOOK_SECRET);
            config.stripe_api_base = base;
            config.stripe_price_payload_10mib = PRICE_10MIB.into();
            config.stripe_price_payload_50mib = PRICE_50MIB.into();
        }
    }

    pub async fn start() -> Self {
        let world = Arc::new(Mutex::new(World { now: 1_700_000_000, ..Default::default() }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().unwrap());
        let app = Router::new().fallback(handle).with_state(world.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.expect("fake stripe") });
        Self { base, world }
    }

    pub fn set_down(&self, down: bool) {
        self.world.lock().unwrap().down = down;
    }

    pub fn lose_next_answer(&self) {
        self.world.lock().unwrap().lose_next_answer = true;
    }

    /// Gives `customer` a card, as completing Checkout in setup mode does.
    pub fn attach_card(&self, customer: &str, brand: &str, last4: &str) -> String {
        let mut world = self.world.lock().unwrap();
        let id = world.id("pm");
        let created = world.now;
        world.payment_methods.push(json!({
            "id": id, "object": "payment_method", "type": "card", "created": created, "livemode": false,
            "customer": customer, "metadata": {},
            "billing_details": {"address": null, "email": null, "name": null, "phone": null},
            "card": {"brand": brand, "last4": last4, "exp_month": 12, "exp_year": 2030, "funding": "credit",
                     "country": "US", "checks": null, "fingerprint": "fp", "generated_from": null,
                     "networks": null, "three_d_secure_usage": null, "wallet": null, "display_brand": brand}
        }));
        id
    }

    pub fn customers(&self) -> Vec<Value> {
        self.world.lock().unwrap().customers.values().cloned().collect()
    }

    pub fn checkout_sessions(&self) -> Vec<Value> {
        self.world.lock().unwrap().checkout_sessions.clone()
    }

    /// Every subscription, cancelled ones included.
    pub fn subscriptions(&self) -> Vec<Value> {
        self.world.lock().unwrap().subscriptions.values().cloned().collect()
    }

    /// The live subscriptions' items as (price, quantity, queues metadata).
    pub fn live_items(&self) -> Vec<(String, u64, String)> {
        let world = self.world.lock().unwrap();
        let mut items: Vec<(String, u64, String)> = world
            .subscriptions
            .values()
            .filter(|s| s["status"] != "canceled")
            .flat_map(|s| s["items"]["data"].as_array().unwrap().clone())
            .map(|i| {
                (
                    i["price"]["id"].as_str().unwrap().to_owned(),
                    i["quantity"].as_u64().unwrap(),
                    i["metadata"]["queues"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect();
        items.sort();
        items
    }

    pub fn writes(&self) -> Vec<String> {
        self.world.lock().unwrap().writes.clone()
    }
}

impl World {
    fn id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}_fake{:06}", self.next_id)
    }
}

fn error(status: StatusCode, kind: &str, message: &str) -> (StatusCode, Value) {
    (status, json!({"error": {"type": kind, "message": message}}))
}

/// `a[b][0][c]=v` pairs as nested JSON; numeric segments make arrays.
pub fn parse_form(body: &[u8]) -> Value {
    let mut root = Value::Object(Map::new());
    for (key, value) in url::form_urlencoded::parse(body) {
        let mut segments = vec![key.split('[').next().unwrap_or("").to_owned()];
        segments.extend(key.split('[').skip(1).map(|s| s.trim_end_matches(']').to_owned()));
        let mut node = &mut root;
        for (i, segment) in segments.iter().enumerate() {
            let last = i + 1 == segments.len();
            let next_is_index = segments.get(i + 1).is_some_and(|s| s.parse::<usize>().is_ok());
            let fresh = if next_is_index { Value::Array(Vec::new()) } else { Value::Object(Map::new()) };
            node = match node {
                Value::Array(items) => {
                    let index: usize = segment.parse().unwrap_or(items.len());
                    while items.len() <= index {
                        items.push(fresh.clone());
                    }
                    &mut items[index]
                }
                other => {
                    let map = other.as_object_mut().expect("form keys nest objects");
                    map.entry(segment.clone()).or_insert(fresh)
                }
            };
            if last {
                *node = Value::String(value.to_string());
            }
        }
    }
    root
}

fn query(uri: &Uri) -> HashMap<String, String> {
    url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes()).into_owned().collect()
}

fn list(url: &str, data: Vec<Value>) -> Value {
    json!({"object": "list", "url": url, "has_more": false, "data": data})
}

async fn handle(
    State(world): State<Arc<Mutex<World>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut world = world.lock().unwrap();
    if world.down {
        let (status, body) = error(StatusCode::INTERNAL_SERVER_ERROR, "api_error", "the fake is down");
        return (status, axum::Json(body)).into_response();
    }
    let authorised =
        headers.get("authorization").and_then(|v| v.to_str().ok()).is_some_and(|v| v == format!("Bearer {SECRET_KEY}"));
    if !authorised {
        let (status, body) = error(StatusCode::UNAUTHORIZED, "invalid_request_error", "Invalid API Key provided");
        return (status, axum::Json(body)).into_response();
    }
    let key = headers.get("idempotency-key").and_then(|v| v.to_str().ok()).map(str::to_owned);
    if method != Method::GET
        && let Some((status, body)) = key.as_ref().and_then(|k| world.answered.get(k)).cloned()
    {
        let mut response = (StatusCode::from_u16(status).unwrap(), axum::Json(body)).into_response();
        response.headers_mut().insert("idempotent-replayed", "true".parse().unwrap());
        return response;
    }
    let form = parse_form(&body);
    let (status, answer) = route(&mut world, &method, &uri, &form);
    if method != Method::GET && status.is_success() {
        world.writes.push(format!("{method} {}", uri.path()));
        if let Some(key) = key {
            world.answered.insert(key, (status.as_u16(), answer.clone()));
        }
        if world.lose_next_answer {
            world.lose_next_answer = false;
            let (status, body) = error(StatusCode::INTERNAL_SERVER_ERROR, "api_error", "connection lost");
            return (status, axum::Json(body)).into_response();
        }
    }
    (status, axum::Json(answer)).into_response()
}

fn route(world: &mut World, method: &Method, uri: &Uri, form: &Value) -> (StatusCode, Value) {
    let path: Vec<&str> = uri.path().trim_matches('/').split('/').collect();
    let q = query(uri);
    match (method.as_str(), path.as_slice()) {
        ("POST", ["v1", "customers"]) => {
            let id = world.id("cus");
            let customer = customer(&id, form, world.now);
            world.customers.insert(id, customer.clone());
            (StatusCode::OK, customer)
        }
        ("POST", ["v1", "checkout", "sessions"]) => {
            if form["mode"] != "setup" {
                return error(StatusCode::BAD_REQUEST, "invalid_request_error", "only setup mode is faked");
            }
            let id = world.id("cs");
            let session = checkout_session(&id, form, world.now);
            world.checkout_sessions.push(session.clone());
            (StatusCode::OK, session)
        }
        ("POST", ["v1", "billing_portal", "sessions"]) => {
            let id = world.id("bps");
            (StatusCode::OK, portal_session(&id, form, world.now))
        }
        ("GET", ["v1", "payment_methods"]) => {
            let customer = q.get("customer").cloned().unwrap_or_default();
            let data = world.payment_methods.iter().filter(|pm| pm["customer"] == customer.as_str()).cloned().collect();
            (StatusCode::OK, list("/v1/payment_methods", data))
        }
        ("GET", ["v1", "prices", id]) => match *id {
            PRICE_10MIB => (StatusCode::OK, price(id, PRICE_10MIB_CENTS)),
            PRICE_50MIB => (StatusCode::OK, price(id, PRICE_50MIB_CENTS)),
            _ => error(StatusCode::NOT_FOUND, "invalid_request_error", "No such price"),
        },
        ("GET", ["v1", "subscriptions"]) => {
            let customer = q.get("customer").cloned().unwrap_or_default();
            let data = world
                .subscriptions
                .values()
                .filter(|s| s["customer"] == customer.as_str() && s["status"] != "canceled")
                .cloned()
                .collect();
            (StatusCode::OK, list("/v1/subscriptions", data))
        }
        ("POST", ["v1", "subscriptions"]) => create_subscription(world, form),
        ("DELETE", ["v1", "subscriptions", id]) => {
            let Some(sub) = world.subscriptions.get_mut(*id) else {
                return error(StatusCode::NOT_FOUND, "invalid_request_error", "No such subscription");
            };
            sub["status"] = json!("canceled");
            sub["canceled_at"] = json!(1_700_000_000);
            (StatusCode::OK, sub.clone())
        }
        ("POST", ["v1", "subscription_items"]) => {
            let sub_id = form["subscription"].as_str().unwrap_or_default().to_owned();
            let price_id = form["price"].as_str().unwrap_or_default().to_owned();
            let id = world.id("si");
            let now = world.now;
            let Some(sub) = world.subscriptions.get_mut(&sub_id).filter(|s| s["status"] != "canceled") else {
                return error(StatusCode::NOT_FOUND, "invalid_request_error", "No such subscription");
            };
            let items = sub["items"]["data"].as_array_mut().unwrap();
            if items.iter().any(|i| i["price"]["id"] == price_id.as_str()) {
                return error(
                    StatusCode::BAD_REQUEST,
                    "invalid_request_error",
                    "Cannot add multiple subscription items with the same price",
                );
            }
            let item = subscription_item(&id, &sub_id, form, now);
            items.push(item.clone());
            (StatusCode::OK, item)
        }
        ("POST", ["v1", "subscription_items", id]) => {
            let Some(item) = find_item(world, id) else {
                return error(StatusCode::NOT_FOUND, "invalid_request_error", "No such subscription item");
            };
            if let Some(quantity) = form["quantity"].as_str() {
                item["quantity"] = json!(quantity.parse::<u64>().unwrap());
            }
            if let Some(queues) = form["metadata"]["queues"].as_str() {
                item["metadata"]["queues"] = json!(queues);
            }
            (StatusCode::OK, item.clone())
        }
        ("DELETE", ["v1", "subscription_items", id]) => {
            for sub in world.subscriptions.values_mut() {
                let items = sub["items"]["data"].as_array_mut().unwrap();
                if let Some(at) = items.iter().position(|i| i["id"] == *id) {
                    if items.len() == 1 {
                        return error(
                            StatusCode::BAD_REQUEST,
                            "invalid_request_error",
                            "A subscription must have at least one active plan; cancel the subscription instead",
                        );
                    }
                    items.remove(at);
                    return (StatusCode::OK, json!({"id": id, "object": "subscription_item", "deleted": true}));
                }
            }
            error(StatusCode::NOT_FOUND, "invalid_request_error", "No such subscription item")
        }
        _ => error(StatusCode::NOT_FOUND, "invalid_request_error", "Unrecognized request URL"),
    }
}

fn find_item<'a>(world: &'a mut World, id: &str) -> Option<&'a mut Value> {
    world
        .subscriptions
        .values_mut()
        .flat_map(|s| s["items"]["data"].as_array_mut().unwrap().iter_mut())
        .find(|i| i["id"] == id)
}

fn create_subscription(world: &mut World, form: &Value) -> (StatusCode, Value) {
    let customer = form["customer"].as_str().unwrap_or_default().to_owned();
    if !world.customers.contains_key(&customer) {
        return error(StatusCode::BAD_REQUEST, "invalid_request_error", "No such customer");
    }
    let has_card = world.payment_methods.iter().any(|pm| pm["customer"] == customer.as_str());
    if !has_card {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "This customer has no attached payment source or default payment method.",
        );
    }
    let id = world.id("sub");
    let now = world.now;
    let mut items = Vec::new();
    for spec in form["items"].as_array().cloned().unwrap_or_default() {
        let item_id = world.id("si");
        items.push(subscription_item(&item_id, &id, &spec, now));
    }
    let sub = subscription(&id, &customer, items, now);
    world.subscriptions.insert(id, sub.clone());
    (StatusCode::OK, sub)
}

fn customer(id: &str, form: &Value, now: i64) -> Value {
    json!({
        "id": id, "object": "customer", "created": now, "livemode": false,
        "email": form["email"], "metadata": form.get("metadata").cloned().unwrap_or(json!({})),
        "balance": 0, "currency": null, "delinquent": false, "description": null, "name": null,
        "invoice_prefix": "FAKE", "next_invoice_sequence": 1, "phone": null, "preferred_locales": [],
        "tax_exempt": "none", "default_source": null, "discount": null, "address": null, "shipping": null,
        "invoice_settings": {"custom_fields": null, "default_payment_method": null, "footer": null,
                             "rendering_options": null}
    })
}

fn checkout_session(id: &str, form: &Value, now: i64) -> Value {
    json!({
        "id": id, "object": "checkout.session", "mode": "setup", "status": "open", "created": now,
        "expires_at": now + 86_400, "livemode": false, "customer": form["customer"],
        "success_url": form["success_url"], "cancel_url": form["cancel_url"], "currency": form["currency"],
        "url": format!("https://checkout.stripe.test/c/setup/{id}"), "metadata": {},
        "payment_status": "no_payment_required", "payment_method_types": ["card"],
        "setup_intent": format!("seti_{id}"), "client_reference_id": null, "customer_email": null,
        "amount_subtotal": null, "amount_total": null, "locale": null, "payment_intent": null,
        "subscription": null, "submit_type": null, "billing_address_collection": null,
        "automatic_tax": {"enabled": false, "liability": null, "status": null},
        "custom_fields": [], "custom_text": {"after_submit": null, "shipping_address": null, "submit": null,
                                              "terms_of_service_acceptance": null},
        "customer_creation": null, "payment_method_collection": "always", "phone_number_collection": {"enabled": false},
        "shipping_options": [], "ui_mode": "hosted", "total_details": null
    })
}

fn portal_session(id: &str, form: &Value, now: i64) -> Value {
    json!({
        "id": id, "object": "billing_portal.session", "created": now, "livemode": false,
        "customer": form["customer"], "return_url": form["return_url"],
        "url": format!("https://billing.stripe.test/p/session/{id}"), "configuration": "bpc_fake",
        "flow": null, "locale": null, "on_behalf_of": null
    })
}

fn price(id: &str, cents: u64) -> Value {
    json!({
        "id": id, "object": "price", "active": true, "created": 1_700_000_000, "livemode": false,
        "currency": "usd", "unit_amount": cents, "unit_amount_decimal": cents.to_string(),
        "billing_scheme": "per_unit", "type": "recurring", "metadata": {}, "nickname": null,
        "product": "prod_payload_addon", "lookup_key": null, "tax_behavior": "unspecified",
        "tiers_mode": null, "transform_quantity": null, "custom_unit_amount": null,
        "recurring": {"interval": "month", "interval_count": 1, "usage_type": "licensed",
                      "aggregate_usage": null, "meter": null, "trial_period_days": null}
    })
}

fn subscription_item(id: &str, subscription: &str, spec: &Value, now: i64) -> Value {
    let price_id = spec["price"].as_str().unwrap_or_default();
    let cents = if price_id == PRICE_50MIB { PRICE_50MIB_CENTS } else { PRICE_10MIB_CENTS };
    json!({
        "id": id, "object": "subscription_item", "created": now, "subscription": subscription,
        "price": price(price_id, cents),
        "quantity": spec["quantity"].as_str().and_then(|q| q.parse::<u64>().ok()).unwrap_or(1),
        "metadata": spec.get("metadata").cloned().unwrap_or(json!({})),
        "billing_thresholds": null, "discounts": [], "tax_rates": [],
        "current_period_start": now, "current_period_end": now + 2_592_000
    })
}

fn subscription(id: &str, customer: &str, items: Vec<Value>, now: i64) -> Value {
    let mut sub = json!({
        "id": id, "object": "subscription", "customer": customer, "status": "active", "created": now,
        "livemode": false, "metadata": {}, "currency": "usd", "start_date": now,
        "billing_cycle_anchor": now, "cancel_at_period_end": false,
        "collection_method": "charge_automatically", "current_period_start": now,
        "current_period_end": now + 2_592_000, "default_tax_rates": [], "discounts": [],
        "automatic_tax": {"enabled": false, "liability": null},
        "cancellation_details": {"comment": null, "feedback": null, "reason": null},
        "items": {"object": "list", "url": format!("/v1/subscription_items?subscription={id}"),
                  "has_more": false, "data": items}
    });
    // Stripe sends every field; the ones nothing here sets are null.
    for field in [
        "cancel_at",
        "canceled_at",
        "days_until_due",
        "default_payment_method",
        "default_source",
        "description",
        "discount",
        "ended_at",
        "latest_invoice",
        "pending_setup_intent",
        "pending_update",
        "schedule",
        "trial_end",
        "trial_start",
        "payment_settings",
        "pause_collection",
        "on_behalf_of",
        "transfer_data",
        "application",
        "application_fee_percent",
        "billing_thresholds",
        "next_pending_invoice_item_invoice",
        "pending_invoice_item_interval",
        "test_clock",
        "trial_settings",
    ] {
        sub[field] = Value::Null;
    }
    sub
}
