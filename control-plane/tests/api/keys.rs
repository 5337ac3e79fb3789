//! Management keys: shown once, stored hashed, acting on `/api/v1` with their role for their team,
//! never owners nor above their creator, revocable, listed with their last use, audited.

use super::support::spawn_app;
use super::teams::{actions, as_team, join, member_id, team};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;

#[sqlx::test(migrations = "../migrations")]
async fn a_key_is_shown_once_and_acts_with_its_role(db: PgPool) {
    let app = spawn_app(db).await;
    let ada = app.member("ada@example.com").await;
    let ada_id = member_id(&app, &ada).await;
    app.queue(&ada, "jobs").await;

    let created = app.post(&ada, "/api/v1/keys", json!({"name": " ci ", "role": "viewer"})).await.expect(201);
    let secret = created["secret"].as_str().unwrap().to_owned();
    assert!(aqs_core::token::TokenSecret::parse_with("acm_", &secret).is_some(), "{secret}");
    let key = &created["key"];
    assert_eq!(key["name"], "ci");
    assert_eq!(key["role"], "viewer");
    assert_eq!(key["last_four"], &secret[secret.len() - 4..]);
    assert_eq!(key["created_by_email"], "ada@example.com");
    assert_eq!(key["last_used_at"], Value::Null);
    let id = key["id"].as_str().unwrap().to_owned();

    // Only the hash is stored.
    let (hash, team): (String, uuid::Uuid) =
        sqlx::query_as("SELECT secret_hash, team_id FROM management_keys WHERE id = $1::uuid")
            .bind(&id)
            .fetch_one(app.cp.db())
            .await
            .unwrap();
    assert_eq!(hash, hex::encode(<sha2::Sha256 as sha2::Digest>::digest(secret.as_bytes())));
    assert_eq!(team.to_string(), ada_id);
    let listed = app.get(&ada, "/api/v1/keys").await;
    assert!(!listed.text.contains(&secret), "a listing shows no secret");

    // A viewer key reads the team's queues and changes nothing.
    let queues = app.get(&secret, "/api/v1/queues").await.expect(200);
    assert_eq!(queues["queues"][0]["slug"], "jobs");
    let message = app.post(&secret, "/api/v1/queues", json!({"name": "more"})).await.expect_error(403, "forbidden");
    assert!(message.contains("admin") && message.contains("viewer"), "{message}");
    // Its own team only; and not the routes about people.
    let other = uuid::Uuid::new_v4().to_string();
    as_team(&app, Method::GET, &secret, &other, "/api/v1/queues", None).await.expect_error(404, "not_found");
    app.get(&secret, "/api/v1/teams").await.expect_error(403, "forbidden");
    app.get(&secret, "/api/v1/keys").await.expect_error(403, "forbidden");

    let keys = app.get(&ada, "/api/v1/keys").await.expect(200)["keys"].clone();
    assert_eq!(keys.as_array().unwrap().len(), 1);
    assert!(keys[0]["last_used_at"].as_str().unwrap().ends_with('Z'), "{keys}");
    assert!(keys[0].get("secret").is_none());

    // Revoked: 401 from then on.
    app.delete(&ada, &format!("/api/v1/keys/{id}")).await.expect(204);
    app.delete(&ada, &format!("/api/v1/keys/{id}")).await.expect(204);
    app.get(&secret, "/api/v1/queues").await.expect_error(401, "unauthorized");
    app.delete(&ada, &format!("/api/v1/keys/{}", uuid::Uuid::new_v4())).await.expect_error(404, "not_found");
    app.delete(&ada, "/api/v1/keys/not-a-uuid").await.expect_error(404, "not_found");
    let keys = app.get(&ada, "/api/v1/keys").await.expect(200)["keys"].clone();
    assert!(keys[0]["revoked_at"].as_str().unwrap().ends_with('Z'));

    let events: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT action, actor_kind, target_id FROM audit_events WHERE team_id = $1::uuid AND action LIKE 'key.%' ORDER BY at, id",
    )
    .bind(&ada_id)
    .fetch_all(app.cp.db())
    .await
    .unwrap();
    assert_eq!(
        events,
        [("key.created".into(), "member".into(), id.clone()), ("key.revoked".into(), "member".into(), id)]
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn a_key_is_never_an_owner_nor_above_its_creator(db: PgPool) {
    let app = spawn_app(db).await;
    let ada = app.member("ada@example.com").await;
    let bob = app.member("bob@example.com").await;
    let team = team(&app, &ada, "Platform").await;
    join(&app, &ada, &team, &bob, "bob@example.com", "admin").await;

    let message = app
        .post(&ada, "/api/v1/keys", json!({"name": "ci", "role": "owner"}))
        .await
        .expect_error(400, "invalid_request");
    assert!(message.starts_with("role"), "{message}");
    for bad in [json!({"name": "", "role": "viewer"}), json!({"name": "a\u{0}b", "role": "viewer"})] {
        let message = app.post(&ada, "/api/v1/keys", bad).await.expect_error(400, "invalid_request");
        assert!(message.starts_with("name"), "{message}");
    }
    let message =
        app.post(&ada, "/api/v1/keys", json!({"name": "ci", "role": "god"})).await.expect_error(400, "invalid_request");
    assert!(message.starts_with("role"), "{message}");

    // Bob, an admin of the team, makes admin keys for it, which act for it.
    let admin =
        as_team(&app, Method::POST, &bob, &team, "/api/v1/keys", Some(json!({"name": "deploy", "role": "admin"})))
            .await
            .expect(201);
    let secret = admin["secret"].as_str().unwrap();
    app.post(secret, "/api/v1/queues", json!({"name": "deployed"})).await.expect(201);
    let queues = as_team(&app, Method::GET, &ada, &team, "/api/v1/queues", None).await.expect(200);
    assert_eq!(queues["queues"][0]["slug"], "deployed");
    as_team(&app, Method::GET, secret, &team, "/api/v1/queues", None).await.expect(200);
    // A key does not create keys: a person stands behind each.
    app.post(secret, "/api/v1/keys", json!({"name": "again", "role": "viewer"})).await.expect_error(403, "forbidden");
    // It lists and revokes them, as an admin.
    assert_eq!(app.get(secret, "/api/v1/keys").await.expect(200)["keys"].as_array().unwrap().len(), 1);

    // Demoted to developer: no keys at all, and none above the role.
    let bob_id = member_id(&app, &bob).await;
    app.patch(&ada, &format!("/api/v1/teams/{team}/members/{bob_id}"), json!({"role": "developer"})).await.expect(200);
    let message =
        as_team(&app, Method::POST, &bob, &team, "/api/v1/keys", Some(json!({"name": "x", "role": "viewer"})))
            .await
            .expect_error(403, "forbidden");
    assert!(message.contains("admin"), "{message}");
    as_team(&app, Method::GET, &bob, &team, "/api/v1/keys", None).await.expect_error(403, "forbidden");
    assert_eq!(actions(&app, &team).await.iter().filter(|a| *a == "key.created").count(), 1);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_key_acting_is_audited_as_the_key(db: PgPool) {
    let app = spawn_app(db).await;
    let ada = app.member("ada@example.com").await;
    let ada_id = member_id(&app, &ada).await;
    let created = app.post(&ada, "/api/v1/keys", json!({"name": "ops", "role": "admin"})).await.expect(201);
    let secret = created["secret"].as_str().unwrap();
    let id = created["key"]["id"].as_str().unwrap();
    let other = app.post(&ada, "/api/v1/keys", json!({"name": "old", "role": "viewer"})).await.expect(201);
    let other_id = other["key"]["id"].as_str().unwrap();
    app.delete(secret, &format!("/api/v1/keys/{other_id}")).await.expect(204);
    let (kind, actor): (String, uuid::Uuid) = sqlx::query_as(
        "SELECT actor_kind, actor_id FROM audit_events WHERE team_id = $1::uuid AND action = 'key.revoked'",
    )
    .bind(&ada_id)
    .fetch_one(app.cp.db())
    .await
    .unwrap();
    assert_eq!((kind.as_str(), actor.to_string()), ("key", id.to_owned()));
}
