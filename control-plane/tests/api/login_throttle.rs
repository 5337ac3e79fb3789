//! Log-in cannot be brute-forced or used to exhaust the server: failed log-ins are throttled per
//! account and client address (429 with `Retry-After`, the right password too), without locking
//! the owner out from elsewhere; and no more password hashes run at once than the pool allows,
//! the rest refused with 503 and `Retry-After`.
//!
//! The test server is reached over loopback, so it believes `X-Forwarded-For` (a proxy in front):
//! that is how these tests speak from different client addresses.

use super::support::{PASSWORD, TestApp, spawn_app};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::PgPool;

async fn login_from(app: &TestApp, address: &str, email: &str, password: &str) -> (StatusCode, Option<u64>, Value) {
    let answer = app
        .client
        .post(format!("{}/api/v1/auth/login", app.base))
        .header("x-forwarded-for", address)
        .json(&json!({"email": email, "password": password}))
        .send()
        .await
        .expect("log-in request");
    let status = answer.status();
    let retry_after = answer.headers().get("retry-after").map(|v| v.to_str().unwrap().parse().unwrap());
    (status, retry_after, answer.json().await.unwrap_or(Value::Null))
}

#[sqlx::test(migrations = "../migrations")]
async fn five_failures_then_429_even_with_the_right_password_but_not_from_elsewhere(db: PgPool) {
    let app = spawn_app(db).await;
    app.signup("ada@example.com", PASSWORD).await.expect(201);
    let attacker = "198.51.100.66";
    for n in 0..5 {
        let (status, _, body) = login_from(&app, attacker, "ada@example.com", &format!("guess number {n}")).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "failure {n}: {body}");
    }
    for password in ["guess number 6", PASSWORD] {
        let (status, retry_after, body) = login_from(&app, attacker, "ADA@example.com", password).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
        assert_eq!(body["error"], "rate_limited", "{body}");
        let retry_after = retry_after.expect("Retry-After on the 429");
        assert!((1..=15 * 60).contains(&retry_after), "{retry_after}");
        assert!(body["message"].as_str().unwrap().contains("try again in 15 minutes"), "{body}");
    }
    // The owner, from another address, logs in at once: nobody else's failures lock them out.
    let (status, _, body) = login_from(&app, "203.0.113.7", "ada@example.com", PASSWORD).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // The attacker's address is throttled for this account only (one account's five failures are
    // far below the per-address bound).
    app.signup("bob@example.com", PASSWORD).await.expect(201);
    let (status, _, body) = login_from(&app, attacker, "bob@example.com", PASSWORD).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[sqlx::test(migrations = "../migrations")]
async fn unknown_emails_are_throttled_like_members(db: PgPool) {
    let app = spawn_app(db).await;
    for _ in 0..5 {
        assert_eq!(login_from(&app, "198.51.100.9", "nobody@example.com", PASSWORD).await.0, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(login_from(&app, "198.51.100.9", "nobody@example.com", PASSWORD).await.0, StatusCode::TOO_MANY_REQUESTS);
}

#[sqlx::test(migrations = "../migrations")]
async fn many_addresses_guessing_one_account_are_held_but_the_owner_is_not(db: PgPool) {
    let app = spawn_app(db).await;
    app.signup("ada@example.com", PASSWORD).await.expect(201);
    let bound = aqs_control_plane::login_throttle::PER_ACCOUNT;
    // Failures spread over many addresses, at most 4 each: no (account, address) bound is reached.
    for n in 0..bound {
        let address = format!("198.51.100.{}", n / 4);
        assert_eq!(login_from(&app, &address, "ada@example.com", "a wrong guess").await.0, StatusCode::UNAUTHORIZED);
    }
    // An address that took part is now held by the account's bound...
    let (status, retry_after, _) = login_from(&app, "198.51.100.0", "ada@example.com", PASSWORD).await;
    assert_eq!((status, retry_after.is_some()), (StatusCode::TOO_MANY_REQUESTS, true));
    // ...while one that never failed on the account still gets in.
    assert_eq!(login_from(&app, "203.0.113.7", "ada@example.com", PASSWORD).await.0, StatusCode::OK);
}

/// 64 log-ins at once: never more hashes in flight than the pool's capacity, and whoever cannot
/// get a slot in time is told 503 with `Retry-After` rather than queued for seconds.
#[sqlx::test(migrations = "../migrations")]
async fn concurrent_log_ins_run_a_bounded_number_of_hashes(db: PgPool) {
    let app = spawn_app(db).await;
    app.signup("ada@example.com", PASSWORD).await.expect(201);
    let capacity = app.cp.hashing().stats().capacity;
    let calls: Vec<_> = (0..64)
        .map(|n| {
            let (client, base) = (app.client.clone(), app.base.clone());
            tokio::spawn(async move {
                let answer = client
                    .post(format!("{base}/api/v1/auth/login"))
                    .header("x-forwarded-for", format!("198.51.100.{n}"))
                    .json(&json!({"email": "ada@example.com", "password": PASSWORD}))
                    .send()
                    .await
                    .expect("log-in request");
                let retry_after = answer.headers().contains_key("retry-after");
                let status = answer.status();
                let body: Value = answer.json().await.unwrap();
                (status, retry_after, body)
            })
        })
        .collect();
    let (mut ok, mut refused) = (0, 0);
    for call in calls {
        let (status, retry_after, body) = call.await.unwrap();
        match status {
            StatusCode::OK => ok += 1,
            StatusCode::SERVICE_UNAVAILABLE => {
                assert_eq!(body["error"], "service_unavailable", "{body}");
                assert!(retry_after, "503 without Retry-After: {body}");
                refused += 1;
            }
            other => panic!("unexpected {other}: {body}"),
        }
    }
    let stats = app.cp.hashing().stats();
    assert!(stats.peak <= capacity, "{stats:?}");
    assert_eq!(stats.in_flight, 0, "{stats:?}");
    assert_eq!(stats.refused, refused, "{stats:?}");
    assert_eq!(ok + refused, 64);
    assert!(ok >= capacity as u64, "at least one round of hashes answered: {ok} ok, {refused} refused");
    eprintln!(
        "64 concurrent log-ins: {ok} answered, {refused} refused with 503; peak {} hashes of {capacity}",
        stats.peak
    );
}
