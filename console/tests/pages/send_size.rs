//! The send form takes a body as large as the queue's payload size (far above an ordinary form's
//! limit), and a body over it is an error beside the field, with everything typed kept.

use super::support::{Visitor, queue_of, spawn_console};
use aqs_core::time::now_ms;
use sqlx::PgPool;

#[sqlx::test(migrations = "../migrations")]
async fn a_body_up_to_the_payload_size_is_sent_and_a_larger_one_is_kept_with_its_error(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    let queue = queue_of(&app, "ada@example.com", "jobs").await;

    // 900 KiB of JSON (form-encoded, about twice that): sent.
    let large = format!("{{\"data\":\"{}\"}}", "x".repeat(900 * 1024));
    let form_id = ada.get("/queues/jobs/messages/send").await.input_value("form_id").unwrap();
    let sent = ada
        .post(
            "/queues/jobs/messages/send",
            &[("body", &large), ("content_type", "application/json"), ("form_id", &form_id)],
        )
        .await;
    assert_eq!(sent.status, 303, "{}", &sent.body[..sent.body.len().min(2000)]);
    assert_eq!(app.engine.stats(queue.id, now_ms()).await.unwrap().unwrap().ready, 1);

    // Over the queue's 1 MiB: the form again, the error beside the body, what was typed kept.
    let too_large = format!("marker-{}", "y".repeat(1024 * 1024));
    let form_id = ada.get("/queues/jobs/messages/send").await.input_value("form_id").unwrap();
    let refused = ada
        .post(
            "/queues/jobs/messages/send",
            &[("body", &too_large), ("content_type", "text/plain"), ("group_id", "g-7"), ("form_id", &form_id)],
        )
        .await;
    assert_eq!(refused.status, 422);
    refused.assert_contains("id=\"body-error\"");
    refused.assert_contains("this queue accepts up to 1 MiB");
    refused.assert_contains(">marker-yyyy");
    refused.assert_contains("value=\"g-7\"");
    refused.assert_contains("id=\"send-heading\"");
    assert_eq!(app.engine.stats(queue.id, now_ms()).await.unwrap().unwrap().ready, 1, "nothing more sent");

    // A form over any limit is refused on a page that keeps the account menu.
    let huge = "z".repeat(70 * 1024);
    let page = ada.post("/queues/jobs/tokens", &[("name", &huge)]).await;
    assert_eq!(page.status, 400);
    page.assert_contains("The form is too large.");
    page.assert_contains("<nav class=\"account\"");
    page.assert_contains("href=\"/account\"");

    // A binary body, typed as base64: the bytes it decodes to are sent; bad base64 is kept.
    let form_id = ada.get("/queues/jobs/messages/send").await.input_value("form_id").unwrap();
    let bad = ada
        .post(
            "/queues/jobs/messages/send",
            &[
                ("body", "not base64!"),
                ("body_encoding", "base64"),
                ("content_type", "application/octet-stream"),
                ("form_id", &form_id),
            ],
        )
        .await;
    assert_eq!(bad.status, 422);
    bad.assert_contains("id=\"body-error\">This is not base64");
    bad.assert_contains(">not base64!</textarea>");
    bad.assert_contains("value=\"base64\" id=\"body-base64\" checked");
    let sent = ada
        .post(
            "/queues/jobs/messages/send",
            &[
                ("body", "/wA=\n"),
                ("body_encoding", "base64"),
                ("content_type", "application/octet-stream"),
                ("form_id", &form_id),
            ],
        )
        .await;
    assert_eq!(sent.status, 303, "{}", sent.body);
    let page = ada.follow(sent).await;
    page.assert_contains("Not UTF-8 text: shown as base64.");
    page.assert_contains("<code>/wA=</code>");
}
