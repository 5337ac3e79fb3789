//! The installation's billing mode: a process whose Stripe settings differ from the mode the
//! database records refuses to start, and one with billing off never grants a free add-on while
//! the installation bills them (it may have started before it could read the mode).

use super::fake_stripe::FakeStripe;
use super::support::{spawn_app, spawn_app_with};
use aqs_control_plane::billing::mode::{self, BillingMode};
use aqs_core::limits::MIB;
use serde_json::json;
use sqlx::PgPool;

#[sqlx::test(migrations = "../migrations")]
async fn a_process_with_billing_off_on_a_billed_installation_refuses_to_start_and_to_grant(db: PgPool) {
    let stripe = FakeStripe::start().await;
    let billed = spawn_app_with(db.clone(), stripe.billing_on()).await;
    billed.cp.check_billing_mode().await.expect("the first process records its mode");
    billed.cp.check_billing_mode().await.expect("and agrees with it afterwards");

    let free = spawn_app(db.clone()).await;
    let refusal = free.cp.check_billing_mode().await.expect_err("billing off on a billed installation");
    let refusal = refusal.to_string();
    assert!(refusal.contains("billed through Stripe") && refusal.contains("aqs admin billing-mode off"), "{refusal}");

    // Serving anyway (it started while PostgreSQL was away): no free add-on.
    let session = free.member("wants-more@example.com").await;
    let slug = free.queue(&session, "wants-more").await["queue"]["slug"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/queues/{slug}");
    let message =
        free.patch(&session, &path, json!({"payload_size": 50 * MIB})).await.expect_error(503, "service_unavailable");
    assert!(message.contains("payload add-ons"), "{message}");
    assert_eq!(free.get(&session, &path).await.expect(200)["queue"]["payload_size"], MIB);

    // Changed on purpose: the free process agrees, grants, and the billed one is refused instead.
    assert_eq!(mode::set(&db, BillingMode::Off).await.unwrap(), Some(BillingMode::Stripe));
    free.cp.check_billing_mode().await.expect("billing off is now the installation's mode");
    free.patch(&session, &path, json!({"payload_size": 50 * MIB})).await.expect(200);
    assert_eq!(free.get(&session, &path).await.expect(200)["queue"]["payload_size"], 50 * MIB);
    assert!(billed.cp.check_billing_mode().await.is_err());
}
