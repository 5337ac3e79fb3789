//! The Redis projection after every kind of change, and the start-up re-sync.

use super::support::{TestApp, spawn_app};
use aqs_control_plane::projection;
use aqs_core::ids::QueueId;
use aqs_core::projection::{QueueMeta, TokenRecord};
use aqs_core::receipt::Receipt;
use aqs_core::token::{Scope, TokenSecret};
use aqs_engine::{ConsumeOutcome, NewMessage, PublishOutcome};
use redis::AsyncCommands;
use serde_json::{Value, json};
use sqlx::PgPool;

fn queue_id(body: &Value) -> QueueId {
    QueueId::parse(body["queue"]["id"].as_str().unwrap()).unwrap()
}

async fn meta(app: &TestApp, id: QueueId) -> Option<QueueMeta> {
    QueueMeta::from_fields(id, &app.hash(&app.keys.queue(id).meta()).await)
}

async fn token_record(app: &TestApp, secret: &str) -> Option<TokenRecord> {
    let hash = TokenSecret::parse(secret).unwrap().hash();
    TokenRecord::from_fields(&app.hash(&app.keys.token(&hash)).await)
}

fn secret(token: &Value) -> &str {
    token["secret"].as_str().unwrap()
}

#[sqlx::test(migrations = "../migrations")]
async fn every_change_is_projected(db: PgPool) {
    let app = spawn_app(db).await;
    let session = app.member("ada@example.com").await;

    // create
    let created = app.queue(&session, "Jobs").await;
    let id = queue_id(&created);
    let expected = QueueMeta {
        id,
        slug: "jobs".into(),
        paused: false,
        visibility_ms: 30_000,
        max_attempts: 5,
        payload_limit: 1 << 20,
        storage_limit: 1 << 30,
        revision: 1,
        suspended: None,
    };
    assert_eq!(meta(&app, id).await, Some(expected.clone()));
    assert_eq!(app.string(&app.keys.slug("jobs")).await, Some(id.to_string()));
    assert_eq!(app.live_queue_ids().await, vec![id.to_string()]);
    let first = token_record(&app, secret(&created["token"])).await.expect("first token projected");
    assert_eq!(first.queue, id);
    assert_eq!(first.scopes, Scope::ALL.to_vec());
    assert_eq!(first.token_id.to_string(), created["token"]["id"].as_str().unwrap());

    // patch
    let changes = json!({"visibility_timeout_seconds": 90, "max_attempts": 9, "payload_size": 10 << 20, "storage_limit": 2u64 << 30});
    app.patch(&session, "/api/v1/queues/jobs", changes).await.expect(200);
    let patched = QueueMeta {
        visibility_ms: 90_000,
        max_attempts: 9,
        payload_limit: 10 << 20,
        storage_limit: 2 << 30,
        revision: 2,
        ..expected.clone()
    };
    assert_eq!(meta(&app, id).await, Some(patched.clone()));

    // pause, resume: each change is a new revision
    app.post(&session, "/api/v1/queues/jobs/pause", json!({})).await.expect(200);
    assert_eq!(meta(&app, id).await, Some(QueueMeta { paused: true, revision: 3, ..patched.clone() }));
    app.post(&session, "/api/v1/queues/jobs/resume", json!({})).await.expect(200);
    assert_eq!(meta(&app, id).await, Some(QueueMeta { revision: 4, ..patched.clone() }));

    // mint, revoke
    let minted = app.post(&session, "/api/v1/queues/jobs/tokens", json!({"name": "w", "scopes": ["send"]})).await;
    let minted = minted.expect(201)["token"].clone();
    let record = token_record(&app, secret(&minted)).await.expect("minted token projected");
    assert_eq!((record.queue, record.scopes.clone()), (id, vec![Scope::Send]));
    app.delete(&session, &format!("/api/v1/queues/jobs/tokens/{}", minted["id"].as_str().unwrap())).await.expect(204);
    assert_eq!(token_record(&app, secret(&minted)).await, None);
    assert!(token_record(&app, secret(&created["token"])).await.is_some(), "other tokens stay");

    // delete: every key of the queue goes, including everything the data plane wrote.
    store_everything(&app, id).await;
    let other = app.queue(&session, "other").await;
    app.delete(&session, "/api/v1/queues/jobs").await.expect(204);
    assert_eq!(app.string(&app.keys.slug("jobs")).await, None);
    assert_eq!(token_record(&app, secret(&created["token"])).await, None);
    assert_eq!(app.live_queue_ids().await, vec![queue_id(&other).to_string()]);
    // The tombstone stays a day on purpose (late projection writes must find it).
    assert_eq!(keys_of(&app, id).await, vec![app.keys.deleted_queue(id)], "keys of the deleted queue remain");
    assert!(meta(&app, queue_id(&other)).await.is_some(), "other queues stay");
}

#[sqlx::test(migrations = "../migrations")]
async fn deleting_a_queue_keeps_a_slug_a_newer_queue_took(db: PgPool) {
    let app = spawn_app(db.clone()).await;
    let session = app.member("ada@example.com").await;
    let old = app.queue(&session, "jobs").await;
    // Simulate an interleaving: the slug record already names a newer queue when the delete lands.
    let newer = QueueId::new();
    let _: () = app.redis.clone().set(app.keys.slug("jobs"), newer.to_string()).await.unwrap();
    app.delete(&session, "/api/v1/queues/jobs").await.expect(204);
    assert_eq!(app.string(&app.keys.slug("jobs")).await, Some(newer.to_string()));
    assert_eq!(meta(&app, queue_id(&old)).await, None);
}

/// A mint's projection write that lands after the token's revocation (the revoker found the new
/// token in the listing while the mint's request was still writing Redis) must not make the
/// revoked token valid again.
#[sqlx::test(migrations = "../migrations")]
async fn a_late_token_write_does_not_undo_its_revocation(db: PgPool) {
    let app = spawn_app(db).await;
    let session = app.member("ada@example.com").await;
    app.queue(&session, "jobs").await;
    let minted = app.post(&session, "/api/v1/queues/jobs/tokens", json!({"name": "w", "scopes": ["send"]})).await;
    let minted = minted.expect(201)["token"].clone();
    let hash = TokenSecret::parse(secret(&minted)).unwrap().hash();
    let late = projection::ProjectedToken { hash, record: token_record(&app, secret(&minted)).await.unwrap() };
    app.delete(&session, &format!("/api/v1/queues/jobs/tokens/{}", minted["id"].as_str().unwrap())).await.expect(204);

    projection::put_token(&mut app.redis.clone(), &app.keys, &late).await.unwrap();

    assert_eq!(token_record(&app, secret(&minted)).await, None, "the revoked token is valid again");
}

/// Two changes answered by different replicas at once can reach Redis in the opposite order to
/// their commits: the earlier one, landing last, must not undo the later one.
#[sqlx::test(migrations = "../migrations")]
async fn a_late_meta_write_does_not_undo_a_later_change(db: PgPool) {
    let app = spawn_app(db).await;
    let session = app.member("ada@example.com").await;
    let id = queue_id(&app.queue(&session, "jobs").await);
    let before_pause = meta(&app, id).await.unwrap();
    app.post(&session, "/api/v1/queues/jobs/pause", json!({})).await.expect(200);

    projection::update_queue(&mut app.redis.clone(), &app.keys, &before_pause).await.unwrap();

    let now = meta(&app, id).await.unwrap();
    assert!(now.paused, "the late write of revision 1 resumed the queue paused in revision 2");
    assert_eq!(now.revision, 2);
}

/// A change that committed before the queue's delete but reaches Redis after it must not bring the
/// deleted queue's meta back, nor its entry in the set of live queues.
#[sqlx::test(migrations = "../migrations")]
async fn a_meta_write_landing_after_the_delete_leaves_nothing_behind(db: PgPool) {
    let app = spawn_app(db).await;
    let session = app.member("ada@example.com").await;
    let id = queue_id(&app.queue(&session, "jobs").await);
    let before_delete = meta(&app, id).await.unwrap();
    app.delete(&session, "/api/v1/queues/jobs").await.expect(204);

    projection::update_queue(&mut app.redis.clone(), &app.keys, &before_delete).await.unwrap();

    assert!(!app.exists(&app.keys.queue(id).meta()).await, "the deleted queue's meta came back");
    assert!(app.live_queue_ids().await.is_empty());
}

#[sqlx::test(migrations = "../migrations")]
async fn resync_rebuilds_an_emptied_namespace_and_removes_stale_records(db: PgPool) {
    let app = spawn_app(db.clone()).await;
    let ada = app.member("ada@example.com").await;
    let bob = app.member("bob@example.com").await;
    let jobs = app.queue(&ada, "jobs").await;
    let mail = app.queue(&bob, "mail").await;
    let minted = app.post(&ada, "/api/v1/queues/jobs/tokens", json!({"name": "w", "scopes": ["consume"]})).await;
    let minted = minted.expect(201)["token"].clone();
    let revoked = app.post(&ada, "/api/v1/queues/jobs/tokens", json!({"name": "r", "scopes": ["send"]})).await;
    let revoked = revoked.expect(201)["token"].clone();
    app.delete(&ada, &format!("/api/v1/queues/jobs/tokens/{}", revoked["id"].as_str().unwrap())).await.expect(204);
    let gone = app.queue(&ada, "gone").await;
    app.delete(&ada, "/api/v1/queues/gone").await.expect(204);
    app.patch(&bob, "/api/v1/queues/mail", json!({"max_attempts": 3})).await.expect(200);
    app.post(&bob, "/api/v1/queues/mail/pause", json!({})).await.expect(200);
    let expected_jobs = meta(&app, queue_id(&jobs)).await.unwrap();
    let expected_mail = meta(&app, queue_id(&mail)).await.unwrap();

    // Redis forgets everything; stale records appear that PostgreSQL does not back.
    let mut conn = app.redis.clone();
    for key in app.namespace_keys().await {
        let _: () = conn.del(&key).await.unwrap();
    }
    let stale_token = TokenSecret::generate();
    let _: () = conn.hset(app.keys.token(&stale_token.hash()), "v", "1").await.unwrap();
    let _: () =
        conn.hset(app.keys.token(&TokenSecret::parse(secret(&revoked)).unwrap().hash()), "v", "1").await.unwrap();
    let _: () = conn.set(app.keys.slug("stale-slug"), QueueId::new().to_string()).await.unwrap();
    let _: () = conn.set(app.keys.slug("gone"), queue_id(&gone).to_string()).await.unwrap();

    app.cp.resync_projection().await.unwrap();

    assert_eq!(meta(&app, queue_id(&jobs)).await, Some(expected_jobs));
    assert_eq!(meta(&app, queue_id(&mail)).await, Some(expected_mail.clone()));
    assert!(expected_mail.paused && expected_mail.max_attempts == 3);
    assert_eq!(app.string(&app.keys.slug("jobs")).await, Some(queue_id(&jobs).to_string()));
    assert_eq!(app.string(&app.keys.slug("mail")).await, Some(queue_id(&mail).to_string()));
    let mut live = vec![queue_id(&jobs).to_string(), queue_id(&mail).to_string()];
    live.sort();
    assert_eq!(app.live_queue_ids().await, live);
    for (token, queue) in [(&jobs["token"], &jobs), (&minted, &jobs), (&mail["token"], &mail)] {
        let record = token_record(&app, secret(token)).await.expect("live token re-synced");
        assert_eq!(record.queue, queue_id(queue));
        assert_eq!(record.token_id.to_string(), token["id"].as_str().unwrap());
    }
    assert_eq!(token_record(&app, secret(&minted)).await.unwrap().scopes, vec![Scope::Consume]);
    assert_eq!(
        TokenRecord::from_fields(&app.hash(&app.keys.token(&stale_token.hash())).await),
        None,
        "stale token removed"
    );
    assert_eq!(token_record(&app, secret(&revoked)).await, None, "revoked token removed");
    assert_eq!(app.string(&app.keys.slug("stale-slug")).await, None);
    assert_eq!(app.string(&app.keys.slug("gone")).await, None);
    assert_eq!(meta(&app, queue_id(&gone)).await, None);
}

#[sqlx::test(migrations = "../migrations")]
async fn resync_finishes_a_delete_whose_projection_failed(db: PgPool) {
    let app = spawn_app(db.clone()).await;
    let session = app.member("ada@example.com").await;
    let jobs = app.queue(&session, "jobs").await;
    let id = queue_id(&jobs);
    store_everything(&app, id).await;
    // PostgreSQL committed the delete; Redis never heard of it.
    sqlx::query("UPDATE queues SET deleted_at = now()").execute(&db).await.unwrap();
    sqlx::query("UPDATE tokens SET revoked_at = now()").execute(&db).await.unwrap();
    // A queue this database does not know is left alone.
    let foreign = QueueId::new();
    let _: () = app.redis.clone().sadd(app.keys.queues(), foreign.to_string()).await.unwrap();
    let _: () = app.redis.clone().set(app.keys.queue(foreign).stream(), "data").await.unwrap();

    app.cp.resync_projection().await.unwrap();

    assert_eq!(app.string(&app.keys.slug("jobs")).await, None);
    assert_eq!(token_record(&app, secret(&jobs["token"])).await, None);
    assert_eq!(meta(&app, id).await, None);
    assert_eq!(keys_of(&app, id).await, vec![app.keys.deleted_queue(id)], "only the tombstone is left");
    assert_eq!(app.live_queue_ids().await, vec![foreign.to_string()]);
    assert!(app.exists(&app.keys.queue(foreign).stream()).await);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_failed_projection_answers_503_and_the_resync_repairs_it(db: PgPool) {
    let app = spawn_app(db.clone()).await;
    let session = app.member("ada@example.com").await;
    // A key of the wrong type makes the projection's SADD fail after PostgreSQL committed.
    let mut conn = app.redis.clone();
    let _: () = conn.set(app.keys.queues(), "not a set").await.unwrap();
    app.post(&session, "/api/v1/queues", json!({"name": "jobs"})).await.expect_error(503, "service_unavailable");
    let queue = app.get(&session, "/api/v1/queues/jobs").await.expect(200);
    let id = queue_id(&queue);

    let _: () = conn.del(app.keys.queues()).await.unwrap();
    app.cp.resync_projection().await.unwrap();
    assert!(meta(&app, id).await.is_some());
    assert_eq!(app.string(&app.keys.slug("jobs")).await, Some(id.to_string()));
    assert_eq!(app.live_queue_ids().await, vec![id.to_string()]);
    let hash: String = sqlx::query_scalar("SELECT secret_hash FROM tokens").fetch_one(&db).await.unwrap();
    let record = TokenRecord::from_fields(&app.hash(&app.keys.token(&hash)).await).expect("first token projected");
    assert_eq!(record.queue, id);
}

/// Every key with the queue's hash tag (found by SCAN: only tests list keys).
async fn keys_of(app: &TestApp, queue: QueueId) -> Vec<String> {
    let tag = format!("{{q:{queue}}}");
    app.namespace_keys().await.into_iter().filter(|k| k.contains(&tag)).collect()
}

/// Through the engine, as the data plane does: ready, delayed, leased, dead-lettered and acknowledged
/// messages, idempotency records (live and released), the storage lease, a token's last use, the
/// consumers' tallies and a push log entry.
async fn store_everything(app: &TestApp, queue: QueueId) {
    let engine = app.cp.engine();
    let now = aqs_core::time::now_ms();
    let message = |key: Option<&str>, delay_ms: u64| NewMessage {
        body: b"{}".to_vec(),
        content_type: "application/json".into(),
        attributes: String::new(),
        group_id: None,
        idempotency_key: key.map(str::to_owned),
        delay_ms,
    };
    let batch = [message(Some("order-1"), 0), message(Some("order-2"), 0), message(None, 60_000)];
    assert!(matches!(engine.publish(queue, &batch, now).await.unwrap(), PublishOutcome::Stored(_)));
    assert!(matches!(engine.publish(queue, &[message(None, 0)], now).await.unwrap(), PublishOutcome::Stored(_)));
    let ConsumeOutcome::Delivered { deliveries, .. } = engine.consume(queue, 2, 60_000, now, 0).await.unwrap() else {
        panic!("the queue exists and is not paused");
    };
    let receipts: Vec<Receipt> = deliveries.iter().map(|d| d.receipt(queue, u64::MAX)).collect();
    assert_eq!(engine.ack(queue, &receipts[..1], now).await.unwrap(), vec![true]);
    engine.bury(queue, &receipts[1..], "handler refused", now).await.unwrap();
    engine.flush_ledger(false).await.unwrap();
    engine.record_token_use(queue, uuid::Uuid::new_v4(), now).await.unwrap();
    // A data-plane process's consumer tallies (`data-plane/src/consumers.rs` writes them so).
    let tally = aqs_engine::ConsumerTally {
        token_id: uuid::Uuid::new_v4(),
        address: "203.0.113.9".into(),
        user_agent: "worker/1".into(),
        last_seen_ms: now,
        minutes: vec![aqs_engine::MinuteTally { minute: now / 60_000, requests: 1, messages: 1, acked: 0 }],
    };
    engine.write_consumer_tallies(queue, &[("c".into(), tally)], &[]).await.unwrap();
    // The push dispatcher's log entry, as `push::log` writes it.
    let _: () = app.redis.clone().lpush(app.keys.queue(queue).push_log(), "{}").await.unwrap();
}
