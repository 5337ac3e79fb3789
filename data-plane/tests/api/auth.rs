//! Every route × every scope, another tenant's token, missing and bad tokens, revocation.

use crate::helpers::*;
use aqs_core::token::{Scope, TokenSecret};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;

struct Route {
    method: &'static str,
    path: &'static str,
    body: Value,
    scopes: &'static [Scope],
}

fn routes() -> Vec<Route> {
    use Scope::*;
    let r = |method, path, body, scopes| Route { method, path, body, scopes };
    vec![
        r("POST", "/messages", json!({"body": "x"}), &[Send]),
        r("POST", "/messages/batch", json!({"messages": [{"body": "x"}]}), &[Send]),
        r("POST", "/consume", json!({}), &[Consume]),
        r("POST", "/ack", json!({"receipts": ["x"]}), &[Consume]),
        r("POST", "/nack", json!({"receipts": ["x"]}), &[Consume]),
        r("GET", "/stats", Value::Null, &[Send, Consume]),
        r("GET", "/messages/peek", Value::Null, &[Manage]),
        r("POST", "/purge", json!({}), &[Manage]),
        r("GET", "/dead-letters", Value::Null, &[Manage]),
        r("POST", "/dead-letters/replay", json!({"all": true}), &[Manage]),
        r("POST", "/dead-letters/purge", json!({"all": true}), &[Manage]),
    ]
}

async fn call(app: &TestApp, token: &str, url: &str, route: &Route) -> (StatusCode, Value) {
    if route.method == "GET" { app.get(token, url).await } else { app.post(token, url, &route.body).await }
}

#[tokio::test]
async fn every_route_checks_scope_and_tenant() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let other = app.queue().await;
    let single: Vec<(Scope, String)> =
        futures_tokens(&app, &queue, &[Scope::Send, Scope::Consume, Scope::Manage]).await;
    for route in routes() {
        let url = app.url(&queue, route.path);
        for (scope, token) in &single {
            let (status, body) = call(&app, token, &url, &route).await;
            if route.scopes.contains(scope) {
                assert!(
                    ![StatusCode::UNAUTHORIZED, StatusCode::FORBIDDEN, StatusCode::NOT_FOUND].contains(&status)
                        && !status.is_server_error(),
                    "{} {} with {scope}: {status} {body}",
                    route.method,
                    route.path
                );
            } else {
                assert_eq!(status, StatusCode::FORBIDDEN, "{} {} with {scope}: {body}", route.method, route.path);
                assert_eq!(body["error"], "forbidden");
            }
        }
        // Another tenant's token, with every scope: the queue does not exist for it.
        let (status, body) = call(&app, &other.token, &url, &route).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{} {}: {body}", route.method, route.path);
        assert_eq!(body["error"], "not_found");
        // No token, a malformed one, an unknown one.
        let unknown = TokenSecret::generate();
        for token in ["", "acq_nonsense", unknown.expose()] {
            let (status, body) = call(&app, token, &url, &route).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{} {} {token:?}: {body}", route.method, route.path);
            assert_eq!(body["error"], "unauthorized");
        }
        // A slug that does not exist.
        let missing = format!("{}/queue/v1/no-such-queue{}", app.base, route.path);
        let (status, _) = call(&app, &queue.token, &missing, &route).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{} {}", route.method, route.path);
    }
}

async fn futures_tokens(app: &TestApp, queue: &TestQueue, scopes: &[Scope]) -> Vec<(Scope, String)> {
    let mut out = Vec::new();
    for scope in scopes {
        out.push((*scope, app.token(queue.id, &[*scope]).await));
    }
    out
}

#[tokio::test]
async fn a_revoked_token_stops_working_within_a_second() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let secret = app.token(queue.id, &[Scope::Send, Scope::Consume]).await;
    let url = app.url(&queue, "/stats");
    assert_eq!(app.get(&secret, &url).await.0, StatusCode::OK);
    let mut conn = app.redis.clone();
    let hash = TokenSecret::parse(&secret).unwrap().hash();
    let _: () = redis::cmd("DEL").arg(app.keys.token(&hash)).query_async(&mut conn).await.unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(app.get(&secret, &url).await.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn last_use_is_recorded_per_token() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    app.stats(&queue).await;
    let key = app.keys.queue(queue.id).token_last_used();
    let recorded = || async {
        let values: Vec<String> = redis::cmd("HVALS").arg(&key).query_async(&mut app.redis.clone()).await.unwrap();
        values
    };
    eventually("the token's use is recorded", || async { !recorded().await.is_empty() }).await;
    let recorded = recorded().await;
    assert_eq!(recorded.len(), 1);
    let at: u64 = recorded[0].parse().unwrap();
    assert!(aqs_core::time::now_ms() - at < 5_000);
}

#[tokio::test]
async fn admin_actions_are_rate_limited_per_token() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let url = app.url(&queue, "/purge");
    for _ in 0..6 {
        assert_eq!(app.post(&queue.token, &url, &json!({})).await.0, StatusCode::OK);
    }
    let response = app.client.post(&url).bearer_auth(&queue.token).json(&json!({})).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = response.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=10).contains(&retry));
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], "rate_limited");
    // Another token of the same queue has its own budget.
    let other = app.token(queue.id, &[Scope::Manage]).await;
    assert_eq!(app.post(&other, &url, &json!({})).await.0, StatusCode::OK);
}

#[tokio::test]
async fn the_queue_routes_serve_a_pinned_queue_at_the_root() {
    // What a custom host does: the same handlers at `/`, the queue fixed by the host.
    let app = spawn_app().await;
    let queue = app.queue().await;
    let other = app.queue().await;
    let pinned = aqs_data_plane::PinnedQueue(queue.id);
    let router = aqs_data_plane::queue_routes()
        .layer(axum::middleware::map_request(move |mut request: axum::extract::Request| async move {
            request.extensions_mut().insert(pinned);
            request
        }))
        .with_state(app.state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let (status, published) = app.post(&queue.token, &format!("{base}/messages"), &json!({"body": "via host"})).await;
    assert_eq!(status, StatusCode::CREATED, "{published}");
    let (status, body) = app.post(&queue.token, &format!("{base}/consume"), &json!({})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["messages"][0]["id"], published["id"]);
    let (status, _) = app.get(&other.token, &format!("{base}/stats")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "another queue's token on this host");
}

/// RFC 9110: the authentication scheme is case-insensitive.
#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        let response = app
            .client
            .post(app.url(&queue, "/messages"))
            .header("authorization", format!("{scheme} {}", queue.token))
            .json(&json!({"body": scheme}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::CREATED, "{scheme}");
    }
    let response = app
        .client
        .get(app.url(&queue, "/stats"))
        .header("authorization", format!("Basic {}", queue.token))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "another scheme is not a bearer token");
}
