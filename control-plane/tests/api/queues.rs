//! Queues: defaults, every range edge, slugs, the per-member limit, read, change and delete.

use super::support::{TestApp, spawn_app};
use aqs_core::limits::{GIB, MIB};
use serde_json::{Value, json};
use sqlx::PgPool;

async fn create(app: &TestApp, session: &str, body: Value) -> super::support::Reply {
    app.post(session, "/api/v1/queues", body).await
}

#[sqlx::test(migrations = "../migrations")]
async fn a_new_queue_has_the_defaults_and_a_first_token(db: PgPool) {
    let app = spawn_app(db).await;
    let session = app.member("ada@example.com").await;
    let body = create(&app, &session, json!({"name": "  Image Jobs "})).await.expect(201);
    let queue = &body["queue"];
    assert_eq!(queue["name"], "Image Jobs");
    assert_eq!(queue["slug"], "image-jobs");
    assert_eq!(queue["address"], "http://127.0.0.1/queue/v1/image-jobs");
    assert_eq!(queue["visibility_timeout_seconds"], 30);
    assert_eq!(queue["max_attempts"], 5);
    assert_eq!(queue["payload_size"], MIB);
    assert_eq!(queue["storage_limit"], GIB);
    assert_eq!(queue["paused"], false);
    assert_eq!(queue["id"].as_str().unwrap().len(), 32);
    let created_at = queue["created_at"].as_str().unwrap();
    assert!(chrono::DateTime::parse_from_rfc3339(created_at).is_ok() && created_at.len() == 20, "{created_at}");

    let token = &body["token"];
    assert_eq!(token["scopes"], json!(["send", "consume", "manage"]));
    let secret = token["secret"].as_str().unwrap();
    assert!(aqs_core::token::TokenSecret::parse(secret).is_some(), "{secret}");
    assert_eq!(token["last_four"], &secret[secret.len() - 4..]);
    assert_eq!(token["revoked_at"], Value::Null);

    let read = app.get(&session, "/api/v1/queues/image-jobs").await.expect(200);
    assert_eq!(&read["queue"], queue);
    let list = app.get(&session, "/api/v1/queues").await.expect(200);
    assert_eq!(list["queues"], json!([queue]));
}

#[sqlx::test(migrations = "../migrations")]
async fn settings_are_checked_at_every_edge_on_create_and_update(db: PgPool) {
    let app = spawn_app(db).await;
    let session = app.member("ada@example.com").await;
    let target = app.queue(&session, "target").await;
    let path = format!("/api/v1/queues/{}", target["queue"]["slug"].as_str().unwrap());
    let cases: Vec<(&str, Value, bool)> = vec![
        ("visibility_timeout_seconds", json!(0), false),
        ("visibility_timeout_seconds", json!(1), true),
        ("visibility_timeout_seconds", json!(43200), true),
        ("visibility_timeout_seconds", json!(43201), false),
        ("max_attempts", json!(0), false),
        ("max_attempts", json!(1), true),
        ("max_attempts", json!(100), true),
        ("max_attempts", json!(101), false),
        ("payload_size", json!(MIB), true),
        ("payload_size", json!(10 * MIB), true),
        ("payload_size", json!(50 * MIB), true),
        ("payload_size", json!(2 * MIB), false),
        ("payload_size", json!(0), false),
        ("storage_limit", json!(MIB - 1), false),
        ("storage_limit", json!(MIB), true),
        ("storage_limit", json!(100 * GIB), true),
        ("storage_limit", json!(100 * GIB + 1), false),
        ("visibility_timeout_seconds", json!(-1), false),
    ];
    for (field, value, ok) in cases {
        let updated = app.patch(&session, &path, json!({ field: value })).await;
        if ok {
            assert_eq!(updated.expect(200)["queue"][field], value, "PATCH {field}={value}");
        } else {
            let body = updated.expect(400);
            assert_eq!(body["error"], "invalid_request", "{body}");
            let message = body["message"].as_str().unwrap();
            assert!(message.contains(field) || value.as_i64().unwrap_or(-1) < 0, "{field}={value}: {message}");
            // A value out of range is an error of its field, and the answer names it.
            if value.as_i64().unwrap_or(-1) >= 0 {
                assert_eq!(body["field"], field, "{body}");
            }
        }
        let created = create(&app, &session, json!({"name": "edge", field: value})).await;
        if ok {
            let body = created.expect(201);
            assert_eq!(body["queue"][field], value, "POST {field}={value}");
            let slug = body["queue"]["slug"].as_str().unwrap();
            app.delete(&session, &format!("/api/v1/queues/{slug}")).await.expect(204);
        } else {
            created.expect_error(400, "invalid_request");
        }
    }
    // A rejected PATCH changes nothing, not even the fields that were valid.
    let before = app.get(&session, &path).await.expect(200);
    app.patch(&session, &path, json!({"name": "renamed", "max_attempts": 0}))
        .await
        .expect_error(400, "invalid_request");
    assert_eq!(app.get(&session, &path).await.expect(200), before);
}

#[sqlx::test(migrations = "../migrations")]
async fn names_are_checked_and_renaming_keeps_the_slug(db: PgPool) {
    let app = spawn_app(db).await;
    let session = app.member("ada@example.com").await;
    for bad in [json!(""), json!("   "), json!("n".repeat(65)), json!("!!!"), json!("日本語")] {
        let message = create(&app, &session, json!({ "name": bad })).await.expect_error(400, "invalid_request");
        assert!(message.contains("name"), "{bad}: {message}");
    }
    create(&app, &session, json!({})).await.expect_error(400, "invalid_request");
    let long = app.queue(&session, &"n".repeat(64)).await;
    assert_eq!(long["queue"]["slug"], "n".repeat(48));

    app.queue(&session, "Orders").await;
    let renamed = app.patch(&session, "/api/v1/queues/orders", json!({"name": " New name "})).await.expect(200);
    assert_eq!(renamed["queue"]["name"], "New name");
    assert_eq!(renamed["queue"]["slug"], "orders");
    let message =
        app.patch(&session, "/api/v1/queues/orders", json!({"name": ""})).await.expect_error(400, "invalid_request");
    assert!(message.contains("name"));
}

#[sqlx::test(migrations = "../migrations")]
async fn slugs_are_unique_across_members_and_freed_by_delete(db: PgPool) {
    let app = spawn_app(db).await;
    let ada = app.member("ada@example.com").await;
    let bob = app.member("bob@example.com").await;
    let first = app.queue(&ada, "Image Jobs").await;
    assert_eq!(first["queue"]["slug"], "image-jobs");
    let second = app.queue(&bob, "image jobs!").await;
    let slug = second["queue"]["slug"].as_str().unwrap();
    let suffix = slug.strip_prefix("image-jobs-").unwrap_or_else(|| panic!("{slug}"));
    assert!(suffix.len() == 4 && suffix.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()), "{slug}");
    let third = app.queue(&ada, "IMAGE---JOBS").await;
    assert_ne!(third["queue"]["slug"], second["queue"]["slug"]);
    assert!(third["queue"]["slug"].as_str().unwrap().starts_with("image-jobs-"));

    let long = "x".repeat(60);
    app.queue(&ada, &long).await;
    let taken = app.queue(&bob, &long).await;
    assert_eq!(taken["queue"]["slug"].as_str().unwrap().len(), 48);

    app.delete(&ada, "/api/v1/queues/image-jobs").await.expect(204);
    let reused = app.queue(&bob, "Image Jobs").await;
    assert_eq!(reused["queue"]["slug"], "image-jobs");
}

#[sqlx::test(migrations = "../migrations")]
async fn the_eleventh_queue_is_refused_until_one_is_deleted(db: PgPool) {
    let app = spawn_app(db).await;
    let session = app.member("ada@example.com").await;
    for i in 0..10 {
        app.queue(&session, &format!("queue {i}")).await;
    }
    let message = create(&app, &session, json!({"name": "eleventh"})).await.expect_error(403, "queue_limit_reached");
    assert!(message.contains("10"), "{message}");
    // Another member has their own ten.
    let bob = app.member("bob@example.com").await;
    app.queue(&bob, "bobs").await;

    app.delete(&session, "/api/v1/queues/queue-3").await.expect(204);
    app.queue(&session, "eleventh").await;
    create(&app, &session, json!({"name": "twelfth"})).await.expect_error(403, "queue_limit_reached");
    assert_eq!(app.get(&session, "/api/v1/queues").await.expect(200)["queues"].as_array().unwrap().len(), 10);
}

#[sqlx::test(migrations = "../migrations")]
async fn concurrent_creates_never_exceed_the_limit(db: PgPool) {
    let app = spawn_app(db).await;
    let session = app.member("ada@example.com").await;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..16 {
        let request = app.client.post(format!("{}/api/v1/queues", app.base)).bearer_auth(&session);
        tasks.spawn(async move {
            let response = request.json(&json!({ "name": format!("race {i}") })).send().await.unwrap();
            response.status().as_u16()
        });
    }
    let mut statuses = tasks.join_all().await;
    statuses.sort();
    assert_eq!(statuses, [vec![201; 10], vec![403; 6]].concat());
}

#[sqlx::test(migrations = "../migrations")]
async fn pause_resume_and_delete(db: PgPool) {
    let app = spawn_app(db).await;
    let session = app.member("ada@example.com").await;
    app.queue(&session, "jobs").await;
    let paused = app.post(&session, "/api/v1/queues/jobs/pause", json!({})).await.expect(200);
    assert_eq!(paused["queue"]["paused"], true);
    assert_eq!(app.get(&session, "/api/v1/queues/jobs").await.expect(200)["queue"]["paused"], true);
    let resumed = app.call(reqwest::Method::POST, "/api/v1/queues/jobs/resume", Some(&session), None).await;
    assert_eq!(resumed.expect(200)["queue"]["paused"], false);

    app.delete(&session, "/api/v1/queues/jobs").await.expect(204);
    app.get(&session, "/api/v1/queues/jobs").await.expect_error(404, "not_found");
    app.delete(&session, "/api/v1/queues/jobs").await.expect_error(404, "not_found");
    app.post(&session, "/api/v1/queues/jobs/pause", json!({})).await.expect_error(404, "not_found");
    assert_eq!(app.get(&session, "/api/v1/queues").await.expect(200)["queues"], json!([]));
}

#[sqlx::test(migrations = "../migrations")]
async fn a_path_that_is_not_a_slug_is_not_found(db: PgPool) {
    let app = spawn_app(db).await;
    let session = app.member("ada@example.com").await;
    app.queue(&session, "jobs").await;
    for bad in ["JOBS", "jobs-", "-jobs", "jo--bs", "jo_bs", "jobs%20x", "%FF", &"j".repeat(49)] {
        app.get(&session, &format!("/api/v1/queues/{bad}")).await.expect_error(404, "not_found");
        app.patch(&session, &format!("/api/v1/queues/{bad}"), json!({})).await.expect_error(404, "not_found");
        app.delete(&session, &format!("/api/v1/queues/{bad}")).await.expect_error(404, "not_found");
        // The slug is parsed once, in the path: every route under it refuses the same way.
        app.get(&session, &format!("/api/v1/queues/{bad}/tokens")).await.expect_error(404, "not_found");
        app.get(&session, &format!("/api/v1/queues/{bad}/push")).await.expect_error(404, "not_found");
        app.post(&session, &format!("/api/v1/queues/{bad}/pause"), json!({})).await.expect_error(404, "not_found");
    }
}

/// A deleted queue's hosts go with it, in its transaction: none is listed afterwards, not even
/// under a new queue that takes the same slug.
#[sqlx::test(migrations = "../migrations")]
async fn deleting_a_queue_removes_its_hosts(db: PgPool) {
    let app = spawn_app(db.clone()).await;
    let ada = app.member("ada@example.com").await;
    app.queue(&ada, "jobs").await;
    app.queue(&ada, "other").await;
    app.post(&ada, "/api/v1/domains", json!({"name": "example.com"})).await.expect(201);
    // Verified by hand: the DNS check is not what this test is about.
    sqlx::query("UPDATE domains SET status = 'verified', verified_at = now()").execute(&db).await.unwrap();
    for (hostname, queue) in [("jobs.example.com", "jobs"), ("other.example.com", "other")] {
        let body = json!({"hostname": hostname, "queue": queue});
        app.post(&ada, "/api/v1/hosts", body).await.expect(201);
    }
    app.delete(&ada, "/api/v1/queues/jobs").await.expect(204);
    app.queue(&ada, "jobs").await;
    let listed = app.get(&ada, "/api/v1/hosts").await.expect(200);
    let names: Vec<&str> =
        listed["hosts"].as_array().unwrap().iter().map(|h| h["hostname"].as_str().unwrap()).collect();
    assert_eq!(names, ["other.example.com"], "{listed}");
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM hosts").fetch_one(&db).await.unwrap();
    assert_eq!(rows, 1);
}
