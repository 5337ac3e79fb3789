//! The Dead letters tab: reason, attempts, preview; replay or purge one or all after confirming;
//! paging, the total, a filter by reason, the detail, and replaying what the filter selects.

use super::messages::next_page;
use super::support::{Visitor, fail_all, publish, queue_of, spawn_console};
use aqs_core::time::now_ms;
use sqlx::PgPool;

#[sqlx::test(migrations = "../migrations")]
async fn replay_one_and_purge_all_after_confirmation(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "1").await;
    ada.get("/queues/jobs/dead-letters").await.assert_contains("No dead letters.");

    let queue = queue_of(&app, "ada@example.com", "jobs").await;
    publish(&app, &queue, r#"{"n":1}"#, "application/json").await;
    publish(&app, &queue, r#"{"n":2}"#, "application/json").await;
    fail_all(&app, &queue, "resize failed: image too large").await;

    let page = ada.get("/queues/jobs/dead-letters").await;
    page.assert_contains("<td data-label=\"Reason\" class=\"detail\">resize failed: image too large</td>");
    page.assert_contains("<td data-label=\"Attempts\" class=\"num\">1</td>");
    page.assert_contains("<code>{&#34;n&#34;:1}</code>");
    assert_eq!(page.text_of("dlq-total").as_deref(), Some("2"));
    assert_eq!(ada.get("/queues/jobs").await.text_of("dead-letters").as_deref(), Some("2"));

    let letters = app.engine.dead_letters(queue.id, 10).await.unwrap().unwrap();
    let id = &letters[0].id;
    let confirm = ada.get(&format!("/queues/jobs/dead-letters/replay?id={id}")).await;
    assert_eq!(confirm.status, 200);
    confirm.assert_contains(&format!("Replay dead letter {id}?"));
    confirm.assert_contains(&format!("name=\"id\" value=\"{id}\""));
    let done = ada.post("/queues/jobs/dead-letters/replay", &[("id", id)]).await;
    assert_eq!(done.location(), "/queues/jobs/dead-letters");
    ada.follow(done).await.assert_contains("Replayed 1 dead letter.");
    let stats = app.engine.stats(queue.id, now_ms()).await.unwrap().unwrap();
    assert_eq!((stats.ready, stats.dead_letters), (1, 1));

    // Resubmitting the same form is recognised; a fresh form for a gone letter says so.
    let again = ada.post("/queues/jobs/dead-letters/replay", &[("id", id)]).await;
    ada.follow(again).await.assert_contains("already sent; it was done once and not again");
    ada.get(&format!("/queues/jobs/dead-letters/replay?id={id}")).await;
    let again = ada.post("/queues/jobs/dead-letters/replay", &[("id", id)]).await;
    ada.follow(again).await.assert_contains("That dead letter is no longer there");

    let confirm = ada.get("/queues/jobs/dead-letters/purge").await;
    confirm.assert_contains("Purge the 1 dead letter of this queue?");
    confirm.assert_contains("This cannot be undone.");
    confirm.assert_contains("name=\"all\" value=\"true\"");
    // Without the confirmation's explicit `all`, nothing is purged.
    let refused = ada.post("/queues/jobs/dead-letters/purge", &[]).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(app.engine.stats(queue.id, now_ms()).await.unwrap().unwrap().dead_letters, 1);
    let done = ada.post("/queues/jobs/dead-letters/purge", &[("all", "true")]).await;
    ada.follow(done).await.assert_contains("Purged 1 dead letter.");
    assert_eq!(app.engine.stats(queue.id, now_ms()).await.unwrap().unwrap().dead_letters, 0);

    assert_eq!(ada.get("/queues/jobs/dead-letters/explode").await.status, 404);
    assert_eq!(ada.get("/queues/jobs/dead-letters/replay?id=nothex").await.status, 404);
}

#[sqlx::test(migrations = "../migrations")]
async fn filtered_by_reason_paged_and_a_filtered_replay_replays_only_those(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "1").await;
    let queue = queue_of(&app, "ada@example.com", "jobs").await;
    for i in 0..55 {
        publish(&app, &queue, &format!("t{i}"), "text/plain").await;
    }
    fail_all(&app, &queue, "timeout calling billing").await;
    for i in 0..3 {
        publish(&app, &queue, &format!(r#"{{"bad":{i}}}"#), "application/json").await;
    }
    fail_all(&app, &queue, "bad input: no user").await;

    let page = ada.get("/queues/jobs/dead-letters?reason=timeout").await;
    assert_eq!(page.text_of("dlq-total").as_deref(), Some("58"));
    assert_eq!(page.text_of("dlq-matching").as_deref(), Some("55"));
    page.assert_lacks("bad input");
    assert_eq!(page.body.matches("<tr data-message=").count(), 50);
    let next = next_page(&page).expect("a second page");
    assert!(next.contains("reason=timeout"), "{next}");
    let second = ada.get(&next).await;
    assert_eq!(second.body.matches("<tr data-message=").count(), 5, "{next}: {}", second.body);
    second.assert_lacks("bad input");

    // The detail of a dead letter: its reason and body.
    let letters = app.engine.dead_letter_page(queue.id, None, 100, "bad").await.unwrap().unwrap().letters;
    let view = ada.get(&format!("/queues/jobs/dead-letters/view?id={}", letters[0].id)).await;
    assert_eq!(view.status, 200, "{}", view.body);
    view.assert_contains("bad input: no user");
    view.assert_contains("<code>{&#34;bad&#34;:0}</code>");
    assert_eq!(view.text_of("message-state").as_deref(), Some("Dead"));

    let confirm = ada.get("/queues/jobs/dead-letters/replay?reason=bad+input").await;
    confirm.assert_contains("Replay the 3 dead letters whose reason contains \u{201c}bad input\u{201d}?");
    confirm.assert_contains("name=\"reason\" value=\"bad input\"");
    let done = ada.post("/queues/jobs/dead-letters/replay", &[("reason", "bad input")]).await;
    assert_eq!(done.location(), "/queues/jobs/dead-letters?reason=bad+input");
    ada.follow(done).await.assert_contains("Replayed 3 dead letters.");
    let stats = app.engine.stats(queue.id, now_ms()).await.unwrap().unwrap();
    assert_eq!((stats.ready, stats.dead_letters), (3, 55), "only the filtered ones went back");
    let again = ada.post("/queues/jobs/dead-letters/replay", &[("reason", "bad input")]).await;
    ada.follow(again).await.assert_contains("already sent");
}
