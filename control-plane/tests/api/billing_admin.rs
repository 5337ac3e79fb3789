//! The operators' billing list shows why an add-on is pending: the member's outbox writes still
//! waiting, with the failed tries, the last error and when the next try is.

use super::billed::{item, spawn_billed};
use super::fake_stripe::PRICE_10MIB;
use aqs_core::limits::MIB;
use aqs_testkit::eventually_some;
use serde_json::{Value, json};
use sqlx::PgPool;

#[sqlx::test(migrations = "../migrations")]
async fn operators_see_the_tries_last_error_and_next_try_of_a_pending_add_on(db: PgPool) {
    let b = spawn_billed(db).await;
    let ada = b.app.member("ada@example.com").await;
    let operator = b.app.member("bob@example.com").await;
    sqlx::query("UPDATE members SET role = 'operator' WHERE email = 'bob@example.com'")
        .execute(b.app.cp.db())
        .await
        .unwrap();
    b.add_card(&ada).await;
    let (slug, queue) = b.queue(&ada, "videos").await;
    let listed = b.app.get(&operator, "/api/v1/admin/billing").await.expect(200);
    assert_eq!(listed["members"][0]["pending_sync"], Value::Null, "nothing waits: {listed}");

    b.stripe.set_down(true);
    b.set_size(&ada, &slug, 10 * MIB).await.expect(202);
    let pending = eventually_some("a failed try is listed", || async {
        let listed = b.app.get(&operator, "/api/v1/admin/billing").await.expect(200);
        let pending = listed["members"][0]["pending_sync"].clone();
        (pending["attempts"].as_u64() >= Some(1)).then_some(pending)
    })
    .await;
    assert_eq!(pending["rows"], 1, "{pending}");
    let error = pending["last_error"].as_str().expect("the last error");
    assert!(error.contains("the fake is down"), "the provider's answer is kept: {error}");
    let next = pending["next_attempt_at"].as_str().expect("the next try");
    assert!(chrono::DateTime::parse_from_rfc3339(next).is_ok() && next.ends_with('Z'), "{next}");

    b.stripe.set_down(false);
    b.until_items(vec![item(PRICE_10MIB, &[queue])]).await;
    eventually_some("the pending sync leaves the list", || async {
        let listed = b.app.get(&operator, "/api/v1/admin/billing").await.expect(200);
        (listed["members"][0]["pending_sync"] == Value::Null).then_some(())
    })
    .await;
    let listed = b.app.get(&operator, "/api/v1/admin/billing").await.expect(200);
    assert_eq!(listed["members"][0]["email"], json!("ada@example.com"));
}
