//! Push settings: `PUT/GET/DELETE /api/v1/queues/{slug}/push`, the signing secret and its
//! rotation, the URL rules (with the private-network setting off), the projection into Redis and
//! its re-sync, and the delivery log.

use super::push_admin::{app_with_operator, authorise};
use super::support::{TestApp, spawn_app_with};
use aqs_control_plane::projection::{self, ProjectedPush};
use aqs_core::ids::QueueId;
use aqs_core::projection::{PushMode, PushRecord};
use aqs_core::time::now_ms;
use redis::AsyncCommands;
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;

async fn put(app: &TestApp, session: &str, slug: &str, body: Value) -> super::support::Reply {
    app.call(Method::PUT, &format!("/api/v1/queues/{slug}/push"), Some(session), Some(body)).await
}

async fn record(app: &TestApp, id: QueueId) -> Option<PushRecord> {
    PushRecord::from_fields(&app.hash(&app.keys.queue(id).push()).await)
}

async fn pushed_ids(app: &TestApp) -> Vec<String> {
    app.redis.clone().smembers(app.keys.push_queues()).await.unwrap()
}

fn queue_id(created: &Value) -> QueueId {
    QueueId::parse(created["queue"]["id"].as_str().unwrap()).unwrap()
}

/// Ada, whom the operator allowed to push under http://localhost:9/, with her session and her
/// queue `jobs`.
async fn ada_with_jobs(db: PgPool) -> (TestApp, String, QueueId) {
    let (app, operator) = app_with_operator(db).await;
    let ada = app.member("ada@example.com").await;
    authorise(&app, &operator, &ada, "http://localhost:9/").await;
    let id = queue_id(&app.queue(&ada, "jobs").await);
    (app, ada, id)
}

#[sqlx::test(migrations = "../migrations")]
async fn set_read_change_and_stop_push(db: PgPool) {
    let (app, operator) = app_with_operator(db).await;
    let ada = app.member("ada@example.com").await;
    authorise(&app, &operator, &ada, "http://localhost:9/hooks/").await;
    let created = app.queue(&ada, "emails").await;
    let id = queue_id(&created);
    app.get(&ada, "/api/v1/queues/emails/push").await.expect_error(404, "not_found");

    let set = put(&app, &ada, "emails", json!({"handler_url": "http://localhost:9/hooks/emails"})).await.expect(201);
    let secret = set["signing_secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"));
    let expected = json!({
        "handler_url": "http://localhost:9/hooks/emails", "mode": "message", "messages_per_run": null,
        "wait_seconds": null, "timeout_seconds": 30, "concurrency": 10, "previous_secret_expires_at": null,
    });
    for (key, value) in expected.as_object().unwrap() {
        assert_eq!(&set["push"][key], value, "{key}");
    }
    let read = app.get(&ada, "/api/v1/queues/emails/push").await.expect(200);
    assert_eq!(read["push"], set["push"]);
    assert!(!read.to_string().contains(&secret), "the secret is shown once");

    let projected = record(&app, id).await.expect("push record projected");
    assert_eq!(projected.queue, "emails");
    assert_eq!(projected.handler_url, "http://localhost:9/hooks/emails");
    assert_eq!(projected.secret.expose(), secret);
    assert_eq!(pushed_ids(&app).await, vec![id.to_string()]);

    // Changing it keeps the secret and shows none.
    let changed = put(
        &app,
        &ada,
        "emails",
        json!({"handler_url": "http://localhost:9/hooks/b", "mode": "batch", "messages_per_run": 50,
               "wait_seconds": 2, "timeout_seconds": 120, "concurrency": 3}),
    )
    .await
    .expect(200);
    assert!(changed.get("signing_secret").is_none());
    assert_eq!(changed["push"]["messages_per_run"], 50);
    let projected = record(&app, id).await.unwrap();
    assert_eq!(
        (
            projected.mode,
            projected.messages_per_run,
            projected.wait_seconds,
            projected.timeout_seconds,
            projected.concurrency
        ),
        (PushMode::Batch, 50, 2, 120, 3)
    );
    assert_eq!(projected.secret.expose(), secret);

    app.delete(&ada, "/api/v1/queues/emails/push").await.expect(204);
    assert_eq!(record(&app, id).await, None);
    assert!(pushed_ids(&app).await.is_empty());
    app.get(&ada, "/api/v1/queues/emails/push").await.expect_error(404, "not_found");
    app.delete(&ada, "/api/v1/queues/emails/push").await.expect_error(404, "not_found");

    // Another member cannot see or set it.
    let bob = app.member("bob@example.com").await;
    app.get(&bob, "/api/v1/queues/emails/push").await.expect_error(404, "not_found");
    put(&app, &bob, "emails", json!({"handler_url": "http://localhost:9/hooks/x"}))
        .await
        .expect_error(404, "not_found");
}

#[sqlx::test(migrations = "../migrations")]
async fn the_timeout_defaults_to_the_visibility_timeout_clamped(db: PgPool) {
    let (app, operator) = app_with_operator(db).await;
    let ada = app.member("ada@example.com").await;
    authorise(&app, &operator, &ada, "http://localhost:9/").await;
    for (visibility, timeout) in [(5, 30), (120, 120), (3600, 900)] {
        let name = format!("q{visibility}");
        app.post(&ada, "/api/v1/queues", json!({"name": name, "visibility_timeout_seconds": visibility}))
            .await
            .expect(201);
        let set = put(&app, &ada, &name, json!({"handler_url": "http://localhost:9/x"})).await.expect(201);
        assert_eq!(set["push"]["timeout_seconds"], timeout, "visibility {visibility}");
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn each_broken_rule_is_a_400_that_names_it(db: PgPool) {
    let app = spawn_app_with(db, |c| {
        c.operator_emails = vec![super::push_admin::OPERATOR.into()];
        c.push_allow_private_networks = false;
    })
    .await;
    let operator = app.member(super::push_admin::OPERATOR).await;
    let ada = app.member("ada@example.com").await;
    for prefix in ["http://localhost/", "https://app.example.com/"] {
        authorise(&app, &operator, &ada, prefix).await;
    }
    app.queue(&ada, "jobs").await;
    let rejects = |url: &'static str, rule: &'static str| (json!({ "handler_url": url }), rule);
    let cases = [
        // The push spec asks for a domain name: no IP literal, public or not.
        rejects("http://127.0.0.1/hook", "must be a domain name, not an IP address (127.0.0.1)"),
        rejects("http://10.1.2.3/hook", "must be a domain name"),
        rejects("http://169.254.169.254/latest/meta-data", "must be a domain name"),
        rejects("http://93.184.216.34/hook", "must be a domain name"),
        rejects("http://[::1]/hook", "must be a domain name"),
        rejects("http://[::ffff:127.0.0.1]/hook", "must be a domain name"),
        rejects("http://localhost/hook", "loopback"),
        rejects("https://elsewhere.example.net/hook", "not among the callback URLs authorised"),
        rejects("https://user:pw@app.example.com/hook", "credentials"),
        rejects("https://app.example.com/hook#frag", "fragment"),
        rejects("ftp://app.example.com/hook", "scheme"),
        (json!({"handler_url": "https://app.example.com/h", "mode": "stream"}), "mode"),
        (json!({"handler_url": "https://app.example.com/h", "messages_per_run": 5}), "batch mode only"),
        (
            json!({"handler_url": "https://app.example.com/h", "mode": "batch", "messages_per_run": 0}),
            "messages_per_run",
        ),
        (
            json!({"handler_url": "https://app.example.com/h", "mode": "batch", "messages_per_run": 101}),
            "messages_per_run",
        ),
        (json!({"handler_url": "https://app.example.com/h", "mode": "batch", "wait_seconds": 61}), "wait_seconds"),
        (json!({"handler_url": "https://app.example.com/h", "timeout_seconds": 29}), "timeout_seconds"),
        (json!({"handler_url": "https://app.example.com/h", "timeout_seconds": 901}), "timeout_seconds"),
        (json!({"handler_url": "https://app.example.com/h", "concurrency": 0}), "concurrency"),
        (json!({"handler_url": "https://app.example.com/h", "concurrency": 101}), "concurrency"),
    ];
    for (body, rule) in cases {
        let message = put(&app, &ada, "jobs", body.clone()).await.expect_error(400, "invalid_request");
        assert!(message.contains(rule), "{body}: {message}");
    }
    app.get(&ada, "/api/v1/queues/jobs/push").await.expect_error(404, "not_found");
}

#[sqlx::test(migrations = "../migrations")]
async fn rotating_the_secret_shows_the_new_one_once_and_keeps_the_old_for_24_hours(db: PgPool) {
    let (app, ada, id) = ada_with_jobs(db).await;
    app.post(&ada, "/api/v1/queues/jobs/push/rotate-secret", json!({})).await.expect_error(404, "not_found");
    let first = put(&app, &ada, "jobs", json!({"handler_url": "http://localhost:9/x"})).await.expect(201);
    let old = first["signing_secret"].as_str().unwrap().to_owned();
    let rotated = app.post(&ada, "/api/v1/queues/jobs/push/rotate-secret", json!({})).await.expect(200);
    let new = rotated["signing_secret"].as_str().unwrap().to_owned();
    assert!(new.starts_with("whsec_") && new != old);
    assert!(rotated["push"]["previous_secret_expires_at"].is_string());
    let projected = record(&app, id).await.unwrap();
    assert_eq!(projected.secret.expose(), new);
    assert_eq!(projected.previous_secret.as_ref().map(|s| s.expose().to_owned()), Some(old));
    let window = projected.previous_until_ms.saturating_sub(now_ms());
    assert!(window > 23 * 3600 * 1000 && window <= 24 * 3600 * 1000, "{window}");
    let read = app.get(&ada, "/api/v1/queues/jobs/push").await.expect(200);
    assert!(!read.to_string().contains("whsec_"));
}

#[sqlx::test(migrations = "../migrations")]
async fn push_is_refused_while_pull_consumers_hold_live_leases(db: PgPool) {
    let (app, ada, id) = ada_with_jobs(db).await;
    let q = app.keys.queue(id);
    let mut conn = app.redis.clone();
    let _: () = conn.zadd(q.lease(), "1-0", now_ms() + 60_000).await.unwrap();
    let message =
        put(&app, &ada, "jobs", json!({"handler_url": "http://localhost:9/x"})).await.expect_error(409, "conflict");
    assert!(message.contains("live lease"), "{message}");
    // A lease a nack released is not held by anyone; an expired lease neither.
    let _: () = conn.zadd(q.backoff(), "1-0", now_ms() + 60_000).await.unwrap();
    let _: () = conn.zadd(q.lease(), "2-0", now_ms() - 1000).await.unwrap();
    put(&app, &ada, "jobs", json!({"handler_url": "http://localhost:9/x"})).await.expect(201);
}

#[sqlx::test(migrations = "../migrations")]
async fn the_delivery_log_is_readable(db: PgPool) {
    let (app, _operator) = app_with_operator(db).await;
    let ada = app.member("ada@example.com").await;
    let id = queue_id(&app.queue(&ada, "jobs").await);
    assert_eq!(app.get(&ada, "/api/v1/queues/jobs/push/deliveries").await.expect(200)["deliveries"], json!([]));
    let entry = aqs_core::push::DeliveryRecord {
        v: 1,
        at_ms: 1_793_707_200_000,
        message_id: "9c1f0a2b4d5e4f6a8b7c9d0e1f2a3b4c".into(),
        messages: 1,
        status: Some(503),
        latency_ms: 42,
        outcome: aqs_core::push::DeliveryOutcome::Retried,
        detail: "handler answered 503".into(),
        handler_url: "https://app.example.com/old".into(),
    };
    let _: () =
        app.redis.clone().lpush(app.keys.queue(id).push_log(), serde_json::to_string(&entry).unwrap()).await.unwrap();
    let log = app.get(&ada, "/api/v1/queues/jobs/push/deliveries").await.expect(200);
    assert_eq!(
        log["deliveries"][0],
        json!({"at": "2026-11-03T12:00:00Z", "message_id": "9c1f0a2b4d5e4f6a8b7c9d0e1f2a3b4c", "messages": 1,
               "status": 503, "latency_ms": 42, "outcome": "retried", "detail": "handler answered 503",
               "handler_url": "https://app.example.com/old"})
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn resync_restores_push_records_and_removes_stale_ones_and_deleting_a_queue_clears_push(db: PgPool) {
    let (app, operator) = app_with_operator(db).await;
    let ada = app.member("ada@example.com").await;
    authorise(&app, &operator, &ada, "http://localhost:9/").await;
    let jobs = queue_id(&app.queue(&ada, "jobs").await);
    let mail = queue_id(&app.queue(&ada, "mail").await);
    put(&app, &ada, "jobs", json!({"handler_url": "http://localhost:9/x"})).await.expect(201);
    let before = record(&app, jobs).await.unwrap();
    // Redis forgets the target; a stale one appears for a queue without push.
    let mut conn = app.redis.clone();
    let _: () = conn.del(app.keys.queue(jobs).push()).await.unwrap();
    let _: () = conn.del(app.keys.push_queues()).await.unwrap();
    let _: () = conn.hset_multiple(app.keys.queue(mail).push(), &before.to_fields()).await.unwrap();
    app.cp.resync_projection().await.unwrap();
    assert_eq!(record(&app, jobs).await, Some(before));
    assert_eq!(record(&app, mail).await, None, "stale record removed");
    assert_eq!(pushed_ids(&app).await, vec![jobs.to_string()]);

    app.delete(&ada, "/api/v1/queues/jobs").await.expect(204);
    assert!(pushed_ids(&app).await.is_empty());
    assert_eq!(record(&app, jobs).await, None);
}

/// The queue revision the last push change written to Redis carried.
async fn push_revision(app: &TestApp, id: QueueId) -> u64 {
    app.hash(&app.keys.queue(id).meta()).await["push_rev"].parse().unwrap()
}

/// What a replica that answered the first change would write late, after the later changes.
async fn late_write(app: &TestApp, id: QueueId) -> ProjectedPush {
    ProjectedPush { id, record: record(app, id).await.unwrap(), revision: push_revision(app, id).await }
}

/// Push changes answered by different replicas at once can reach Redis in the opposite order to
/// their commits: a set or rotation landing last must not undo a later stop, rotation or delete.
#[sqlx::test(migrations = "../migrations")]
async fn a_late_push_write_does_not_undo_a_later_change(db: PgPool) {
    let (app, ada, id) = ada_with_jobs(db).await;
    let mut conn = app.redis.clone();

    put(&app, &ada, "jobs", json!({"handler_url": "http://localhost:9/x"})).await.expect(201);
    let set = late_write(&app, id).await;
    app.delete(&ada, "/api/v1/queues/jobs/push").await.expect(204);
    projection::put_push(&mut conn, &app.keys, &set).await.unwrap();
    assert_eq!(record(&app, id).await, None, "a late set turned push back on after the stop");
    assert!(pushed_ids(&app).await.is_empty());

    put(&app, &ada, "jobs", json!({"handler_url": "http://localhost:9/x"})).await.expect(201);
    let first_secret = late_write(&app, id).await;
    let rotated = app.post(&ada, "/api/v1/queues/jobs/push/rotate-secret", json!({})).await.expect(200);
    projection::put_push(&mut conn, &app.keys, &first_secret).await.unwrap();
    assert_eq!(record(&app, id).await.unwrap().secret.expose(), rotated["signing_secret"].as_str().unwrap());

    let current = late_write(&app, id).await;
    app.delete(&ada, "/api/v1/queues/jobs").await.expect(204);
    projection::put_push(&mut conn, &app.keys, &current).await.unwrap();
    assert_eq!(record(&app, id).await, None, "a late set brought push back on a deleted queue");
    assert!(pushed_ids(&app).await.is_empty());
}

/// A stop that committed before a new set but reaches Redis after it must not stop the new push.
#[sqlx::test(migrations = "../migrations")]
async fn a_late_stop_does_not_undo_a_later_set(db: PgPool) {
    let (app, ada, id) = ada_with_jobs(db).await;
    put(&app, &ada, "jobs", json!({"handler_url": "http://localhost:9/x"})).await.expect(201);
    app.delete(&ada, "/api/v1/queues/jobs/push").await.expect(204);
    let stop = push_revision(&app, id).await;
    put(&app, &ada, "jobs", json!({"handler_url": "http://localhost:9/y"})).await.expect(201);

    projection::remove_push(&mut app.redis.clone(), &app.keys, id, Some(stop)).await.unwrap();

    assert_eq!(record(&app, id).await.expect("the later set's record").handler_url, "http://localhost:9/y");
    assert_eq!(pushed_ids(&app).await, vec![id.to_string()]);
}
