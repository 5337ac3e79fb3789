//! Tenancy: another member's queue and tokens are "not found" on every route, and stay untouched.

use super::support::spawn_app;
use reqwest::Method;
use serde_json::json;
use sqlx::PgPool;

#[sqlx::test(migrations = "../migrations")]
async fn another_members_queue_is_not_found_on_every_route(db: PgPool) {
    let app = spawn_app(db).await;
    let ada = app.member("ada@example.com").await;
    let bob = app.member("bob@example.com").await;
    let created = app.queue(&ada, "ada jobs").await;
    let token = created["token"]["id"].as_str().unwrap();
    let bobs = app.queue(&bob, "bob jobs").await;
    let bob_slug = bobs["queue"]["slug"].as_str().unwrap();

    let q = "/api/v1/queues/ada-jobs";
    let token_path = format!("{q}/tokens/{token}");
    let mint = json!({"name": "stolen", "scopes": ["send"]});
    let routes = [
        (Method::GET, q.to_owned(), None),
        (Method::PATCH, q.to_owned(), Some(json!({"max_attempts": 1}))),
        (Method::DELETE, q.to_owned(), None),
        (Method::POST, format!("{q}/pause"), None),
        (Method::POST, format!("{q}/resume"), None),
        (Method::GET, format!("{q}/tokens"), None),
        (Method::POST, format!("{q}/tokens"), Some(mint)),
        (Method::DELETE, token_path.clone(), None),
        // Ada's token through Bob's own queue.
        (Method::DELETE, format!("/api/v1/queues/{bob_slug}/tokens/{token}"), None),
    ];
    for (method, path, body) in routes {
        app.call(method, &path, Some(&bob), body).await.expect_error(404, "not_found");
    }

    let list = app.get(&bob, "/api/v1/queues").await.expect(200);
    assert_eq!(list["queues"].as_array().unwrap().len(), 1);
    assert_eq!(list["queues"][0]["slug"], bob_slug);
    let still = app.get(&ada, q).await.expect(200);
    assert_eq!(still["queue"], created["queue"], "Ada's queue is unchanged");
    let tokens = app.get(&ada, &format!("{q}/tokens")).await.expect(200);
    assert_eq!(tokens["tokens"].as_array().unwrap().len(), 1, "no token was minted");
    assert_eq!(tokens["tokens"][0]["revoked_at"], serde_json::Value::Null, "the token was not revoked");
}
