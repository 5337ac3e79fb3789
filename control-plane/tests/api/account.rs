//! The member's account: changing the password (every old session ends), listing and ending
//! sessions, and deleting the account with everything it owns.

use super::support::{PASSWORD, TestApp, spawn_app};
use aqs_core::ids::QueueId;
use aqs_core::projection::TokenRecord;
use aqs_engine::{NewMessage, PublishOutcome};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;

const NEW_PASSWORD: &str = "a much better passphrase";

fn session_of(body: &Value) -> String {
    body["session"].as_str().expect("a session").to_owned()
}

async fn delete_account(app: &TestApp, session: &str, email: &str) -> super::support::Reply {
    app.call(Method::DELETE, "/api/v1/account", Some(session), Some(json!({"confirm_email": email}))).await
}

#[sqlx::test(migrations = "../migrations")]
async fn a_password_change_needs_the_current_password_and_ends_every_session(db: PgPool) {
    let app = spawn_app(db).await;
    let first = app.member("ada@example.com").await;
    let second = session_of(&app.login("ada@example.com", PASSWORD).await.expect(200));
    let other = app.member("bob@example.com").await;

    let wrong = json!({"current_password": "not my password", "new_password": NEW_PASSWORD});
    let message = app.post(&first, "/api/v1/auth/password", wrong).await.expect_error(400, "invalid_request");
    assert!(message.starts_with("current_password: "), "{message}");
    app.get(&first, "/api/v1/auth/me").await.expect(200);
    app.login("ada@example.com", PASSWORD).await.expect(200);

    let short = json!({"current_password": PASSWORD, "new_password": "short"});
    let message = app.post(&first, "/api/v1/auth/password", short).await.expect_error(400, "invalid_request");
    assert!(message.starts_with("new_password: "), "{message}");
    let unknown = json!({"current_password": PASSWORD, "new_password": NEW_PASSWORD, "extra": 1});
    app.post(&first, "/api/v1/auth/password", unknown).await.expect_error(400, "invalid_request");

    let change = json!({"current_password": PASSWORD, "new_password": NEW_PASSWORD});
    let answer = app.post(&first, "/api/v1/auth/password", change).await.expect(200);
    assert_eq!(answer["member"]["email"], "ada@example.com");
    let fresh = session_of(&answer);
    for old in [&first, &second] {
        app.get(old, "/api/v1/queues").await.expect_error(401, "unauthorized");
    }
    app.get(&fresh, "/api/v1/queues").await.expect(200);
    app.get(&other, "/api/v1/auth/me").await.expect(200);
    app.login("ada@example.com", PASSWORD).await.expect_error(401, "unauthorized");
    app.login("ada@example.com", NEW_PASSWORD).await.expect(200);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_member_lists_their_live_sessions_and_ends_one(db: PgPool) {
    let app = spawn_app(db).await;
    let first = app.member("ada@example.com").await;
    let second = session_of(&app.login("ada@example.com", PASSWORD).await.expect(200));
    let bob = app.member("bob@example.com").await;

    let listed = app.get(&second, "/api/v1/auth/sessions").await.expect(200);
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "{listed}");
    let current: Vec<&Value> = sessions.iter().filter(|s| s["current"] == true).collect();
    assert_eq!(current.len(), 1, "{listed}");
    for session in sessions {
        let created = session["created_at"].as_str().unwrap();
        let expires = session["expires_at"].as_str().unwrap();
        assert!(created.ends_with('Z') && expires > created, "{session}");
        // Where it logged in from: the client address; this client sends no user agent.
        assert_eq!((&session["address"], &session["user_agent"]), (&json!("127.0.0.1"), &Value::Null), "{session}");
    }
    // A log-in that names its user agent keeps it.
    let named: Value = app
        .client
        .post(format!("{}/api/v1/auth/login", app.base))
        .header("user-agent", "deploy-script/3")
        .json(&json!({"email": "ada@example.com", "password": PASSWORD}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let third = session_of(&named);
    let listed_now = app.get(&third, "/api/v1/auth/sessions").await.expect(200);
    let mine = listed_now["sessions"].as_array().unwrap().iter().find(|s| s["current"] == true).unwrap().clone();
    assert_eq!(mine["user_agent"], "deploy-script/3", "{mine}");
    app.post(&third, "/api/v1/auth/logout", json!({})).await.expect(204);
    let other_id = sessions.iter().find(|s| s["current"] == false).unwrap()["id"].as_str().unwrap().to_owned();

    // Another member cannot end it; a bad id names nothing.
    app.delete(&bob, &format!("/api/v1/auth/sessions/{other_id}")).await.expect_error(404, "not_found");
    app.delete(&second, "/api/v1/auth/sessions/not-a-uuid").await.expect_error(404, "not_found");
    app.get(&first, "/api/v1/auth/me").await.expect(200);

    app.delete(&second, &format!("/api/v1/auth/sessions/{other_id}")).await.expect(204);
    app.get(&first, "/api/v1/auth/me").await.expect_error(401, "unauthorized");
    app.get(&second, "/api/v1/auth/me").await.expect(200);
    app.delete(&second, &format!("/api/v1/auth/sessions/{other_id}")).await.expect_error(404, "not_found");
    let listed = app.get(&second, "/api/v1/auth/sessions").await.expect(200);
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 1, "{listed}");
    app.call(Method::GET, "/api/v1/auth/sessions", None, None).await.expect_error(401, "unauthorized");
}

#[sqlx::test(migrations = "../migrations")]
async fn expired_sessions_are_deleted_as_new_ones_start(db: PgPool) {
    let app = spawn_app(db.clone()).await;
    let session = app.member("ada@example.com").await;
    sqlx::query("UPDATE sessions SET expires_at = now() - interval '1 minute'").execute(&db).await.unwrap();
    app.get(&session, "/api/v1/auth/me").await.expect_error(401, "unauthorized");
    let before: i64 = sqlx::query_scalar("SELECT count(*) FROM sessions").fetch_one(&db).await.unwrap();
    assert_eq!(before, 1);
    app.login("ada@example.com", PASSWORD).await.expect(200);
    let expired: i64 =
        sqlx::query_scalar("SELECT count(*) FROM sessions WHERE expires_at <= now()").fetch_one(&db).await.unwrap();
    assert_eq!(expired, 0, "the expired row went at the next log-in");
}

#[sqlx::test(migrations = "../migrations")]
async fn deleting_the_account_removes_its_queues_and_data_and_it_cannot_log_in(db: PgPool) {
    let app = spawn_app(db.clone()).await;
    let ada = app.member("ada@example.com").await;
    let other_session = session_of(&app.login("ada@example.com", PASSWORD).await.expect(200));
    let bob = app.member("bob@example.com").await;
    let mut ids = Vec::new();
    for name in ["jobs", "emails"] {
        let created = app.queue(&ada, name).await;
        let id = QueueId::parse(created["queue"]["id"].as_str().unwrap()).unwrap();
        let message = NewMessage {
            body: b"{}".to_vec(),
            content_type: "application/json".into(),
            attributes: String::new(),
            group_id: None,
            idempotency_key: None,
            delay_ms: 0,
        };
        let now = aqs_core::time::now_ms();
        assert!(matches!(app.cp.engine().publish(id, &[message], now).await.unwrap(), PublishOutcome::Stored(_)));
        ids.push((id, created["token"]["secret"].as_str().unwrap().to_owned()));
    }
    let kept = app.queue(&bob, "bobs-queue").await;
    let kept_id = QueueId::parse(kept["queue"]["id"].as_str().unwrap()).unwrap();

    // A wrong or missing confirmation deletes nothing.
    let message = delete_account(&app, &ada, "bob@example.com").await.expect_error(400, "invalid_request");
    assert!(message.starts_with("confirm_email: "), "{message}");
    app.call(Method::DELETE, "/api/v1/account", Some(&ada), Some(json!({}))).await.expect_error(400, "invalid_request");
    app.get(&ada, "/api/v1/queues/jobs").await.expect(200);

    let reply = delete_account(&app, &ada, "  ADA@example.com ").await;
    assert_eq!(reply.status, 204, "{}", reply.text);

    for session in [&ada, &other_session] {
        app.get(session, "/api/v1/auth/me").await.expect_error(401, "unauthorized");
    }
    app.login("ada@example.com", PASSWORD).await.expect_error(401, "unauthorized");
    for (id, secret) in &ids {
        let tag = format!("{{q:{id}}}");
        let left: Vec<String> = app.namespace_keys().await.into_iter().filter(|k| k.contains(&tag)).collect();
        // Only the tombstone that keeps a late projection write from recreating the queue.
        assert!(left.iter().all(|k| k == &app.keys.deleted_queue(*id)), "{left:?}");
        assert!(app.cp.engine().stats(*id, aqs_core::time::now_ms()).await.unwrap().is_none());
        let hash = aqs_core::token::TokenSecret::parse(secret).unwrap().hash();
        let record = TokenRecord::from_fields(&app.hash(&app.keys.token(&hash)).await);
        assert!(record.is_none(), "the token opens nothing: {record:?}");
    }
    assert_eq!(app.live_queue_ids().await, vec![kept_id.to_string()]);
    let live: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM queues q JOIN members m ON m.id = q.team_id
         WHERE m.email = 'ada@example.com' AND q.deleted_at IS NULL",
    )
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!(live, 0);
    let tokens: i64 =
        sqlx::query_scalar("SELECT count(*) FROM tokens WHERE revoked_at IS NULL").fetch_one(&db).await.unwrap();
    assert_eq!(tokens, 1, "only bob's token is live");
    app.get(&bob, "/api/v1/queues/bobs-queue").await.expect(200);

    // The email is free again: a new sign-up is a new, empty account.
    let fresh = app.member("ada@example.com").await;
    let list = app.get(&fresh, "/api/v1/queues").await.expect(200);
    assert_eq!(list["queues"].as_array().unwrap().len(), 0, "{list}");
}

#[sqlx::test(migrations = "../migrations")]
async fn deleting_the_account_removes_its_domains_and_hosts(db: PgPool) {
    let app = spawn_app(db.clone()).await;
    let ada = app.member("ada@example.com").await;
    app.queue(&ada, "jobs").await;
    app.post(&ada, "/api/v1/domains", json!({"name": "example.com"})).await.expect(201);
    // Verified by hand: the DNS check is not what this test is about.
    sqlx::query("UPDATE domains SET status = 'verified', verified_at = now()").execute(&db).await.unwrap();
    app.post(&ada, "/api/v1/hosts", json!({"hostname": "queue.example.com", "queue": "jobs"})).await.expect(201);

    delete_account(&app, &ada, "ada@example.com").await.expect(204);
    let domains: i64 = sqlx::query_scalar("SELECT count(*) FROM domains").fetch_one(&db).await.unwrap();
    let hosts: i64 = sqlx::query_scalar("SELECT count(*) FROM hosts").fetch_one(&db).await.unwrap();
    assert_eq!((domains, hosts), (0, 0));
}
