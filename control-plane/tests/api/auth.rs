//! Sign-up, login, sessions and the operator role.

use super::support::{PASSWORD, spawn_app, spawn_app_with};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::Method;
use serde_json::json;
use sqlx::PgPool;

#[sqlx::test(migrations = "../migrations")]
async fn signup_returns_the_member_and_a_working_session(db: PgPool) {
    let app = spawn_app(db).await;
    let body = app.signup("  Ada@Example.COM ", PASSWORD).await.expect(201);
    assert_eq!(body["member"]["email"], "ada@example.com");
    assert_eq!(body["member"]["role"], "member");
    assert!(body["member"]["created_at"].as_str().unwrap().ends_with('Z'));
    let session = body["session"].as_str().unwrap();
    let me = app.get(session, "/api/v1/auth/me").await.expect(200);
    assert_eq!(me["member"], body["member"]);
    assert!(!app.signup("x@example.com", PASSWORD).await.text.contains(PASSWORD), "no password echoed");
}

#[sqlx::test(migrations = "../migrations")]
async fn the_same_email_in_another_case_is_a_conflict(db: PgPool) {
    let app = spawn_app(db).await;
    app.signup("ada@example.com", PASSWORD).await.expect(201);
    app.signup("ADA@example.com", PASSWORD).await.expect_error(409, "conflict");
}

#[sqlx::test(migrations = "../migrations")]
async fn signup_names_the_bad_field(db: PgPool) {
    let app = spawn_app(db).await;
    let message = app.signup("ada@example.com", "1234567").await.expect_error(400, "invalid_request");
    assert!(message.contains("password"), "{message}");
    app.signup("ada@example.com", "12345678").await.expect(201);
    for bad in ["", "   ", "ada", "ada@", "@example.com", "ada@example", "a b@example.com"] {
        let message = app.signup(bad, PASSWORD).await.expect_error(400, "invalid_request");
        assert!(message.contains("email"), "{bad:?}: {message}");
    }
    let missing = app.call(Method::POST, "/api/v1/auth/signup", None, Some(json!({"email": "b@example.com"}))).await;
    assert!(missing.expect_error(400, "invalid_request").contains("password"));
}

#[sqlx::test(migrations = "../migrations")]
async fn login_needs_the_right_password(db: PgPool) {
    let app = spawn_app(db).await;
    let signed_up = app.signup("ada@example.com", PASSWORD).await.expect(201);
    let body = app.login("ADA@example.com", PASSWORD).await.expect(200);
    assert_eq!(body["member"], signed_up["member"]);
    app.get(body["session"].as_str().unwrap(), "/api/v1/auth/me").await.expect(200);
    app.login("ada@example.com", "wrong password").await.expect_error(401, "unauthorized");
    app.login("nobody@example.com", PASSWORD).await.expect_error(401, "unauthorized");
    app.login("not an email", PASSWORD).await.expect_error(401, "unauthorized");
}

#[derive(serde::Serialize)]
struct Claims {
    sub: String,
    iat: i64,
    exp: i64,
}

fn jwt(secret: &str, sub: &str, iat: i64, exp: i64) -> String {
    let claims = Claims { sub: sub.into(), iat, exp };
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &EncodingKey::from_secret(secret.as_bytes())).unwrap()
}

#[sqlx::test(migrations = "../migrations")]
async fn authenticated_routes_refuse_missing_invalid_and_expired_sessions(db: PgPool) {
    let app = spawn_app(db).await;
    let body = app.signup("ada@example.com", PASSWORD).await.expect(201);
    let member = body["member"]["id"].as_str().unwrap();
    let secret = app.config.session_secret.expose().to_owned();
    let now = chrono::Utc::now().timestamp();

    app.get(body["session"].as_str().unwrap(), "/api/v1/queues").await.expect(200);

    app.call(Method::GET, "/api/v1/queues", None, None).await.expect_error(401, "unauthorized");
    let basic = app.client.get(format!("{}/api/v1/queues", app.base)).header("Authorization", "Basic YTpi");
    app.raw(basic).await.expect_error(401, "unauthorized");
    for bad in [
        "garbage".to_owned(),
        // Signed with our secret but naming no session row: never issued by a log-in.
        jwt(&secret, member, now, now + 60),
        jwt(&secret, member, now - 13 * 3600, now - 3600),
        jwt(&secret, member, now - 13 * 3600, now - 1),
        jwt("another-secret-that-is-long-enough-too", member, now, now + 60),
        jwt(&secret, &uuid::Uuid::new_v4().to_string(), now, now + 60),
        jwt(&secret, "not-a-uuid", now, now + 60),
    ] {
        app.get(&bad, "/api/v1/queues").await.expect_error(401, "unauthorized");
        app.get(&bad, "/api/v1/auth/me").await.expect_error(401, "unauthorized");
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn sessions_last_twelve_hours(db: PgPool) {
    let app = spawn_app(db).await;
    let body = app.signup("ada@example.com", PASSWORD).await.expect(201);
    let payload = body["session"].as_str().unwrap().split('.').nth(1).unwrap().to_owned();
    use base64::Engine as _;
    let claims: serde_json::Value =
        serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 12 * 3600);
    assert_eq!(claims["sub"], body["member"]["id"]);
}

#[sqlx::test(migrations = "../migrations")]
async fn operator_emails_become_operators_at_signup(db: PgPool) {
    let app =
        spawn_app_with(db, |config| config.operator_emails = vec!["root@example.com".into(), "ops@example.com".into()])
            .await;
    let body = app.signup("OPS@example.com", PASSWORD).await.expect(201);
    assert_eq!(body["member"]["role"], "operator");
    let body = app.signup("ada@example.com", PASSWORD).await.expect(201);
    assert_eq!(body["member"]["role"], "member");
}

#[sqlx::test(migrations = "../migrations")]
async fn grant_operator_promotes_an_existing_member(db: PgPool) {
    let app = spawn_app(db.clone()).await;
    let session = app.member("ada@example.com").await;
    aqs_control_plane::grant_operator(&db, "Ada@Example.com").await.unwrap();
    let me = app.get(&session, "/api/v1/auth/me").await.expect(200);
    assert_eq!(me["member"]["role"], "operator");
    let err = aqs_control_plane::grant_operator(&db, "nobody@example.com").await.unwrap_err();
    assert!(err.to_string().contains("nobody@example.com"), "{err}");
}

/// RFC 9110: the authentication scheme is case-insensitive.
#[sqlx::test(migrations = "../migrations")]
async fn the_bearer_scheme_is_case_insensitive(db: PgPool) {
    let app = spawn_app(db).await;
    let session = app.member("ada@example.com").await;
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let request = app.client.get(format!("{}/api/v1/auth/me", app.base));
        let reply = app.raw(request.header("authorization", format!("{scheme} {session}"))).await;
        assert_eq!(reply.expect(200)["member"]["email"], "ada@example.com", "{scheme}");
    }
    let request = app.client.get(format!("{}/api/v1/auth/me", app.base));
    app.raw(request.header("authorization", format!("Token {session}"))).await.expect_error(401, "unauthorized");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_session_token_ends_at_log_out(db: PgPool) {
    let app = spawn_app(db).await;
    let first = app.signup("ada@example.com", PASSWORD).await.expect(201)["session"].as_str().unwrap().to_owned();
    let second = app.login("ada@example.com", PASSWORD).await.expect(200)["session"].as_str().unwrap().to_owned();
    app.get(&first, "/api/v1/auth/me").await.expect(200);

    let reply = app.call(Method::POST, "/api/v1/auth/logout", Some(&first), None).await;
    assert_eq!(reply.status, 204, "{}", reply.text);
    app.get(&first, "/api/v1/queues").await.expect_error(401, "unauthorized");
    app.call(Method::POST, "/api/v1/auth/logout", Some(&first), None).await.expect_error(401, "unauthorized");
    app.get(&second, "/api/v1/queues").await.expect(200);
    app.call(Method::POST, "/api/v1/auth/logout", None, None).await.expect_error(401, "unauthorized");
}

#[sqlx::test(migrations = "../migrations")]
async fn log_out_everywhere_ends_every_session_of_the_member(db: PgPool) {
    let app = spawn_app(db).await;
    let first = app.signup("ada@example.com", PASSWORD).await.expect(201)["session"].as_str().unwrap().to_owned();
    let second = app.login("ada@example.com", PASSWORD).await.expect(200)["session"].as_str().unwrap().to_owned();
    let other = app.member("bob@example.com").await;

    let reply = app.call(Method::POST, "/api/v1/auth/logout-all", Some(&second), None).await.expect(200);
    assert_eq!(reply["sessions_ended"], 2);
    app.get(&first, "/api/v1/auth/me").await.expect_error(401, "unauthorized");
    app.get(&second, "/api/v1/auth/me").await.expect_error(401, "unauthorized");
    app.get(&other, "/api/v1/auth/me").await.expect(200);
    let fresh = app.login("ada@example.com", PASSWORD).await.expect(200)["session"].as_str().unwrap().to_owned();
    app.get(&fresh, "/api/v1/auth/me").await.expect(200);
}
