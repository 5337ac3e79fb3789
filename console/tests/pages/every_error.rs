//! Forms whose control-plane call stops at its first problem still show every field's error at
//! once: sign-up, a new token, the password change and the push target.

use super::support::{Visitor, spawn_console};
use sqlx::PgPool;

#[sqlx::test(migrations = "../migrations")]
async fn every_field_error_shows_at_once(db: PgPool) {
    let app = spawn_console(db).await;
    let mut visitor = Visitor::new(&app);
    visitor.get("/signup").await;
    let page = visitor.post("/signup", &[("email", "not-an-address"), ("password", "short")]).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"email-error\"");
    page.assert_contains("id=\"password-error\">Use at least 8 characters.");

    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;

    ada.get("/queues/jobs/tokens").await;
    let page = ada.post("/queues/jobs/tokens", &[("name", "")]).await;
    assert_eq!(page.status, 422, "{}", page.body);
    page.assert_contains("id=\"token-name-error\"");
    page.assert_contains("id=\"scopes-error\"");

    ada.get("/account").await;
    let page = ada.post("/account/password", &[("current_password", ""), ("new_password", "short")]).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"current-password-error\"");
    page.assert_contains("id=\"new-password-error\"");
    ada.get("/queues/jobs/push").await;
    let page = ada
        .post(
            "/queues/jobs/push",
            &[("handler_url", ""), ("mode", "message"), ("timeout_seconds", "5"), ("concurrency", "x")],
        )
        .await;
    assert_eq!(page.status, 422, "{}", page.body);
    page.assert_contains("id=\"handler-url-error\"");
    page.assert_contains("id=\"timeout-seconds-error\"");
    page.assert_contains("id=\"concurrency-error\"");
    let page = ada
        .post(
            "/queues/jobs/push",
            &[("handler_url", ""), ("mode", "message"), ("timeout_seconds", "5"), ("concurrency", "0")],
        )
        .await;
    page.assert_contains("id=\"handler-url-error\"");
    page.assert_contains("id=\"timeout-seconds-error\"");
    page.assert_contains("id=\"concurrency-error\"");
}
