//! The Dead letters tab: reason, attempts, preview; replay or purge one or all after confirming.

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
    page.assert_contains("<span class=\"label\">Reason</span> resize failed: image too large");
    page.assert_contains("<dt>Attempts</dt><dd>1</dd>");
    page.assert_contains("{\n  &#34;n&#34;: 1\n}");
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
