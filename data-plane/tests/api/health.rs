//! Health, and the Redis-down path of every route: 503 with Retry-After, never a hang.

use crate::helpers::*;
use reqwest::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn health_is_ok_with_redis() {
    let app = spawn_app().await;
    let response = app.client.get(format!("{}/queue/v1/health", app.base)).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body, json!({"ok": true, "service": "aqs"}));
}

#[tokio::test]
async fn redis_down_answers_503_with_retry_after() {
    let app = spawn_app_without_redis().await;
    let response = app.client.get(format!("{}/queue/v1/health", app.base)).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()["retry-after"], "1");
    let id = response.headers()["x-request-id"].to_str().unwrap().to_owned();
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["ok"], false);
    assert_eq!(body["request_id"], id.as_str(), "the 503 carries the request id too");

    let token = aqs_core::token::TokenSecret::generate();
    let url = format!("{}/queue/v1/some-queue/messages", app.base);
    let response = app.client.post(&url).bearer_auth(token.expose()).json(&json!({"body": "x"})).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(response.headers().contains_key("retry-after"));
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], "service_unavailable");
}
