//! Billing against the fake Stripe (`fake_stripe`), with the real async-stripe client, the real
//! outbox loop, real Redis and PostgreSQL, and webhooks signed here with HMAC-SHA256.

use super::billed::{event, item, now_secs, spawn_billed};
use super::fake_stripe::{PRICE_10MIB, PRICE_10MIB_CENTS, PRICE_50MIB, PRICE_50MIB_CENTS, WEBHOOK_SECRET, sign};
use super::support::spawn_app;
use aqs_core::limits::MIB;
use aqs_core::time::now_ms;
use aqs_engine::{ConsumeOutcome, PublishOutcome, Selection};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::time::{Duration, Instant};

#[sqlx::test(migrations = "../migrations")]
async fn an_add_on_without_a_payment_method_answers_402_with_the_setup_url(db: PgPool) {
    let b = spawn_billed(db).await;
    let session = b.app.member("ada@example.com").await;
    let (slug, _) = b.queue(&session, "videos").await;
    let reply = b.set_size(&session, &slug, 10 * MIB).await;
    assert_eq!(reply.status, 402, "{}", reply.text);
    assert_eq!(reply.body["error"], "payment_required");
    let url = reply.body["setup_url"].as_str().unwrap();
    let checkout = b.stripe.checkout_sessions();
    assert_eq!(checkout.len(), 1);
    assert_eq!(checkout[0]["url"], url);
    assert_eq!(checkout[0]["mode"], "setup");
    assert_eq!(checkout[0]["success_url"], "http://127.0.0.1/billing?setup=done");
    assert_eq!(b.stripe.customers().len(), 1, "one customer per member");
    assert_eq!(b.app.get(&session, &format!("/api/v1/queues/{slug}")).await.expect(200)["queue"]["payload_size"], MIB);
    assert!(b.stripe.subscriptions().is_empty());
}

#[sqlx::test(migrations = "../migrations")]
async fn with_a_card_the_item_is_created_and_a_5_mib_publish_is_accepted_at_once(db: PgPool) {
    let b = spawn_billed(db).await;
    let session = b.app.member("ada@example.com").await;
    b.add_card(&session).await;
    let billing = b.app.get(&session, "/api/v1/billing").await.expect(200);
    assert_eq!(billing["billing"]["payment_method"], json!({"brand": "visa", "last4": "4242"}));
    let (slug, queue) = b.queue(&session, "videos").await;
    assert_eq!(b.publish(queue, 5 * MIB as usize).await, PublishOutcome::TooLarge { index: 0 });

    let body = b.set_size(&session, &slug, 10 * MIB).await.expect(200);
    assert_eq!(body["queue"]["payload_size"], 10 * MIB);
    assert_eq!(b.stripe.live_items(), vec![item(PRICE_10MIB, &[queue])]);
    assert!(matches!(b.publish(queue, 5 * MIB as usize).await, PublishOutcome::Stored(_)));

    let billing = b.app.get(&session, "/api/v1/billing").await.expect(200)["billing"].clone();
    assert_eq!(billing["enabled"], true);
    assert_eq!(billing["subscription_status"], "active");
    assert_eq!(billing["add_ons"][0]["queue"], slug.as_str());
    assert_eq!(billing["add_ons"][0]["monthly_price_cents"], PRICE_10MIB_CENTS);
    assert_eq!(billing["add_ons"][0]["pending"], false);
    assert_eq!(billing["monthly_total_cents"], PRICE_10MIB_CENTS);
    assert_eq!(billing["usage"][0]["queue"], slug.as_str());
    assert_eq!(billing["usage"][0]["stored_bytes"], 5 * MIB);
    assert_eq!(billing["usage"][0]["estimate"], true);

    // Paused, the add-on stays billed.
    b.app.post(&session, &format!("/api/v1/queues/{slug}/pause"), json!({})).await.expect(200);
    assert_eq!(b.stripe.live_items(), vec![item(PRICE_10MIB, &[queue])]);
}

#[sqlx::test(migrations = "../migrations")]
async fn two_queues_on_one_add_on_are_one_item_of_quantity_2_and_deletion_removes_them(db: PgPool) {
    let b = spawn_billed(db).await;
    let session = b.app.member("ada@example.com").await;
    b.add_card(&session).await;
    let (first, q1) = b.queue(&session, "first").await;
    let (second, q2) = b.queue(&session, "second").await;
    let (third, q3) = b.queue(&session, "third").await;
    b.set_size(&session, &first, 10 * MIB).await.expect(200);
    b.set_size(&session, &second, 10 * MIB).await.expect(200);
    b.set_size(&session, &third, 50 * MIB).await.expect(200);
    b.until_items(vec![item(PRICE_10MIB, &[q1, q2]), item(PRICE_50MIB, &[q3])]).await;
    assert_eq!(b.stripe.subscriptions().len(), 1, "one subscription per member");
    let billing = b.app.get(&session, "/api/v1/billing").await.expect(200);
    assert_eq!(billing["billing"]["monthly_total_cents"], 2 * PRICE_10MIB_CENTS + PRICE_50MIB_CENTS);

    b.app.delete(&session, &format!("/api/v1/queues/{first}")).await.expect(204);
    b.until_items(vec![item(PRICE_10MIB, &[q2]), item(PRICE_50MIB, &[q3])]).await;
    b.app.delete(&session, &format!("/api/v1/queues/{third}")).await.expect(204);
    b.until_items(vec![item(PRICE_10MIB, &[q2])]).await;
    b.app.delete(&session, &format!("/api/v1/queues/{second}")).await.expect(204);
    b.until_items(vec![]).await;
    let subscriptions = b.stripe.subscriptions();
    assert_eq!(subscriptions.len(), 1);
    assert_eq!(subscriptions[0]["status"], "canceled", "the last add-on cancels the subscription");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_downgrade_waits_until_no_stored_message_is_larger(db: PgPool) {
    let b = spawn_billed(db).await;
    let session = b.app.member("ada@example.com").await;
    b.add_card(&session).await;
    let (slug, queue) = b.queue(&session, "videos").await;
    b.app.patch(&session, &format!("/api/v1/queues/{slug}"), json!({"max_attempts": 1})).await.expect(200);
    b.set_size(&session, &slug, 10 * MIB).await.expect(200);
    assert!(matches!(b.publish(queue, 2 * MIB as usize).await, PublishOutcome::Stored(_)));

    // Ready.
    let message = b.set_size(&session, &slug, MIB).await.expect_error(409, "oversized_messages_stored");
    assert!(message.contains("1 stored message"), "{message}");
    assert_eq!(b.set_size(&session, &slug, MIB).await.body["count"], 1);

    // Dead: a nack on its last attempt.
    let ConsumeOutcome::Delivered { deliveries, .. } = b.engine.consume(queue, 1, 30_000, now_ms(), 0).await.unwrap()
    else {
        panic!("nothing delivered")
    };
    let receipt = deliveries[0].receipt(queue, now_ms() + 30_000);
    b.engine.nack(queue, &[receipt], 0, "failed", now_ms()).await.unwrap();
    assert_eq!(b.set_size(&session, &slug, MIB).await.body["count"], 1, "a dead letter is still stored");
    assert_eq!(b.stripe.live_items(), vec![item(PRICE_10MIB, &[queue])], "nothing changed at Stripe");

    b.engine.purge_dead_letters(queue, &Selection::All, now_ms()).await.unwrap();
    let body = b.set_size(&session, &slug, MIB).await.expect(200);
    assert_eq!(body["queue"]["payload_size"], MIB);
    b.until_items(vec![]).await;
}

/// A size change writes the add-on row and the queue's size together or not at all: a failure
/// between them must not leave a queue at 10 MiB whose add-on is gone (used, no longer paid for).
#[sqlx::test(migrations = "../migrations")]
async fn a_size_change_that_fails_midway_changes_neither_the_add_on_nor_the_queue(db: PgPool) {
    let b = spawn_billed(db).await;
    let session = b.app.member("ada@example.com").await;
    b.add_card(&session).await;
    let (slug, queue) = b.queue(&session, "videos").await;
    b.set_size(&session, &slug, 10 * MIB).await.expect(200);
    b.until_items(vec![item(PRICE_10MIB, &[queue])]).await;

    // The queue's own write fails: PostgreSQL refuses to lower any queue's size from now on.
    sqlx::raw_sql(
        "CREATE FUNCTION refuse_smaller_size() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN RAISE EXCEPTION 'queue sizes may not shrink in this test'; END $$;
         CREATE TRIGGER refuse_smaller_size BEFORE UPDATE OF payload_size ON queues
         FOR EACH ROW WHEN (NEW.payload_size < OLD.payload_size) EXECUTE FUNCTION refuse_smaller_size();",
    )
    .execute(b.app.cp.db())
    .await
    .unwrap();
    let outbox_rows = || async {
        let rows: i64 =
            sqlx::query_scalar("SELECT count(*) FROM billing_outbox").fetch_one(b.app.cp.db()).await.unwrap();
        rows
    };
    let rows_before = outbox_rows().await;
    b.set_size(&session, &slug, MIB).await.expect_error(500, "internal");

    let add_on: Option<i64> = sqlx::query_scalar("SELECT payload_size FROM queue_add_ons WHERE queue_id = $1")
        .bind(queue.0)
        .fetch_optional(b.app.cp.db())
        .await
        .unwrap();
    let size =
        b.app.get(&session, &format!("/api/v1/queues/{slug}")).await.expect(200)["queue"]["payload_size"].clone();
    assert_eq!((add_on, size), (Some(10 * MIB as i64), json!(10 * MIB)), "the add-on and the size stay as they were");
    assert_eq!(outbox_rows().await, rows_before, "no Stripe write is queued for a change that did not happen");
}

#[sqlx::test(migrations = "../migrations")]
async fn stripe_down_never_blocks_a_deletion_and_the_item_goes_once_it_is_back(db: PgPool) {
    let b = spawn_billed(db).await;
    let session = b.app.member("ada@example.com").await;
    b.add_card(&session).await;
    let (first, q1) = b.queue(&session, "first").await;
    let (second, q2) = b.queue(&session, "second").await;
    b.set_size(&session, &first, 50 * MIB).await.expect(200);
    b.set_size(&session, &second, 50 * MIB).await.expect(200);
    b.until_items(vec![item(PRICE_50MIB, &[q1, q2])]).await;

    b.stripe.set_down(true);
    b.app.delete(&session, &format!("/api/v1/queues/{first}")).await.expect(204);
    b.app.get(&session, &format!("/api/v1/queues/{first}")).await.expect_error(404, "not_found");
    let pending: i64 = sqlx::query_scalar("SELECT count(*) FROM billing_outbox WHERE done_at IS NULL")
        .fetch_one(b.app.cp.db())
        .await
        .unwrap();
    assert_eq!(pending, 1, "the write waits in the outbox");
    assert_eq!(b.stripe.live_items(), vec![item(PRICE_50MIB, &[q1, q2])]);

    b.stripe.set_down(false);
    b.until_items(vec![item(PRICE_50MIB, &[q2])]).await;
}

#[sqlx::test(migrations = "../migrations")]
async fn an_upgrade_while_stripe_is_down_is_202_and_applies_when_it_is_back(db: PgPool) {
    let b = spawn_billed(db).await;
    let session = b.app.member("ada@example.com").await;
    b.add_card(&session).await;
    let (slug, queue) = b.queue(&session, "videos").await;
    b.stripe.set_down(true);
    let body = b.set_size(&session, &slug, 10 * MIB).await.expect(202);
    assert_eq!(body["queue"]["payload_size"], MIB, "not paid for yet");
    let billing = b.app.get(&session, "/api/v1/billing").await.expect(200);
    assert_eq!(billing["billing"]["add_ons"][0]["pending"], true);
    b.stripe.set_down(false);
    b.until_items(vec![item(PRICE_10MIB, &[queue])]).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let size =
            b.app.get(&session, &format!("/api/v1/queues/{slug}")).await.expect(200)["queue"]["payload_size"].clone();
        if size == 10 * MIB {
            break;
        }
        assert!(Instant::now() < deadline, "the size was never applied");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn a_write_whose_answer_was_lost_is_retried_without_a_second_charge(db: PgPool) {
    let b = spawn_billed(db).await;
    let session = b.app.member("ada@example.com").await;
    b.add_card(&session).await;
    let (slug, queue) = b.queue(&session, "videos").await;
    b.stripe.lose_next_answer();
    // Stripe made the subscription but the answer never arrived. The request waits a while for the
    // outbox's retry: 200 if the retry lands within that wait, else 202 (it depends on the
    // machine's load, so either is right); what matters is that the retry charges nothing twice.
    let reply = b.set_size(&session, &slug, 10 * MIB).await;
    assert!(matches!(reply.status, 200 | 202), "unexpected answer {}: {}", reply.status, reply.text);
    b.until_items(vec![item(PRICE_10MIB, &[queue])]).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let done: i64 = sqlx::query_scalar("SELECT count(*) FROM billing_outbox WHERE done_at IS NULL")
            .fetch_one(b.app.cp.db())
            .await
            .unwrap();
        if done == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the outbox never finished");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(b.stripe.subscriptions().len(), 1, "the retry was answered from the idempotency key");
    let creates = b.stripe.writes().iter().filter(|w| *w == "POST /v1/subscriptions").count();
    assert_eq!(creates, 1);
}

#[sqlx::test(migrations = "../migrations")]
async fn webhook_signatures_are_checked(db: PgPool) {
    let b = spawn_billed(db).await;
    let payload = event("evt_sig", "product.created", now_secs(), json!({"id": "prod_1", "object": "product"}));
    let now = now_secs();
    let good = sign(&payload, WEBHOOK_SECRET, now);
    let other = sign(&payload, "whsec_rolled_away", now);

    b.deliver(&payload, None).await.expect_error(400, "invalid_request");
    b.deliver(&payload, Some(format!("t={now},v1={other}"))).await.expect_error(400, "invalid_request");
    b.deliver(&payload, Some(format!("t={now},v0={good}"))).await.expect_error(400, "invalid_request");
    let stale = now - 301;
    let stale_sig = sign(&payload, WEBHOOK_SECRET, stale);
    b.deliver(&payload, Some(format!("t={stale},v1={stale_sig}"))).await.expect_error(400, "invalid_request");
    b.deliver(&format!("{payload} "), Some(format!("t={now},v1={good}"))).await.expect_error(400, "invalid_request");

    // Several v1 entries (a secret being rolled): any one may match. Unknown events are ignored.
    let body = b.deliver(&payload, Some(format!("t={now},v1={other},v1={good}"))).await.expect(200);
    assert_eq!(body, json!({"received": true, "outcome": "ignored"}));
}

/// A correctly signed event with NUL in a text PostgreSQL would store is refused as a bad request
/// (it used to fail the insert and answer 500); nothing of it is recorded.
#[sqlx::test(migrations = "../migrations")]
async fn a_signed_event_with_nul_in_its_texts_is_a_400(db: PgPool) {
    let b = spawn_billed(db).await;
    let invoice = |id: &str, customer: &str| {
        event(id, "invoice.paid", now_secs(), json!({"id": "in_1", "object": "invoice", "customer": customer}))
    };
    for (payload, field) in [
        (invoice("evt_nul_customer", "cus_\0x"), "customer"),
        (invoice("evt_\0", "cus_1"), "id"),
        (event("evt_nul_type", "invoice.paid\0", now_secs(), json!({"customer": "cus_1"})), "type"),
    ] {
        let message = b.deliver_signed(&payload).await.expect_error(400, "invalid_request");
        assert!(message.starts_with(field), "{payload}: {message}");
    }
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM billing_events").fetch_one(b.app.cp.db()).await.unwrap();
    assert_eq!(stored, 0);
}

#[sqlx::test(migrations = "../migrations")]
async fn events_apply_once_and_an_older_one_never_rolls_back_a_newer(db: PgPool) {
    let b = spawn_billed(db).await;
    let session = b.app.member("ada@example.com").await;
    let customer = b.add_card(&session).await;
    let (slug, _) = b.queue(&session, "videos").await;
    b.set_size(&session, &slug, 10 * MIB).await.expect(200);
    let sub = b.stripe.subscriptions()[0]["id"].as_str().unwrap().to_owned();
    let t = now_secs();
    let object = |status: &str| json!({"id": sub, "object": "subscription", "customer": customer, "status": status});

    let newer = event("evt_new", "customer.subscription.updated", t + 5, object("past_due"));
    let older = event("evt_old", "customer.subscription.updated", t + 1, object("active"));
    assert_eq!(b.deliver_signed(&newer).await.expect(200)["outcome"], "applied");
    assert_eq!(b.deliver_signed(&newer).await.expect(200)["outcome"], "duplicate");
    b.deliver_signed(&older).await.expect(200);
    let billing = b.app.get(&session, "/api/v1/billing").await.expect(200);
    assert_eq!(billing["billing"]["subscription_status"], "past_due", "the older event did not roll it back");

    let failed = event(
        "evt_fail",
        "invoice.payment_failed",
        t + 6,
        json!({"id": "in_1", "object": "invoice", "customer": customer}),
    );
    b.deliver_signed(&failed).await.expect(200);
    let paid_before =
        event("evt_paid_old", "invoice.paid", t + 2, json!({"id": "in_0", "object": "invoice", "customer": customer}));
    b.deliver_signed(&paid_before).await.expect(200);
    let billing = b.app.get(&session, "/api/v1/billing").await.expect(200)["billing"].clone();
    assert_eq!(billing["payment_failed"], true);
    assert!(billing["notice"].as_str().unwrap().contains("payment failed"), "{billing}");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_cancellation_for_non_payment_returns_the_queues_to_1_mib(db: PgPool) {
    let b = spawn_billed(db).await;
    let session = b.app.member("ada@example.com").await;
    let customer = b.add_card(&session).await;
    let (slug, queue) = b.queue(&session, "videos").await;
    b.set_size(&session, &slug, 50 * MIB).await.expect(200);
    assert!(matches!(b.publish(queue, 20 * MIB as usize).await, PublishOutcome::Stored(_)));
    let sub = b.stripe.subscriptions()[0]["id"].as_str().unwrap().to_owned();
    let deleted = event(
        "evt_cancel",
        "customer.subscription.deleted",
        now_secs(),
        json!({"id": sub, "object": "subscription", "customer": customer, "status": "canceled",
               "cancellation_details": {"reason": "payment_failed", "comment": null, "feedback": null}}),
    );
    b.deliver_signed(&deleted).await.expect(200);

    let queue_body = b.app.get(&session, &format!("/api/v1/queues/{slug}")).await.expect(200);
    assert_eq!(queue_body["queue"]["payload_size"], MIB);
    let meta = b.app.hash(&b.app.keys.queue(queue).meta()).await;
    assert_eq!(meta["payload_limit"], MIB.to_string(), "new publishes take 1 MiB");
    assert_eq!(b.publish(queue, 2 * MIB as usize).await, PublishOutcome::TooLarge { index: 0 });
    let billing = b.app.get(&session, "/api/v1/billing").await.expect(200)["billing"].clone();
    assert_eq!(billing["cancelled_for_nonpayment"], true);
    assert_eq!(billing["subscription_status"], "canceled");
    assert_eq!(billing["add_ons"], json!([]));
    assert!(billing["notice"].as_str().unwrap().contains("cancelled because a payment failed"), "{billing}");
}

#[sqlx::test(migrations = "../migrations")]
async fn budgets_alert_at_the_threshold_and_operators_see_past_due_first(db: PgPool) {
    let b = spawn_billed(db).await;
    let session = b.app.member("ada@example.com").await;
    let customer = b.add_card(&session).await;
    let (slug, _) = b.queue(&session, "videos").await;
    b.set_size(&session, &slug, 10 * MIB).await.expect(200);
    let put = |body: Value| {
        let app = &b.app;
        let session = session.clone();
        async move { app.call(reqwest::Method::PUT, "/api/v1/billing/budget", Some(&session), Some(body)).await }
    };
    put(json!({"monthly_limit_cents": 5000, "alert_percent": 101})).await.expect_error(400, "invalid_request");
    put(json!({"monthly_limit_cents": -1, "alert_percent": 50})).await.expect_error(400, "invalid_request");
    let budget = put(json!({"monthly_limit_cents": 5000, "alert_percent": 50})).await.expect(200);
    assert_eq!(budget["budget"], json!({"monthly_limit_cents": 5000, "alert_percent": 50, "alert": false}));
    let budget = put(json!({"monthly_limit_cents": 1000, "alert_percent": 80})).await.expect(200);
    assert_eq!(budget["budget"]["alert"], true, "900 of 1000 cents is over 80%");

    let other = b.app.member("bob@example.com").await;
    let other_customer = b.add_card(&other).await;
    let sub = b.stripe.subscriptions()[0]["id"].as_str().unwrap().to_owned();
    let past_due = event(
        "evt_pd",
        "customer.subscription.updated",
        now_secs(),
        json!({"id": sub, "object": "subscription", "customer": customer, "status": "past_due"}),
    );
    b.deliver_signed(&past_due).await.expect(200);

    sqlx::query("UPDATE members SET role = 'operator' WHERE email = 'bob@example.com'")
        .execute(b.app.cp.db())
        .await
        .unwrap();
    b.app.get(&session, "/api/v1/admin/billing").await.expect_error(404, "not_found");
    let list = b.app.get(&other, "/api/v1/admin/billing").await.expect(200);
    let members = list["members"].as_array().unwrap();
    assert_eq!(members.len(), 2);
    assert_eq!(members[0]["email"], "ada@example.com");
    assert_eq!(members[0]["subscription_status"], "past_due");
    assert_eq!(members[0]["customer_id"], customer.as_str());
    assert_eq!(members[0]["monthly_total_cents"], PRICE_10MIB_CENTS);
    assert_eq!(members[1]["customer_id"], other_customer.as_str());
    let filtered = b.app.get(&other, "/api/v1/admin/billing?status=past_due").await.expect(200);
    assert_eq!(filtered["members"].as_array().unwrap().len(), 1);
}

#[sqlx::test(migrations = "../migrations")]
async fn with_billing_off_add_ons_are_granted_free(db: PgPool) {
    let app = spawn_app(db).await;
    let session = app.member("ada@example.com").await;
    let body = app.queue(&session, "videos").await;
    let slug = body["queue"]["slug"].as_str().unwrap();
    let changed = app.patch(&session, &format!("/api/v1/queues/{slug}"), json!({"payload_size": 50 * MIB})).await;
    assert_eq!(changed.expect(200)["queue"]["payload_size"], 50 * MIB);
    let billing = app.get(&session, "/api/v1/billing").await.expect(200)["billing"].clone();
    assert_eq!(billing["enabled"], false);
    assert!(billing["notice"].as_str().unwrap().contains("not configured"), "{billing}");
    assert_eq!(billing["add_ons"][0]["monthly_price_cents"], 0);
    app.post(&session, "/api/v1/billing/setup", json!({})).await.expect_error(409, "conflict");
}
