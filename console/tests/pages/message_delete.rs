//! Deleting one message from its detail page: a ready and a delayed message go after the
//! confirmation page (their bytes freed, a resubmission deleting nothing more); a leased one has
//! no Delete button and a posted delete is refused, saying why; once a nack returned it, it goes.

use super::support::{Page, Visitor, publish, queue_of, spawn_console};
use aqs_core::time::now_ms;
use aqs_engine::{ConsumeOutcome, NewMessage};
use sqlx::PgPool;

/// The `href` of the element with this id.
fn href_of(page: &Page, id: &str) -> String {
    let at = page.body.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no #{id}:\n{}", page.body));
    let start = at + page.body[at..].find("href=\"").expect("an href") + 6;
    let end = page.body[start..].find('"').unwrap();
    page.body[start..start + end].replace("&#38;", "&").replace("&amp;", "&")
}

#[sqlx::test(migrations = "../migrations")]
async fn ready_and_delayed_messages_are_deleted_after_confirming_and_a_leased_one_is_not(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    let queue = queue_of(&app, "ada@example.com", "jobs").await;
    publish(&app, &queue, "held", "text/plain").await;
    let ConsumeOutcome::Delivered { deliveries, .. } =
        app.engine.consume(queue.id, 1, 120_000, now_ms(), 0).await.unwrap()
    else {
        panic!("no delivery");
    };
    let leased = &deliveries[0];
    publish(&app, &queue, "ready one", "text/plain").await;
    let delayed = NewMessage { delay_ms: 600_000, ..NewMessage::text("later") };
    app.engine.publish(queue.id, &[delayed], now_ms()).await.unwrap();
    let stats = app.engine.stats(queue.id, now_ms()).await.unwrap().unwrap();
    assert_eq!((stats.ready, stats.in_flight, stats.delayed), (1, 1, 1));

    // The ready message: its page links the confirmation, which names it and posts the delete.
    let list = ada.get("/queues/jobs/messages").await;
    let marker = "/queues/jobs/messages/view?entry=";
    let entries: Vec<String> = list
        .body
        .match_indices(marker)
        .map(|(at, _)| {
            let rest = &list.body[at + marker.len()..];
            rest[..rest.find('"').unwrap()].to_owned()
        })
        .collect();
    let ready_entry = entries.iter().find(|sid| **sid != leased.stream_id.to_string()).expect("the ready entry");
    let view = ada.get(&format!("{marker}{ready_entry}")).await;
    let confirm_href = href_of(&view, "delete-message");
    assert_eq!(confirm_href, format!("/queues/jobs/messages/delete?entry={ready_entry}"));
    let confirm = ada.get(&confirm_href).await;
    assert_eq!(confirm.status, 200, "{}", confirm.body);
    confirm.assert_contains("Delete message ");
    confirm.assert_contains("It is ready and is deleted for good");
    confirm.assert_contains(&format!("action=\"/queues/jobs/messages/delete?entry={ready_entry}\""));
    let form_id = confirm.input_value("form_id").unwrap();
    let done = ada.post(&confirm_href, &[("form_id", &form_id)]).await;
    assert_eq!(done.location(), "/queues/jobs/messages", "{}", done.body);
    ada.follow(done).await.assert_contains("Deleted message ");
    let again = ada.post(&confirm_href, &[("form_id", &form_id)]).await;
    ada.follow(again).await.assert_contains("already sent; it was done once and not again");
    let stats = app.engine.stats(queue.id, now_ms()).await.unwrap().unwrap();
    assert_eq!((stats.ready, stats.in_flight, stats.delayed), (0, 1, 1));

    // The delayed message, the same way; its bytes are freed (only the leased one's stay).
    let page = ada.get("/queues/jobs/messages").await;
    let at = page.body.find("/queues/jobs/messages/view?delayed=").expect("the delayed message's link");
    let id = &page.body[at + 35..at + 35 + 32];
    let view = ada.get(&format!("/queues/jobs/messages/view?delayed={id}")).await;
    let confirm_href = href_of(&view, "delete-message");
    let confirm = ada.get(&confirm_href).await;
    confirm.assert_contains("It is delayed and is deleted for good");
    let done = ada.post(&confirm_href, &[("form_id", &confirm.input_value("form_id").unwrap())]).await;
    ada.follow(done).await.assert_contains(&format!("Deleted message {id}."));
    app.engine.flush_ledger(false).await.unwrap();
    let stats = app.engine.stats(queue.id, now_ms()).await.unwrap().unwrap();
    assert_eq!((stats.ready, stats.in_flight, stats.delayed, stats.stored_bytes), (0, 1, 0, 4));

    // The leased message: no Delete button, the reason instead; a delete posted anyway is refused.
    let view = ada.get(&format!("{marker}{}", leased.stream_id)).await;
    view.assert_lacks("id=\"delete-message\"");
    view.assert_contains("it cannot be deleted while leased");
    let path = format!("/queues/jobs/messages/delete?entry={}", leased.stream_id);
    let confirm = ada.get(&path).await;
    let refused = ada.post(&path, &[("form_id", &confirm.input_value("form_id").unwrap())]).await;
    let shown = ada.follow(refused).await;
    shown.assert_contains("Not deleted: a consumer holds this message under a lease until ");
    assert_eq!(app.engine.stats(queue.id, now_ms()).await.unwrap().unwrap().in_flight, 1, "still leased");

    // Returned by a nack with a delay, it is no consumer's any more: it can be deleted.
    let receipt = aqs_core::receipt::Receipt {
        queue: queue.id,
        stream_id: leased.stream_id,
        message: leased.message,
        delivery: leased.attempts,
        expires_at_ms: now_ms() + 3_600_000,
    };
    app.engine.nack(queue.id, &[receipt], 600_000, "later", now_ms()).await.unwrap();
    let view = ada.get(&format!("{marker}{}", leased.stream_id)).await;
    assert_eq!(view.text_of("message-state").as_deref(), Some("Retrying"));
    let confirm = ada.get(&href_of(&view, "delete-message")).await;
    let done = ada.post(&path, &[("form_id", &confirm.input_value("form_id").unwrap())]).await;
    ada.follow(done).await.assert_contains(&format!("Deleted message {}.", leased.message));
    app.engine.flush_ledger(false).await.unwrap();
    let stats = app.engine.stats(queue.id, now_ms()).await.unwrap().unwrap();
    assert_eq!((stats.total, stats.stored_bytes), (0, 0), "nothing left, no byte counted");

    // Gone, or not a message id: 404 for the confirmation page.
    assert_eq!(ada.get(&format!("/queues/jobs/messages/delete?delayed={id}")).await.status, 404);
    assert_eq!(ada.get("/queues/jobs/messages/delete?entry=nonsense").await.status, 404);
}
