//! Bad request bodies and an unreachable database answer in our error format.

use super::support::{PASSWORD, redis_url, spawn_app};
use aqs_control_plane::{ControlPlane, router};
use aqs_core::config::Config;
use aqs_engine::Engine;
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;
use std::time::Duration;

#[sqlx::test(migrations = "../migrations")]
async fn malformed_bodies_are_4xx_in_our_format(db: PgPool) {
    let app = spawn_app(db).await;
    let session = app.member("ada@example.com").await;
    let url = format!("{}/api/v1/queues", app.base);
    let post = || app.client.post(&url).bearer_auth(&session);

    let message = app
        .raw(post().header("Content-Type", "application/json").body("{\"name\": "))
        .await
        .expect_error(400, "invalid_request");
    assert!(message.contains("JSON"), "{message}");
    app.raw(post().header("Content-Type", "text/plain").body("{\"name\": \"x\"}"))
        .await
        .expect_error(415, "unsupported_media_type");
    app.raw(post().body("{\"name\": \"x\"}")).await.expect_error(415, "unsupported_media_type");
    app.raw(post().json(&serde_json::json!({"name": 5}))).await.expect_error(400, "invalid_request");
    app.raw(post().json(&serde_json::json!({"name": "x", "max_attempts": "five"})))
        .await
        .expect_error(400, "invalid_request");
    app.raw(post().json(&serde_json::json!({"name": "x", "colour": "red"}))).await.expect_error(400, "invalid_request");
    app.raw(post().json(&serde_json::json!([1, 2]))).await.expect_error(400, "invalid_request");
    let signup = app.client.post(format!("{}/api/v1/auth/signup", app.base));
    app.raw(signup.header("Content-Type", "application/json").body("not json"))
        .await
        .expect_error(400, "invalid_request");
}

#[tokio::test]
async fn an_unreachable_database_is_503() {
    // Nothing listens on port 1; the pool gives up after its acquire timeout.
    let db = PgPoolOptions::new()
        .acquire_timeout(Duration::from_millis(500))
        .connect_lazy("postgres://postgres@127.0.0.1:1/postgres")
        .unwrap();
    let config = Config::for_tests("", &redis_url(), &format!("t{:016x}", rand::random::<u64>()));
    let redis = aqs_core::redis_conn::connect(&config.redis_urls()).await.unwrap();
    let cp = ControlPlane::new(&config, db, Engine::from_config(redis, &config)).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router(cp)).await.expect("serve") });

    let response = reqwest::Client::new()
        .post(format!("{base}/api/v1/auth/login"))
        .json(&serde_json::json!({"email": "ada@example.com", "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "1");
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"], "service_unavailable");
}

#[tokio::test]
async fn while_the_database_is_known_down_routes_answer_503_without_waiting_for_it() {
    // The pool would wait a minute for a connection; a watched database that is down answers at
    // once (a test that waited would hang here, not fail a timing check).
    let db = PgPoolOptions::new()
        .acquire_timeout(Duration::from_secs(60))
        .connect_lazy(&format!("postgres://postgres@127.0.0.1:{}/postgres", aqs_testkit::closed_port()))
        .unwrap();
    let config = Config::for_tests("", &redis_url(), &aqs_testkit::namespace());
    let redis = aqs_core::redis_conn::connect(&config.redis_urls()).await.unwrap();
    let cp = ControlPlane::new(&config, db, Engine::from_config(redis, &config)).await.unwrap();
    let shutdown = tokio_util::sync::CancellationToken::new();
    let _watching = cp.watch_database(true, shutdown.clone()).await;
    assert!(!cp.database_is_up(), "down until a probe reaches it");
    let base = aqs_testkit::serve(router(cp), shutdown.clone()).await;

    let client = reqwest::Client::new();
    for request in [
        client
            .post(format!("{base}/api/v1/auth/login"))
            .json(&serde_json::json!({"email": "a@b.co", "password": PASSWORD})),
        client.get(format!("{base}/api/v1/queues")).bearer_auth("not-a-session"),
    ] {
        let response = tokio::time::timeout(Duration::from_secs(30), request.send()).await.expect("no hang").unwrap();
        assert_eq!(response.status(), 503);
        assert_eq!(response.headers()["retry-after"], "1");
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["error"], "service_unavailable");
    }
    shutdown.cancel();
}
