//! The operator routes for callback URL prefixes: 404 to everyone but operators, validation of
//! prefixes, and withdrawal stopping the push targets a prefix no longer covers.

use super::support::{TestApp, spawn_app_with};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;

pub const OPERATOR: &str = "op@example.com";

pub async fn app_with_operator(db: PgPool) -> (TestApp, String) {
    let app = spawn_app_with(db, |c| c.operator_emails = vec![OPERATOR.into()]).await;
    let session = app.member(OPERATOR).await;
    (app, session)
}

pub async fn member_id(app: &TestApp, session: &str) -> String {
    app.get(session, "/api/v1/auth/me").await.expect(200)["member"]["id"].as_str().unwrap().to_owned()
}

/// Authorises `prefix` for the member behind `member_session`.
pub async fn authorise(app: &TestApp, operator: &str, member_session: &str, prefix: &str) -> Value {
    let id = member_id(app, member_session).await;
    let path = format!("/api/v1/admin/members/{id}/callback-urls");
    app.post(operator, &path, json!({ "prefix": prefix })).await.expect(201)["callback_url"].clone()
}

#[sqlx::test(migrations = "../migrations")]
async fn operator_routes_are_404_to_everyone_else(db: PgPool) {
    let (app, operator) = app_with_operator(db).await;
    let ada = app.member("ada@example.com").await;
    let id = member_id(&app, &ada).await;
    let path = format!("/api/v1/admin/members/{id}/callback-urls");
    for session in [Some(ada.as_str()), None, Some("not-a-session")] {
        for (method, body) in [(Method::GET, None), (Method::POST, Some(json!({"prefix": "https://a.example.com/"})))] {
            app.call(method, &path, session, body).await.expect_error(404, "not_found");
        }
        app.call(Method::DELETE, &format!("{path}/{}", uuid::Uuid::new_v4()), session, None)
            .await
            .expect_error(404, "not_found");
        app.call(Method::GET, "/api/v1/admin/members?email=ada@example.com", session, None)
            .await
            .expect_error(404, "not_found");
    }
    // The operator sees them.
    assert_eq!(app.get(&operator, &path).await.expect(200)["callback_urls"], json!([]));
    let found = app.get(&operator, "/api/v1/admin/members?email=ADA@example.com").await.expect(200);
    assert_eq!(found["member"]["id"], id.as_str());
}

#[sqlx::test(migrations = "../migrations")]
async fn operators_add_list_and_remove_prefixes(db: PgPool) {
    let (app, operator) = app_with_operator(db).await;
    let ada = app.member("ada@example.com").await;
    let id = member_id(&app, &ada).await;
    let path = format!("/api/v1/admin/members/{id}/callback-urls");
    let added = app.post(&operator, &path, json!({"prefix": "HTTPS://App.Example.com"})).await.expect(201);
    assert_eq!(added["callback_url"]["prefix"], "https://app.example.com/", "stored normalised");
    app.post(&operator, &path, json!({"prefix": "https://app.example.com/"})).await.expect_error(409, "conflict");
    for (bad, rule) in [
        ("ftp://app.example.com/", "scheme"),
        ("https://u:p@app.example.com/", "credentials"),
        ("https://app.example.com/#x", "fragment"),
        ("https://app.example.com/?x=1", "query"),
        ("nope", "not a valid URL"),
        ("http://127.0.0.1:9/", "must be a domain name"),
        ("https://[2001:db8::1]/", "must be a domain name"),
    ] {
        let message = app.post(&operator, &path, json!({"prefix": bad})).await.expect_error(400, "invalid_request");
        assert!(message.contains(rule), "{bad}: {message}");
    }
    let unknown = format!("/api/v1/admin/members/{}/callback-urls", uuid::Uuid::new_v4());
    app.get(&operator, &unknown).await.expect_error(404, "not_found");
    let listed = app.get(&operator, &path).await.expect(200)["callback_urls"].clone();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    // The member sees their own prefixes.
    let mine = app.get(&ada, "/api/v1/push/callback-urls").await.expect(200);
    assert_eq!(mine["callback_urls"], json!(["https://app.example.com/"]));
    let url_id = listed[0]["id"].as_str().unwrap();
    app.delete(&operator, &format!("{path}/{url_id}")).await.expect(200);
    app.delete(&operator, &format!("{path}/{url_id}")).await.expect_error(404, "not_found");
    assert_eq!(app.get(&operator, &path).await.expect(200)["callback_urls"], json!([]));
}

#[sqlx::test(migrations = "../migrations")]
async fn withdrawing_a_prefix_stops_push_on_the_queues_it_covered(db: PgPool) {
    let (app, operator) = app_with_operator(db).await;
    let ada = app.member("ada@example.com").await;
    let narrow = authorise(&app, &operator, &ada, "http://localhost:9/a").await;
    authorise(&app, &operator, &ada, "http://localhost:9/b/").await;
    app.queue(&ada, "one").await;
    app.queue(&ada, "two").await;
    app.call(
        Method::PUT,
        "/api/v1/queues/one/push",
        Some(&ada),
        Some(json!({"handler_url": "http://localhost:9/a/x"})),
    )
    .await
    .expect(201);
    app.call(
        Method::PUT,
        "/api/v1/queues/two/push",
        Some(&ada),
        Some(json!({"handler_url": "http://localhost:9/b/x"})),
    )
    .await
    .expect(201);
    let id = member_id(&app, &ada).await;
    let removed = app
        .delete(&operator, &format!("/api/v1/admin/members/{id}/callback-urls/{}", narrow["id"].as_str().unwrap()))
        .await
        .expect(200);
    assert_eq!(removed["push_stopped"], json!(["one"]));
    app.get(&ada, "/api/v1/queues/one/push").await.expect_error(404, "not_found");
    app.get(&ada, "/api/v1/queues/two/push").await.expect(200);
}
