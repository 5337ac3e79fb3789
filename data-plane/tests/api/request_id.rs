//! Request ids: `x-request-id` kept when the caller sent a sane one, made otherwise, echoed on every
//! answer and carried in every error answer's JSON.

use crate::helpers::*;
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn health(app: &TestApp, id: Option<&str>) -> reqwest::Response {
    let mut request = app.client.get(format!("{}/queue/v1/health", app.base));
    if let Some(id) = id {
        request = request.header("x-request-id", id);
    }
    request.send().await.unwrap()
}

fn id_of(response: &reqwest::Response) -> String {
    response.headers().get("x-request-id").expect("x-request-id echoed").to_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_sane_request_id_is_echoed_and_a_missing_or_bad_one_is_made() {
    let app = spawn_app().await;
    let kept = health(&app, Some("client-7f3a:retry/2")).await;
    assert_eq!(kept.status(), StatusCode::OK);
    assert_eq!(id_of(&kept), "client-7f3a:retry/2");
    let longest = "r".repeat(128);
    assert_eq!(id_of(&health(&app, Some(&longest)).await), longest);

    let (a, b) = (id_of(&health(&app, None).await), id_of(&health(&app, None).await));
    assert_ne!(a, b, "each request gets its own id");
    for made in [&a, &b] {
        assert!(made.len() == 32 && made.chars().all(|c| c.is_ascii_hexdigit()), "{made}");
    }
    for bad in ["r".repeat(129), "two words".to_owned(), String::new()] {
        let made = id_of(&health(&app, Some(&bad)).await);
        assert_ne!(made, bad);
        assert_eq!(made.len(), 32, "{bad:?} replaced by a made id, got {made}");
    }
}

#[tokio::test]
async fn error_answers_carry_the_request_id_beside_error_and_message() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let response = app
        .client
        .post(app.url(&queue, "/extend"))
        .bearer_auth(&queue.token)
        .header("x-request-id", "trace-me-42")
        .json(&json!({"receipts": [], "visibility_seconds": 30}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(id_of(&response), "trace-me-42");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], "invalid_request");
    assert!(body["message"].is_string());
    assert_eq!(body["request_id"], "trace-me-42");

    // A made id too, on an unauthenticated request and on a queue that does not exist.
    for response in [
        app.client.post(app.url(&queue, "/ack")).json(&json!({"receipts": ["x"]})).send().await.unwrap(),
        app.client
            .get(format!("{}/queue/v1/no-such-queue/stats", app.base))
            .bearer_auth(&queue.token)
            .send()
            .await
            .unwrap(),
    ] {
        assert!(response.status().is_client_error());
        let id = id_of(&response);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["request_id"], id.as_str(), "{body}");
        assert!(body["error"].is_string() && body["message"].is_string(), "{body}");
    }

    // A success answer's body is untouched.
    let response = health(&app, Some("fine")).await;
    let body: Value = response.json().await.unwrap();
    assert!(body.get("request_id").is_none(), "{body}");
}
