//! Deleting an account erases the member's personal data: their email is left nowhere, neither in
//! any PostgreSQL table nor in Redis, while the tombstone row keeps the id, the Stripe customer and
//! a random marker, and the address can sign up again as a new member.

use super::billed::spawn_billed;
use super::support::{PASSWORD, TestApp};
use aqs_core::limits::MIB;
use redis::AsyncCommands;
use reqwest::Method;
use serde_json::json;
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use uuid::Uuid;

/// Distinctive, so that finding it anywhere can only mean the member's data was kept.
const EMAIL: &str = "erase.me.please@example.com";

/// Every row of every table, as PostgreSQL prints the whole row (all columns, arrays and JSON
/// included), that mentions `needle` in any letter case: "table: row".
async fn rows_mentioning(db: &PgPool, needle: &str) -> Vec<String> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT quote_ident(table_name) FROM information_schema.tables
         WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
    )
    .fetch_all(db)
    .await
    .unwrap();
    assert!(tables.iter().any(|t| t == "members"), "{tables:?}");
    let mut found = Vec::new();
    for table in tables {
        let rows: Vec<String> =
            sqlx::query_scalar(&format!("SELECT t::text FROM {table} t WHERE strpos(lower(t::text), lower($1)) > 0"))
                .bind(needle)
                .fetch_all(db)
                .await
                .unwrap();
        found.extend(rows.into_iter().map(|row| format!("{table}: {row}")));
    }
    found
}

/// Every key of the test's namespace whose name or value mentions `needle` in any letter case.
async fn keys_mentioning(app: &TestApp, needle: &str) -> Vec<String> {
    let mut conn = app.redis.clone();
    let needle = needle.to_lowercase();
    let mut found = Vec::new();
    for key in app.namespace_keys().await {
        let kind: String = redis::cmd("TYPE").arg(&key).query_async(&mut conn).await.unwrap();
        let values: Vec<Vec<u8>> = match kind.as_str() {
            "string" => vec![conn.get(&key).await.unwrap()],
            "hash" => conn.hgetall::<_, Vec<Vec<u8>>>(&key).await.unwrap(),
            "list" => conn.lrange(&key, 0, -1).await.unwrap(),
            "set" => conn.smembers(&key).await.unwrap(),
            "zset" => conn.zrange(&key, 0, -1).await.unwrap(),
            "stream" => {
                let reply: redis::Value =
                    redis::cmd("XRANGE").arg(&key).arg("-").arg("+").query_async(&mut conn).await.unwrap();
                vec![format!("{reply:?}").into_bytes()]
            }
            "none" => vec![],
            other => panic!("{key} is a {other}: not scanned"),
        };
        let mentions = |bytes: &[u8]| String::from_utf8_lossy(bytes).to_lowercase().contains(&needle);
        if mentions(key.as_bytes()) || values.iter().any(|v| mentions(v)) {
            found.push(key);
        }
    }
    found
}

async fn member_id(app: &TestApp, session: &str) -> Uuid {
    let me = app.get(session, "/api/v1/auth/me").await.expect(200);
    me["member"]["id"].as_str().unwrap().parse().unwrap()
}

#[sqlx::test(migrations = "../migrations")]
async fn a_deleted_members_email_is_left_nowhere_and_the_address_can_sign_up_again(db: PgPool) {
    let b = spawn_billed(db.clone()).await;
    let app = &b.app;
    let session = app.member(EMAIL).await;
    let id = member_id(app, &session).await;
    app.login(EMAIL, PASSWORD).await.expect(200);
    // A failed log-in leaves the throttle's counters in Redis.
    app.login(EMAIL, "not the password").await.expect_error(401, "unauthorized");
    let customer = b.add_card(&session).await;
    let (slug, _) = b.queue(&session, "jobs").await;
    b.set_size(&session, &slug, 10 * MIB).await.expect(200);
    app.post(&session, &format!("/api/v1/queues/{slug}/tokens"), json!({"name": "worker", "scopes": ["consume"]}))
        .await
        .expect(201);
    assert!(!rows_mentioning(&db, EMAIL).await.is_empty(), "the scan finds the live member's email");

    app.call(Method::DELETE, "/api/v1/account", Some(&session), Some(json!({"confirm_email": EMAIL})))
        .await
        .expect(204);

    assert_eq!(rows_mentioning(&db, EMAIL).await, Vec::<String>::new(), "PostgreSQL keeps the email");
    assert_eq!(keys_mentioning(app, EMAIL).await, Vec::<String>::new(), "Redis keeps the email");

    // The tombstone: the id and the Stripe customer for billing, a random marker, nothing else.
    let (email, hash, marker): (Option<String>, Option<String>, Option<String>) =
        sqlx::query_as("SELECT email, password_hash, erasure_marker FROM members WHERE id = $1")
            .bind(id)
            .fetch_one(&db)
            .await
            .unwrap();
    assert_eq!((email, hash), (None, None));
    let marker = marker.expect("an erasure marker");
    assert!(marker.starts_with("erased_"), "{marker}");
    assert!(!marker.contains(&hex::encode(Sha256::digest(EMAIL.as_bytes()))[..16]), "not derived from the email");
    let kept: Option<String> = sqlx::query_scalar("SELECT customer_id FROM billing_accounts WHERE team_id = $1")
        .bind(id)
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(kept, Some(customer));
    // What the member did stays under their id, not their address.
    let sessions: i64 =
        sqlx::query_scalar("SELECT count(*) FROM sessions WHERE member_id = $1").bind(id).fetch_one(&db).await.unwrap();
    assert_eq!(sessions, 2, "both sessions stay, revoked, under the id");

    // The address signs up again as a new, empty member.
    let fresh = app.member(EMAIL).await;
    assert_ne!(member_id(app, &fresh).await, id);
    let list = app.get(&fresh, "/api/v1/queues").await.expect(200);
    assert_eq!(list["queues"], json!([]));
}
