//! Deleting an account whose member pays for add-ons, against the fake Stripe: the last billing
//! sync cancels the subscription, once, even after the account is gone and when a sync of the
//! member runs again.

use super::billed::{Billed, item, spawn_billed};
use super::fake_stripe::PRICE_10MIB;
use aqs_core::limits::MIB;
use aqs_testkit::eventually;
use reqwest::Method;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

const EMAIL: &str = "ada@example.com";

/// The fake Stripe's cancellations of `subscription`.
fn cancellations(b: &Billed, subscription: &str) -> usize {
    let cancel = format!("DELETE /v1/subscriptions/{subscription}");
    b.stripe.writes().iter().filter(|write| **write == cancel).count()
}

async fn pending_syncs(b: &Billed, member: Uuid) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM billing_outbox WHERE team_id = $1 AND done_at IS NULL")
        .bind(member)
        .fetch_one(b.app.cp.db())
        .await
        .unwrap()
}

#[sqlx::test(migrations = "../migrations")]
async fn deleting_the_account_cancels_the_subscription_once_even_when_the_sync_runs_again(db: PgPool) {
    let b = spawn_billed(db).await;
    let session = b.app.member(EMAIL).await;
    let me = b.app.get(&session, "/api/v1/auth/me").await.expect(200);
    let member: Uuid = me["member"]["id"].as_str().unwrap().parse().unwrap();
    b.add_card(&session).await;
    let (first, q1) = b.queue(&session, "first").await;
    let (second, q2) = b.queue(&session, "second").await;
    b.set_size(&session, &first, 10 * MIB).await.expect(200);
    b.set_size(&session, &second, 10 * MIB).await.expect(200);
    b.until_items(vec![item(PRICE_10MIB, &[q1, q2])]).await;
    let subscription = b.stripe.subscriptions()[0]["id"].as_str().unwrap().to_owned();

    // Stripe is down while the account goes: the deletion does not wait for it, and the outbox
    // cancels the subscription of a member who no longer exists once Stripe is back.
    b.stripe.set_down(true);
    b.app
        .call(Method::DELETE, "/api/v1/account", Some(&session), Some(json!({"confirm_email": EMAIL})))
        .await
        .expect(204);
    assert_eq!(b.stripe.subscriptions()[0]["status"], "active", "nothing reached Stripe yet");
    b.stripe.set_down(false);
    // The retry is pulled forward: the backoff's length is not what this test is about.
    sqlx::query("UPDATE billing_outbox SET next_attempt_at = now() WHERE done_at IS NULL")
        .execute(b.app.cp.db())
        .await
        .unwrap();
    eventually("the outbox syncs the deleted member", || async { pending_syncs(&b, member).await == 0 }).await;
    b.until_items(vec![]).await;
    let subscriptions = b.stripe.subscriptions();
    assert_eq!(subscriptions.len(), 1, "{subscriptions:?}");
    assert_eq!(subscriptions[0]["status"], "canceled");
    assert_eq!(cancellations(&b, &subscription), 1, "{:?}", b.stripe.writes());

    // Another sync of the member (a retry, a replica's late row) finds nothing left to cancel.
    sqlx::query("INSERT INTO billing_outbox (team_id, reason) VALUES ($1, 'sync again')")
        .bind(member)
        .execute(b.app.cp.db())
        .await
        .unwrap();
    eventually("the second sync is done", || async { pending_syncs(&b, member).await == 0 }).await;
    assert_eq!(cancellations(&b, &subscription), 1, "{:?}", b.stripe.writes());
    assert_eq!(b.stripe.writes().iter().filter(|w| w.starts_with("DELETE")).count(), 1, "{:?}", b.stripe.writes());
}
