//! Finding a message by what its publisher knows: the id a publish answered with, or its
//! idempotency key, wherever the message is (waiting in the stream, delayed, dead), from the search
//! box of Messages and Dead letters or a `view?id=` address; and the sent message's own page.

use super::support::{Visitor, fail_all, publish, queue_of, spawn_console};
use aqs_core::time::now_ms;
use aqs_engine::{NewMessage, PublishOutcome};
use sqlx::PgPool;

fn message(body: &str, key: Option<&str>, delay_ms: u64) -> NewMessage {
    NewMessage { idempotency_key: key.map(str::to_owned), delay_ms, ..NewMessage::text(body) }
}

async fn publish_one(app: &super::support::TestConsole, queue: aqs_core::ids::QueueId, m: NewMessage) -> String {
    match app.engine.publish(queue, &[m], now_ms()).await.unwrap() {
        PublishOutcome::Stored(published) => published[0].id.clone(),
        other => panic!("not stored: {other:?}"),
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn a_message_is_found_by_its_id_or_idempotency_key_wherever_it_is(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "1").await;
    let queue = queue_of(&app, "ada@example.com", "jobs").await;

    // A dead letter, then many waiting messages around the one looked up, and a delayed one.
    publish(&app, &queue, "doomed", "text/plain").await;
    fail_all(&app, &queue, "broken").await;
    let dead = app.engine.dead_letters(queue.id, 10).await.unwrap().unwrap()[0].id.clone();
    for i in 0..250 {
        publish(&app, &queue, &format!("before {i}"), "text/plain").await;
    }
    let waiting = publish_one(&app, queue.id, message("find me", Some("order-42"), 0)).await;
    for i in 0..250 {
        publish(&app, &queue, &format!("after {i}"), "text/plain").await;
    }
    let delayed = publish_one(&app, queue.id, message("later", None, 600_000)).await;

    // The search box is on both lists.
    ada.get("/queues/jobs/messages").await.assert_contains("id=\"message-search\"");
    ada.get("/queues/jobs/dead-letters").await.assert_contains("id=\"message-search\"");

    let found = ada.get(&format!("/queues/jobs/messages/view?id={waiting}")).await;
    assert_eq!(found.status, 303, "{}", found.body);
    assert!(found.location().starts_with("/queues/jobs/messages/view?entry="), "{}", found.location());
    let page = ada.follow(found).await;
    assert_eq!(page.status, 200, "{}", page.body);
    page.assert_contains("<code>find me</code>");
    page.assert_contains(&waiting);

    let by_key = ada.get("/queues/jobs/messages/view?find=order-42").await;
    assert_eq!(by_key.status, 303, "{}", by_key.body);
    ada.follow(by_key).await.assert_contains("<code>find me</code>");
    // Pasted with spaces around it.
    let padded = ada.get(&format!("/queues/jobs/messages/view?find=+{waiting}+")).await;
    assert_eq!(padded.status, 303);

    let found = ada.get(&format!("/queues/jobs/messages/view?find={delayed}")).await;
    assert_eq!(found.location(), format!("/queues/jobs/messages/view?delayed={delayed}"));
    let found = ada.get(&format!("/queues/jobs/messages/view?find={dead}")).await;
    assert_eq!(found.location(), format!("/queues/jobs/dead-letters/view?id={dead}"));
    ada.follow(found).await.assert_contains("broken");

    let missing = ada.get("/queues/jobs/messages/view?find=0123456789abcdef0123456789abcdef").await;
    assert_eq!(missing.status, 404);
    missing.assert_contains("No message of this queue has the id or idempotency key");
    missing.assert_contains("id=\"message-search\"");
    assert_eq!(ada.get("/queues/jobs/messages/view?find=no-such-key").await.status, 404);

    // An acknowledged message's key no longer finds it.
    let received = app.engine.find_message(queue.id, aqs_engine::MessageKey::Id(&waiting), now_ms()).await.unwrap();
    assert!(received.is_some());
    app.engine.purge_ready(queue.id, now_ms()).await.unwrap();
    assert_eq!(ada.get("/queues/jobs/messages/view?find=order-42").await.status, 404);

    // Another member's queue is not searched.
    let mut bob = Visitor::new(&app);
    bob.sign_up("bob@example.com").await;
    assert_eq!(bob.get(&format!("/queues/jobs/messages/view?id={delayed}")).await.status, 404);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_sent_message_opens_on_its_own_page_and_the_ids_shown_are_links(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    let form = ada.get("/queues/jobs/messages/send").await;
    // What group_id is: a label carried with the message, not an order.
    form.assert_contains("A label for related messages");
    form.assert_lacks("processed in order");
    let send_form = form.input_value("form_id").unwrap();
    let sent = ada
        .post(
            "/queues/jobs/messages/send",
            &[("body", "hello"), ("content_type", "text/plain"), ("form_id", &send_form)],
        )
        .await;
    assert!(sent.location().starts_with("/queues/jobs/messages/view?entry="), "{}", sent.location());
    let page = ada.follow(sent).await;
    page.assert_contains("Sent message ");
    page.assert_contains("<code>hello</code>");

    // The list links each id to its page, the full id in the title.
    let list = ada.get("/queues/jobs/messages").await;
    list.assert_contains("href=\"/queues/jobs/messages/view?entry=");
    list.assert_contains("class=\"short-id\"");
}
