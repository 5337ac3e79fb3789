//! Tokens: mint, list, revoke, validation, last use, and that a secret is never stored or listed.

use super::support::spawn_app;
use redis::AsyncCommands;
use serde_json::{Value, json};
use sqlx::PgPool;

#[sqlx::test(migrations = "../migrations")]
async fn mint_list_and_revoke(db: PgPool) {
    let app = spawn_app(db).await;
    let session = app.member("ada@example.com").await;
    let first = app.queue(&session, "jobs").await["token"].clone();
    let minted = app
        .post(
            &session,
            "/api/v1/queues/jobs/tokens",
            json!({"name": " worker ", "scopes": ["manage", "consume", "consume"]}),
        )
        .await
        .expect(201)["token"]
        .clone();
    assert_eq!(minted["name"], "worker");
    assert_eq!(minted["scopes"], json!(["consume", "manage"]));
    let secret = minted["secret"].as_str().unwrap();
    assert!(aqs_core::token::TokenSecret::parse(secret).is_some());
    assert_eq!(minted["last_four"], &secret[secret.len() - 4..]);

    let list = app.get(&session, "/api/v1/queues/jobs/tokens").await;
    let queues = app.get(&session, "/api/v1/queues").await.text;
    let queue = app.get(&session, "/api/v1/queues/jobs").await.text;
    for secret in [first["secret"].as_str().unwrap(), secret] {
        for shown in [&list.text, &queues, &queue] {
            assert!(!shown.contains(secret), "a listing shows no secret: {shown}");
        }
    }
    let tokens = list.expect(200)["tokens"].clone();
    assert_eq!(tokens.as_array().unwrap().len(), 2);
    assert_eq!(tokens[0]["id"], first["id"]);
    assert_eq!(tokens[1]["id"], minted["id"]);
    for token in tokens.as_array().unwrap() {
        assert!(token.get("secret").is_none());
        assert_eq!(token["revoked_at"], Value::Null);
    }

    let path = format!("/api/v1/queues/jobs/tokens/{}", minted["id"].as_str().unwrap());
    app.delete(&session, &path).await.expect(204);
    app.delete(&session, &path).await.expect(204);
    let tokens = app.get(&session, "/api/v1/queues/jobs/tokens").await.expect(200)["tokens"].clone();
    assert_eq!(tokens[1]["id"], minted["id"]);
    assert!(tokens[1]["revoked_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(tokens[0]["revoked_at"], Value::Null);

    app.delete(&session, &format!("/api/v1/queues/jobs/tokens/{}", uuid::Uuid::new_v4()))
        .await
        .expect_error(404, "not_found");
    app.delete(&session, "/api/v1/queues/jobs/tokens/not-a-uuid").await.expect_error(404, "not_found");
}

#[sqlx::test(migrations = "../migrations")]
async fn token_requests_are_checked(db: PgPool) {
    let app = spawn_app(db).await;
    let session = app.member("ada@example.com").await;
    app.queue(&session, "jobs").await;
    let mint = |body: Value| app.post(&session, "/api/v1/queues/jobs/tokens", body);
    assert!(mint(json!({"name": "w", "scopes": []})).await.expect_error(400, "invalid_request").contains("scopes"));
    assert!(
        mint(json!({"name": "w", "scopes": ["send", "admin"]}))
            .await
            .expect_error(400, "invalid_request")
            .contains("admin")
    );
    assert!(mint(json!({"name": " ", "scopes": ["send"]})).await.expect_error(400, "invalid_request").contains("name"));
    assert!(
        mint(json!({"name": "w".repeat(65), "scopes": ["send"]}))
            .await
            .expect_error(400, "invalid_request")
            .contains("name")
    );
    mint(json!({"name": "w", "scopes": "send"})).await.expect_error(400, "invalid_request");
    mint(json!({"name": "w"})).await.expect_error(400, "invalid_request");
    mint(json!({"name": "w".repeat(64), "scopes": ["send"]})).await.expect(201);
    app.post(&session, "/api/v1/queues/nope/tokens", json!({"name": "w", "scopes": ["send"]}))
        .await
        .expect_error(404, "not_found");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_secret_is_stored_in_no_table(db: PgPool) {
    let app = spawn_app(db.clone()).await;
    let session = app.member("ada@example.com").await;
    let mut secrets = vec![app.queue(&session, "jobs").await["token"]["secret"].as_str().unwrap().to_owned()];
    let minted = app.post(&session, "/api/v1/queues/jobs/tokens", json!({"name": "w", "scopes": ["send"]})).await;
    secrets.push(minted.expect(201)["token"]["secret"].as_str().unwrap().to_owned());

    let columns: Vec<(String, String)> = sqlx::query_as(
        "SELECT table_name::text, column_name::text FROM information_schema.columns
         WHERE table_schema = 'public' AND data_type IN ('text', 'character varying', 'ARRAY', 'jsonb', 'bytea')",
    )
    .fetch_all(&db)
    .await
    .unwrap();
    assert!(columns.iter().any(|(t, c)| t == "tokens" && c == "secret_hash"), "{columns:?}");
    for secret in &secrets {
        for (table, column) in &columns {
            let sql = format!("SELECT count(*) FROM \"{table}\" WHERE strpos(\"{column}\"::text, $1) > 0");
            let hits: i64 = sqlx::query_scalar(&sql).bind(secret).fetch_one(&db).await.unwrap();
            assert_eq!(hits, 0, "the secret is stored in {table}.{column}");
        }
        let hash = aqs_core::token::TokenSecret::parse(secret).unwrap().hash();
        let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM tokens WHERE secret_hash = $1")
            .bind(&hash)
            .fetch_one(&db)
            .await
            .unwrap();
        assert_eq!(stored, 1, "only the SHA-256 is kept");
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn last_use_recorded_by_the_data_plane_shows_in_the_listing(db: PgPool) {
    let app = spawn_app(db.clone()).await;
    let session = app.member("ada@example.com").await;
    let created = app.queue(&session, "jobs").await;
    let token_id = created["token"]["id"].as_str().unwrap();
    let queue_id = aqs_core::ids::QueueId::parse(created["queue"]["id"].as_str().unwrap()).unwrap();
    let listed = app.get(&session, "/api/v1/queues/jobs/tokens").await.expect(200);
    assert_eq!(listed["tokens"][0]["last_used_at"], Value::Null);

    // 2026-11-03T12:00:00Z, as the data plane records it: token id → milliseconds.
    let key = app.keys.queue(queue_id).token_last_used();
    let _: () = app.redis.clone().hset(&key, token_id, 1_793_707_200_000u64).await.unwrap();
    let listed = app.get(&session, "/api/v1/queues/jobs/tokens").await.expect(200);
    assert_eq!(listed["tokens"][0]["last_used_at"], "2026-11-03T12:00:00Z");
}
