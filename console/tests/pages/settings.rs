//! The Settings tab: saving, field errors, pause and resume, and deleting by typing the name.

use super::support::{Visitor, queue_of, spawn_console};
use sqlx::PgPool;

fn settings<'a>(visibility: &'a str, attempts: &'a str, storage_mib: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("visibility_timeout_seconds", visibility),
        ("max_attempts", attempts),
        ("payload_size", "10485760"),
        ("storage_limit_mib", storage_mib),
    ]
}

#[sqlx::test(migrations = "../migrations")]
async fn settings_save_and_report_errors(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;

    let page = ada.get("/queues/jobs/settings").await;
    page.assert_contains("name=\"storage_limit_mib\" type=\"number\"");
    page.assert_contains("value=\"1024\"");

    let saved = ada.post("/queues/jobs/settings", &settings("60", "3", "2048")).await;
    assert_eq!(saved.location(), "/queues/jobs/settings");
    ada.follow(saved).await.assert_contains("Settings saved.");
    let queue = queue_of(&app, "ada@example.com", "jobs").await;
    assert_eq!(
        (queue.visibility_timeout_seconds, queue.max_attempts, queue.payload_size, queue.storage_limit),
        (60, 3, 10 << 20, 2048 << 20)
    );

    let page = ada.post("/queues/jobs/settings", &settings("0", "x", "0")).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"attempts-error\">Enter a whole number");
    page.assert_contains("id=\"storage-error\">Must be between 1 and 102,400 MiB.");
    let page = ada.post("/queues/jobs/settings", &settings("0", "3", "10")).await;
    page.assert_contains("id=\"visibility-error\">Must be between 1 and 43200.");
    assert_eq!(queue_of(&app, "ada@example.com", "jobs").await.visibility_timeout_seconds, 60);
}

#[sqlx::test(migrations = "../migrations")]
async fn pause_resume_and_delete_by_typing_the_name(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("Image jobs", "5").await;
    ada.get("/queues/image-jobs/settings").await;

    let paused = ada.post("/queues/image-jobs/pause", &[]).await;
    let page = ada.follow(paused).await;
    page.assert_contains("Queue paused");
    page.assert_contains("<span class=\"badge paused\">Paused</span>");
    assert!(queue_of(&app, "ada@example.com", "image-jobs").await.paused);
    let resumed = ada.post("/queues/image-jobs/resume", &[]).await;
    ada.follow(resumed).await.assert_contains("Queue resumed.");
    assert!(!queue_of(&app, "ada@example.com", "image-jobs").await.paused);

    let page = ada.post("/queues/image-jobs/delete", &[("confirm_name", "")]).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"confirm-name-error\">Type the queue&#39;s name to confirm.");
    let page = ada.post("/queues/image-jobs/delete", &[("confirm_name", "image-jobs")]).await;
    assert_eq!(page.status, 422);
    page.assert_contains("That is not this queue&#39;s name; type Image jobs exactly.");
    ada.get("/queues/image-jobs").await;

    let deleted = ada.post("/queues/image-jobs/delete", &[("confirm_name", "Image jobs")]).await;
    assert_eq!(deleted.location(), "/");
    let list = ada.follow(deleted).await;
    list.assert_contains("Queue “Image jobs” deleted");
    list.assert_contains("No queues yet");
    assert_eq!(ada.get("/queues/image-jobs").await.status, 404);
}

#[sqlx::test(migrations = "../migrations")]
async fn settings_show_every_field_error_at_once(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    ada.get("/queues/jobs/settings").await;
    let page = ada.post("/queues/jobs/settings", &settings("0", "500", "0")).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"visibility-error\">Must be between 1 and 43200.");
    page.assert_contains("id=\"attempts-error\">Must be between 1 and 100.");
    page.assert_contains("id=\"storage-error\">Must be between 1 and 102,400 MiB.");
    assert_eq!(queue_of(&app, "ada@example.com", "jobs").await.max_attempts, 5);
}

#[sqlx::test(migrations = "../migrations")]
async fn renaming_a_queue_keeps_its_slug(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("Image Jobs", "5").await;
    let page = ada.get("/queues/image-jobs/settings").await;
    page.assert_contains("name=\"name\" type=\"text\" required maxlength=\"64\" value=\"Image Jobs\"");
    page.assert_contains("<code id=\"delete-slug\">image-jobs</code>");

    let mut fields = settings("30", "5", "1024");
    fields.push(("name", ""));
    let page = ada.post("/queues/image-jobs/settings", &fields).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"name-error\">Give the queue a name.");

    fields.pop();
    fields.push(("name", "Thumbnails"));
    let saved = ada.post("/queues/image-jobs/settings", &fields).await;
    assert_eq!(saved.location(), "/queues/image-jobs/settings");
    ada.follow(saved).await.assert_contains("value=\"Thumbnails\"");
    assert_eq!(queue_of(&app, "ada@example.com", "image-jobs").await.name, "Thumbnails");
}
