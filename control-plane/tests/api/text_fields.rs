//! Control characters in the text members type (emails, queue and token names, search terms, URLs)
//! are a 400 `invalid_request` on every route, signed in or not, and nothing reaches PostgreSQL:
//! a NUL used to be a 500 there.

use super::push_admin::{app_with_operator, member_id};
use reqwest::Method;
use serde_json::json;
use sqlx::PgPool;

const CONTROLS: [&str; 5] = ["\0", "\r\n", "\n", "\t", "\u{7f}"];

#[track_caller]
fn names_the_field(message: &str, field: &str) {
    assert!(message.starts_with(&format!("{field}: control characters")), "{message}");
}

#[sqlx::test(migrations = "../migrations")]
async fn control_characters_in_emails_are_400_without_a_session(db: PgPool) {
    let (app, _) = app_with_operator(db).await;
    for control in CONTROLS {
        let email = format!("ada{control}@example.com");
        names_the_field(
            &app.signup(&email, "long enough password").await.expect_error(400, "invalid_request"),
            "email",
        );
        names_the_field(&app.login(&email, "long enough password").await.expect_error(400, "invalid_request"), "email");
    }
    // No member was made on the way.
    app.login("ada@example.com", "long enough password").await.expect_error(401, "unauthorized");
}

#[sqlx::test(migrations = "../migrations")]
async fn control_characters_in_names_searches_and_urls_are_400(db: PgPool) {
    let (app, operator) = app_with_operator(db).await;
    let ada = app.member("ada@example.com").await;
    app.queue(&ada, "jobs").await;
    let ada_id = member_id(&app, &ada).await;
    for control in CONTROLS {
        let name = format!("image{control}jobs");
        let message =
            app.post(&ada, "/api/v1/queues", json!({ "name": name })).await.expect_error(400, "invalid_request");
        names_the_field(&message, "name");
        let message =
            app.patch(&ada, "/api/v1/queues/jobs", json!({ "name": name })).await.expect_error(400, "invalid_request");
        names_the_field(&message, "name");
        let mint = json!({ "name": name, "scopes": ["send"] });
        let message = app.post(&ada, "/api/v1/queues/jobs/tokens", mint).await.expect_error(400, "invalid_request");
        names_the_field(&message, "name");
        let put = json!({ "handler_url": format!("https://app.example.com/{control}hook") });
        let message = app
            .call(Method::PUT, "/api/v1/queues/jobs/push", Some(&ada), Some(put))
            .await
            .expect_error(400, "invalid_request");
        names_the_field(&message, "handler_url");
        let prefix = json!({ "prefix": format!("https://app.example.com/{control}") });
        let path = format!("/api/v1/admin/members/{ada_id}/callback-urls");
        names_the_field(&app.post(&operator, &path, prefix).await.expect_error(400, "invalid_request"), "prefix");
    }
    for encoded in ["%00", "%0D%0A", "ada%40example.com%00"] {
        let message = app
            .get(&operator, &format!("/api/v1/admin/members?email={encoded}"))
            .await
            .expect_error(400, "invalid_request");
        names_the_field(&message, "email");
    }
    // Nothing was created or renamed.
    let queues = app.get(&ada, "/api/v1/queues").await.expect(200);
    let names: Vec<&str> = queues["queues"].as_array().unwrap().iter().map(|q| q["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["jobs"]);
    let tokens = app.get(&ada, "/api/v1/queues/jobs/tokens").await.expect(200);
    assert_eq!(tokens["tokens"].as_array().unwrap().len(), 1, "only the queue's first token: {tokens}");
}

/// Found by the fuzzer (infra/test-api): the operators' billing list passed its `status` filter to
/// PostgreSQL as it came, so a NUL in it was a 500.
#[sqlx::test(migrations = "../migrations")]
async fn control_characters_in_the_billing_status_filter_are_400(db: PgPool) {
    let (app, operator) = app_with_operator(db).await;
    for control in ["%00", "%0D%0A", "%7F"] {
        let path = format!("/api/v1/admin/billing?status=past{control}due");
        names_the_field(&app.get(&operator, &path).await.expect_error(400, "invalid_request"), "status");
    }
    app.get(&operator, "/api/v1/admin/billing?status=past_due").await.expect(200);
}
