//! Operators suspend and unsuspend teams and change their limits: 404 to everyone else, a
//! suspended team's members read but change nothing, its keys are refused, its queues' meta
//! hashes carry the suspension (which the data plane reads, and which stops push), the start-up
//! re-sync keeps it, and every change is in the audit log.

use super::push_admin::{OPERATOR, app_with_operator, member_id};
use super::support::TestApp;
use aqs_core::ids::QueueId;
use aqs_core::projection::QueueMeta;
use aqs_core::token::{KEY_PREFIX, TokenSecret};
use aqs_engine::{ConsumeOutcome, NewMessage, PublishOutcome};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;

const REASON: &str = "unpaid invoice INV-7";

fn queue_id(body: &Value) -> QueueId {
    QueueId::parse(body["queue"]["id"].as_str().unwrap()).unwrap()
}

async fn meta(app: &TestApp, id: QueueId) -> QueueMeta {
    QueueMeta::from_fields(id, &app.hash(&app.keys.queue(id).meta()).await).expect("the queue's meta")
}

/// A management key of `team` with `role`, made as the keys route makes one; its secret.
async fn key(db: &PgPool, team: &str, role: &str) -> String {
    let secret = TokenSecret::generate_with(KEY_PREFIX);
    let team = uuid::Uuid::parse_str(team).unwrap();
    sqlx::query(
        "INSERT INTO management_keys (id, team_id, name, role, secret_hash, last_four, created_by)
         VALUES ($1, $2, 'ci', $3, $4, $5, $2)",
    )
    .bind(uuid::Uuid::new_v4())
    .bind(team)
    .bind(role)
    .bind(secret.hash())
    .bind(secret.last_four())
    .execute(db)
    .await
    .unwrap();
    secret.expose().to_owned()
}

async fn actions(db: &PgPool, team: &str) -> Vec<(String, String, Option<String>)> {
    sqlx::query_as(
        "SELECT action, actor_kind, actor_email FROM audit_events
         WHERE team_id = $1 AND actor_kind = 'operator' ORDER BY at, id",
    )
    .bind(uuid::Uuid::parse_str(team).unwrap())
    .fetch_all(db)
    .await
    .unwrap()
}

#[sqlx::test(migrations = "../migrations")]
async fn team_routes_are_404_to_everyone_but_operators(db: PgPool) {
    let (app, operator) = app_with_operator(db).await;
    let ada = app.member("ada@example.com").await;
    let team = member_id(&app, &ada).await;
    let base = format!("/api/v1/admin/teams/{team}");
    for session in [Some(ada.as_str()), None, Some("not-a-session")] {
        for (method, path, body) in [
            (Method::GET, "/api/v1/admin/teams?email=ada@example.com".to_owned(), None),
            (Method::GET, base.clone(), None),
            (Method::POST, format!("{base}/suspend"), Some(json!({"reason": "no"}))),
            (Method::POST, format!("{base}/unsuspend"), Some(json!({}))),
            (Method::PATCH, format!("{base}/limits"), Some(json!({"max_queues": 20}))),
        ] {
            app.call(method, &path, session, body).await.expect_error(404, "not_found");
        }
    }
    assert!(app.get(&ada, "/api/v1/queues").await.expect(200)["queues"].is_array(), "nothing changed");
    // The operator finds the team by its member's email, in any letter case, and reads it.
    let found = app.get(&operator, "/api/v1/admin/teams?email=ADA@example.com").await.expect(200);
    assert_eq!(found["teams"].as_array().unwrap().len(), 1, "{found}");
    assert_eq!(found["teams"][0]["id"], team.as_str());
    assert_eq!(found["teams"][0]["suspended_reason"], Value::Null);
    assert_eq!(
        (found["teams"][0]["max_queues"].as_i64(), found["teams"][0]["member_count"].as_i64()),
        (Some(10), Some(1))
    );
    let recent = app.get(&operator, "/api/v1/admin/teams").await.expect(200);
    assert!(recent["teams"].as_array().unwrap().iter().any(|t| t["id"] == team.as_str()), "{recent}");
    assert_eq!(
        app.get(&operator, "/api/v1/admin/teams?email=nobody@example.com").await.expect(200)["teams"],
        json!([])
    );
    let detail = app.get(&operator, &base).await.expect(200);
    assert_eq!(detail["team"]["members"][0]["email"], "ada@example.com");
    assert_eq!(detail["team"]["members"][0]["role"], "owner");
    let unknown = format!("/api/v1/admin/teams/{}", uuid::Uuid::new_v4());
    app.get(&operator, &unknown).await.expect_error(404, "not_found");
    app.get(&operator, "/api/v1/admin/teams/not-an-id").await.expect_error(404, "not_found");
    app.post(&operator, &format!("{unknown}/suspend"), json!({"reason": "x"})).await.expect_error(404, "not_found");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_suspended_team_reads_but_changes_nothing_until_unsuspended(db: PgPool) {
    let (app, operator) = app_with_operator(db.clone()).await;
    let ada = app.member("ada@example.com").await;
    let team = member_id(&app, &ada).await;
    let created = app.queue(&ada, "Jobs").await;
    let queue = queue_id(&created);
    let admin_key = key(&db, &team, "admin").await;
    let base = format!("/api/v1/admin/teams/{team}");

    for (bad, field) in [(json!({"reason": ""}), "reason"), (json!({"reason": "a\nb"}), "reason")] {
        let message = app.post(&operator, &format!("{base}/suspend"), bad).await.expect_error(400, "invalid_request");
        assert!(message.starts_with(field), "{message}");
    }
    let long = "x".repeat(501);
    app.post(&operator, &format!("{base}/suspend"), json!({"reason": long})).await.expect_error(400, "invalid_request");
    app.post(&operator, &format!("{base}/unsuspend"), json!({})).await.expect_error(409, "conflict");

    let suspended = app.post(&operator, &format!("{base}/suspend"), json!({"reason": REASON})).await.expect(200);
    assert_eq!(suspended["team"]["suspended_reason"], REASON);
    assert!(suspended["team"]["suspended_at"].is_string());
    let again = app.post(&operator, &format!("{base}/suspend"), json!({"reason": "other"})).await;
    assert!(again.expect_error(409, "conflict").contains(REASON));

    // Members read; every change is refused with the reason.
    assert_eq!(app.get(&ada, "/api/v1/queues/jobs").await.expect(200)["queue"]["id"], queue.to_string());
    app.get(&ada, "/api/v1/auth/me").await.expect(200);
    for reply in [
        app.post(&ada, "/api/v1/queues", json!({"name": "More"})).await,
        app.patch(&ada, "/api/v1/queues/jobs", json!({"max_attempts": 7})).await,
        app.delete(&ada, "/api/v1/queues/jobs").await,
    ] {
        assert!(reply.expect_error(403, "team_suspended").contains(REASON));
    }
    // The team's key is refused even to read.
    let message = app.get(&admin_key, "/api/v1/queues").await.expect_error(403, "team_suspended");
    assert!(message.contains(REASON), "{message}");

    // The data plane reads the suspension from the queue's meta; push (the engine's consume)
    // leases nothing while it lasts.
    assert_eq!(meta(&app, queue).await.suspended.as_deref(), Some(REASON));
    let engine = app.cp.engine();
    let now = aqs_core::time::now_ms();
    assert!(matches!(engine.publish(queue, &[NewMessage::text("hi")], now).await.unwrap(), PublishOutcome::Stored(_)));
    assert!(matches!(engine.consume(queue, 1, 30_000, now, 0).await.unwrap(), ConsumeOutcome::Paused));

    let lifted = app.post(&operator, &format!("{base}/unsuspend"), json!({})).await.expect(200);
    assert_eq!(lifted["team"]["suspended_reason"], Value::Null);
    assert_eq!(meta(&app, queue).await.suspended, None);
    assert!(matches!(engine.consume(queue, 1, 30_000, now, 0).await.unwrap(), ConsumeOutcome::Delivered { .. }));
    app.patch(&ada, "/api/v1/queues/jobs", json!({"max_attempts": 7})).await.expect(200);
    app.get(&admin_key, "/api/v1/queues").await.expect(200);

    let logged = actions(&db, &team).await;
    let expected = [("team.suspended", "operator"), ("team.unsuspended", "operator")];
    let got: Vec<(&str, &str)> = logged.iter().map(|(a, k, _)| (a.as_str(), k.as_str())).collect();
    assert_eq!(got, expected);
    assert!(logged.iter().all(|(_, _, email)| email.as_deref() == Some(OPERATOR)));
}

#[sqlx::test(migrations = "../migrations")]
async fn a_settings_change_keeps_the_suspension_and_resync_keeps_it_too(db: PgPool) {
    let (app, operator) = app_with_operator(db).await;
    let ada = app.member("ada@example.com").await;
    let team = member_id(&app, &ada).await;
    let queue = queue_id(&app.queue(&ada, "Jobs").await);
    let other = queue_id(&app.queue(&app.member("bob@example.com").await, "Other").await);
    app.post(&operator, &format!("/api/v1/admin/teams/{team}/suspend"), json!({"reason": REASON})).await.expect(200);

    // A settings write of the queue (as one in flight when the team was suspended) keeps it.
    let mut changed = meta(&app, queue).await;
    changed.revision += 1;
    changed.max_attempts = 9;
    aqs_control_plane::projection::update_queue(&mut app.redis.clone(), &app.keys, &changed).await.unwrap();
    assert_eq!(meta(&app, queue).await.suspended.as_deref(), Some(REASON));

    // The re-sync rewrites every meta from PostgreSQL and keeps the suspension; a field left on
    // a queue whose team is not suspended is cleared.
    let stray = app.keys.queue(other).meta();
    let _: () = redis::AsyncCommands::hset(&mut app.redis.clone(), &stray, "suspended", "stale").await.unwrap();
    let _: () = redis::AsyncCommands::del(&mut app.redis.clone(), app.keys.queue(queue).meta()).await.unwrap();
    app.cp.resync_projection().await.unwrap();
    assert_eq!(meta(&app, queue).await.suspended.as_deref(), Some(REASON));
    assert_eq!(meta(&app, other).await.suspended, None);

    app.post(&operator, &format!("/api/v1/admin/teams/{team}/unsuspend"), json!({})).await.expect(200);
    app.cp.resync_projection().await.unwrap();
    assert_eq!(meta(&app, queue).await.suspended, None);
}

#[sqlx::test(migrations = "../migrations")]
async fn operators_raise_and_bound_a_teams_limits(db: PgPool) {
    let (app, operator) = app_with_operator(db.clone()).await;
    let ada = app.member("ada@example.com").await;
    let team = member_id(&app, &ada).await;
    let limits = format!("/api/v1/admin/teams/{team}/limits");
    for name in 0..10 {
        app.queue(&ada, &format!("q{name}")).await;
    }
    app.post(&ada, "/api/v1/queues", json!({"name": "q10"})).await.expect_error(403, "queue_limit_reached");

    for (bad, field) in [
        (json!({"max_queues": 0}), "max_queues"),
        (json!({"max_queues": 10001}), "max_queues"),
        (json!({"max_storage_bytes": 1048575}), "max_storage_bytes"),
        (json!({"max_storage_bytes": 1099511627777u64}), "max_storage_bytes"),
    ] {
        let message = app.patch(&operator, &limits, bad).await.expect_error(400, "invalid_request");
        assert!(message.starts_with(field), "{message}");
    }
    app.patch(&operator, &limits, json!({})).await.expect_error(400, "invalid_request");
    app.patch(&operator, &limits, json!({"max_queues": 5, "other": 1})).await.expect_error(400, "invalid_request");

    let raised = app.patch(&operator, &limits, json!({"max_queues": 11})).await.expect(200);
    assert_eq!(raised["team"]["max_queues"], 11);
    assert_eq!(raised["team"]["queue_count"], 10);
    app.queue(&ada, "q10").await;
    app.post(&ada, "/api/v1/queues", json!({"name": "q11"})).await.expect_error(403, "queue_limit_reached");

    // Eleven queues of 1 GiB each: a 12 GiB bound leaves 1 GiB for growth.
    let gib: u64 = 1 << 30;
    let bounded = app.patch(&operator, &limits, json!({"max_storage_bytes": 12 * gib, "max_queues": 20})).await;
    assert_eq!(bounded.expect(200)["team"]["max_storage_bytes"], 12 * gib);
    app.patch(&ada, "/api/v1/queues/q0", json!({"storage_limit": 2 * gib})).await.expect(200);
    let message = app.patch(&ada, "/api/v1/queues/q1", json!({"storage_limit": 2 * gib})).await;
    let message = message.expect_error(400, "invalid_request");
    assert!(message.starts_with("storage_limit") && message.contains(&(12 * gib).to_string()), "{message}");
    app.post(&ada, "/api/v1/queues", json!({"name": "q11"})).await.expect_error(400, "invalid_request");
    // Lowering is always allowed; so is a queue that fits.
    app.patch(&ada, "/api/v1/queues/q0", json!({"storage_limit": gib})).await.expect(200);
    app.post(&ada, "/api/v1/queues", json!({"name": "q11", "storage_limit": gib})).await.expect(201);

    // null clears the bound.
    let cleared = app.patch(&operator, &limits, json!({"max_storage_bytes": null})).await.expect(200);
    assert_eq!(cleared["team"]["max_storage_bytes"], Value::Null);
    assert_eq!(cleared["team"]["max_queues"], 20, "an absent field is left as it was");
    app.patch(&ada, "/api/v1/queues/q1", json!({"storage_limit": 2 * gib})).await.expect(200);

    let logged: Vec<String> = actions(&db, &team).await.into_iter().map(|(action, ..)| action).collect();
    assert_eq!(logged, ["team.limits_changed"; 3]);
}
