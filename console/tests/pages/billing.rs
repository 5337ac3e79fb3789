//! Billing in the console, against the fake Stripe API: the Settings tab asks to confirm the
//! price and sends a member without a card through Checkout and back, then buys the add-on; the
//! Billing & metrics page shows it with its price, usage as estimates, the budget and its alert;
//! operators see who pays what. With billing off the page says it is not configured.

use super::fake_stripe::{FakeStripe, WEBHOOK_SECRET, sign};
use super::support::{OPERATOR, Visitor, queue_of, spawn_console, spawn_console_with};
use aqs_core::time::now_ms;
use serde_json::json;
use sqlx::PgPool;

fn ten_mib(confirm: bool) -> Vec<(&'static str, &'static str)> {
    let mut fields = vec![
        ("visibility_timeout_seconds", "30"),
        ("max_attempts", "5"),
        ("payload_size", "10485760"),
        ("storage_limit_mib", "1024"),
    ];
    if confirm {
        fields.push(("confirm_add_on", "yes"));
    }
    fields
}

#[sqlx::test(migrations = "../migrations")]
async fn a_member_buys_an_add_on_through_checkout_and_sees_it_billed(db: PgPool) {
    let stripe = FakeStripe::start().await;
    let app = spawn_console_with(db, stripe.billing_on()).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("videos", "5").await;

    let settings = ada.get("/queues/videos/settings").await;
    settings.assert_contains("10 MiB $9.00/month");
    settings.assert_contains("name=\"confirm_add_on\"");
    let unconfirmed = ada.post("/queues/videos/settings", &ten_mib(false)).await;
    assert_eq!(unconfirmed.status, 422);
    unconfirmed.assert_contains("ick the box to confirm the monthly add-on price");

    // No card: off to Stripe Checkout (setup mode), which returns to /billing.
    let to_checkout = ada.post("/queues/videos/settings", &ten_mib(true)).await;
    assert_eq!(to_checkout.status, 303);
    assert!(to_checkout.location().starts_with("https://checkout.stripe.test/"), "{}", to_checkout.location());
    let session = stripe.checkout_sessions()[0].clone();
    assert_eq!(session["success_url"], "http://127.0.0.1/billing?setup=done");
    let customer = session["customer"].as_str().unwrap().to_owned();
    stripe.attach_card(&customer, "visa", "4242");
    let payload = json!({"id": "evt_1", "object": "event", "type": "checkout.session.completed",
        "created": now_ms() / 1000, "data": {"object": {"id": session["id"], "object": "checkout.session",
        "customer": customer}}})
    .to_string();
    let at = (now_ms() / 1000) as i64;
    let header = format!("t={at},v1={}", sign(&payload, WEBHOOK_SECRET, at));
    aqs_control_plane::billing::webhook::receive(&app.cp, Some(&header), payload.as_bytes()).await.unwrap();

    let back = ada.get("/billing?setup=done").await;
    back.assert_contains("Payment method received");
    back.assert_contains("visa ending in 4242");

    ada.get("/queues/videos/settings").await;
    let saved = ada.post("/queues/videos/settings", &ten_mib(true)).await;
    assert_eq!(saved.location(), "/queues/videos/settings");
    ada.follow(saved).await.assert_contains("Settings saved.");
    assert_eq!(queue_of(&app, "ada@example.com", "videos").await.payload_size, 10 << 20);
    assert_eq!(stripe.live_items().len(), 1);

    let billing = ada.get("/billing").await;
    billing.assert_contains("id=\"add-ons\"");
    billing.assert_contains("<td data-label=\"Monthly price\">$9.00</td>");
    billing.assert_contains("<td id=\"monthly-total\">$9.00</td>");
    billing.assert_contains("Usage this month <span class=\"badge\">estimate</span>");
    billing.assert_lacks("id=\"budget-alert\"");

    let saved = ada.post("/billing/budget", &[("monthly_limit_dollars", "10"), ("alert_percent", "50")]).await;
    let page = ada.follow(saved).await;
    page.assert_contains("Budget saved.");
    page.assert_contains("id=\"budget-alert\"");
    let bad = ada.post("/billing/budget", &[("monthly_limit_dollars", "10"), ("alert_percent", "0")]).await;
    assert_eq!(bad.status, 422);
    bad.assert_contains("id=\"alert-percent-error\"");
    // Both fields' errors at once.
    let both = ada.post("/billing/budget", &[("monthly_limit_dollars", "99999999999"), ("alert_percent", "0")]).await;
    assert_eq!(both.status, 422);
    both.assert_contains("id=\"monthly-limit-error\"");
    both.assert_contains("id=\"alert-percent-error\"");

    let mut operator = Visitor::new(&app);
    operator.sign_up(OPERATOR).await;
    let list = operator.get("/admin/billing").await;
    list.assert_contains("ada@example.com");
    list.assert_contains(&customer);
    list.assert_contains("videos (10 MiB)");
    assert_eq!(ada.get("/admin/billing").await.status, 404);
}

#[sqlx::test(migrations = "../migrations")]
async fn with_billing_off_the_page_says_it_is_not_configured(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    let page = ada.get("/billing").await;
    page.assert_contains("Billing is not configured");
    page.assert_lacks("Add a payment method");
    ada.create_queue("videos", "5").await;
    ada.get("/queues/videos/settings").await.assert_contains("billing is not configured here, so they are free");
}

/// An add-on waiting at Stripe shows the operator why: its failed tries, the next try and the
/// last error, as the outbox recorded them.
#[sqlx::test(migrations = "../migrations")]
async fn operators_see_why_a_change_waits_at_stripe(db: PgPool) {
    let app = spawn_console(db.clone()).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    sqlx::raw_sql(
        "INSERT INTO billing_accounts (team_id, customer_id) SELECT id, 'cus_waiting' FROM members;
         INSERT INTO billing_outbox (team_id, reason, attempts, last_error, next_attempt_at)
         SELECT id, 'add-on bought', 3, 'stripe write CreateSubscription: card <declined>',
                '2030-01-02T03:04:05Z' FROM members;",
    )
    .execute(&db)
    .await
    .unwrap();
    let mut operator = Visitor::new(&app);
    operator.sign_up(OPERATOR).await;
    let page = operator.get("/admin/billing").await;
    page.assert_contains("<th scope=\"col\">Pending at Stripe</th>");
    page.assert_contains("1 change waiting, 3 failed tries; next try <time datetime=\"2030-01-02T03:04:05Z\">2030-01-02 03:04:05 UTC</time>");
    page.assert_contains("<code class=\"last-error\">stripe write CreateSubscription: card &#60;declined&#62;</code>");
}
