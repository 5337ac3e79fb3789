//! Bad input on every route: a clear 4xx in the error format, never a 5xx.

use crate::helpers::*;
use reqwest::StatusCode;
use serde_json::{Value, json};

fn assert_error(status: StatusCode, body: &Value, want: StatusCode, code: &str, what: &str) {
    assert_eq!(status, want, "{what}: {body}");
    assert_eq!(body["error"], code, "{what}: {body}");
    assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()), "{what}: {body}");
}

#[tokio::test]
async fn publish_rejects_bad_input() {
    let app = spawn_app().await;
    let queue = app.queue_with(|m| m.payload_limit = 1024).await;
    let url = app.url(&queue, "/messages");
    let bad_request = [
        (json!({}), "neither body"),
        (json!({"body": "a", "body_base64": "YQ=="}), "both bodies"),
        (json!({"body_base64": "not base64!"}), "bad base64"),
        (json!({"body": 5}), "body not a string"),
        (json!({"body": "a", "attributes": [1]}), "attributes not an object"),
        (json!({"body": "a", "attributes": "x"}), "attributes a string"),
        (json!({"body": "a", "attributes": {"k": "x".repeat(9000)}}), "attributes over 8 KiB"),
        (json!({"body": "a", "delay_seconds": 604_801}), "delay too long"),
        (json!({"body": "a", "delay_seconds": -1}), "negative delay"),
        (json!({"body": "a", "delay_seconds": "5"}), "delay as a string"),
        (json!({"body": "a", "idempotency_key": ""}), "empty idempotency key"),
        (json!({"body": "a", "idempotency_key": "k".repeat(257)}), "long idempotency key"),
        (json!({"body": "a", "content_type": "t".repeat(257)}), "long content type"),
        (json!({"body": "a", "content_type": ""}), "empty content type"),
        (json!({"body": "a", "group_id": "g".repeat(257)}), "long group id"),
        (json!([1, 2]), "not an object"),
    ];
    for (request, what) in bad_request {
        let (status, body) = app.post(&queue.token, &url, &request).await;
        assert_error(status, &body, StatusCode::BAD_REQUEST, "invalid_request", what);
    }
    let (status, body) = app.post_raw(&queue.token, &url, "application/json", b"{\"body\": ".to_vec()).await;
    assert_error(status, &body, StatusCode::BAD_REQUEST, "invalid_request", "malformed JSON");
    let (status, body) = app.post_raw(&queue.token, &url, "text/plain", b"{\"body\": \"a\"}".to_vec()).await;
    assert_error(status, &body, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", "text/plain");
    // Over the queue's payload limit, as text and as base64; and a body far over the HTTP limit.
    let (status, body) = app.post(&queue.token, &url, &json!({"body": "x".repeat(1025)})).await;
    assert_error(status, &body, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", "text body");
    let (status, body) = app.post(&queue.token, &url, &json!({"body_base64": base64_of(&[7u8; 1025])})).await;
    assert_error(status, &body, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", "binary body");
    let (status, body) = app.post(&queue.token, &url, &json!({"body": "x".repeat(200_000)})).await;
    assert_error(status, &body, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", "huge body");
    // Unknown fields are ignored; exactly the limit is fine.
    let (status, body) = app.post(&queue.token, &url, &json!({"body": "x".repeat(1024), "colour": "red"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(app.stats(&queue).await["depth"]["total"], 1, "nothing but the valid message was stored");
}

/// The length limits of content_type, group_id and idempotency_key count UTF-8 bytes, and the
/// refusal says so: 86 × "€" is 258 bytes, over a limit of 256, though only 86 characters.
#[tokio::test]
async fn length_limits_count_bytes_and_say_so() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let url = app.url(&queue, "/messages");
    let over = "€".repeat(86);
    let fits = "€".repeat(85);
    for field in ["content_type", "group_id", "idempotency_key"] {
        let (status, body) = app.post(&queue.token, &url, &json!({"body": "a", field: over})).await;
        assert_error(status, &body, StatusCode::BAD_REQUEST, "invalid_request", field);
        let message = body["message"].as_str().unwrap();
        assert!(message.starts_with(field) && message.contains("256 bytes"), "{message}");
        let (status, body) = app.post(&queue.token, &url, &json!({"body": "a", field: fits})).await;
        assert_eq!(status, StatusCode::CREATED, "{field}: 255 bytes fit: {body}");
    }
}

#[tokio::test]
async fn batch_rejects_bad_input_and_names_the_entry() {
    let app = spawn_app().await;
    let queue = app.queue_with(|m| m.payload_limit = 1024).await;
    let url = app.url(&queue, "/messages/batch");
    let (status, body) = app.post(&queue.token, &url, &json!({"messages": []})).await;
    assert_error(status, &body, StatusCode::BAD_REQUEST, "invalid_request", "empty batch");
    let many: Vec<Value> = (0..101).map(|i| json!({"body": i.to_string()})).collect();
    let (status, body) = app.post(&queue.token, &url, &json!({"messages": many})).await;
    assert_error(status, &body, StatusCode::BAD_REQUEST, "invalid_request", "101 entries");
    let (status, body) = app.post(&queue.token, &url, &json!({"messages": "x"})).await;
    assert_error(status, &body, StatusCode::BAD_REQUEST, "invalid_request", "messages not an array");
    let (status, body) =
        app.post(&queue.token, &url, &json!({"messages": [{"body": "a"}, {"body": "b"}, {"body_base64": "%%"}]})).await;
    assert_error(status, &body, StatusCode::BAD_REQUEST, "invalid_request", "bad entry");
    assert_eq!(body["index"], 2);
    let (status, body) =
        app.post(&queue.token, &url, &json!({"messages": [{"body": "a"}, {"body": "x".repeat(1025)}]})).await;
    assert_error(status, &body, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", "large entry");
    assert_eq!(body["index"], 1);
    // The envelope: 8 full messages + 64 KiB of content at most.
    let full: Vec<Value> = (0..80).map(|_| json!({"body": "x".repeat(1024)})).collect();
    let (status, body) = app.post(&queue.token, &url, &json!({"messages": full})).await;
    assert_error(status, &body, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", "envelope");
    assert_eq!(app.stats(&queue).await["depth"]["total"], 0, "nothing stored");
    // Eight full-size entries fit, even as base64.
    let eight: Vec<Value> = (0..8).map(|_| json!({"body_base64": base64_of(&[1u8; 1024])})).collect();
    let (status, body) = app.post(&queue.token, &url, &json!({"messages": eight})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

#[tokio::test]
async fn consume_ack_nack_reject_bad_input() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let consume = app.url(&queue, "/consume");
    for (request, what) in [
        (json!({"max_messages": 0}), "max 0"),
        (json!({"max_messages": 101}), "max 101"),
        (json!({"max_messages": "ten"}), "max as text"),
        (json!({"max_wait_seconds": 21}), "wait 21"),
        (json!({"visibility_seconds": 0}), "visibility 0"),
        (json!({"visibility_seconds": 43_201}), "visibility over 12 h"),
        (json!({"visibility_seconds": -5}), "negative visibility"),
    ] {
        let (status, body) = app.post(&queue.token, &consume, &request).await;
        assert_error(status, &body, StatusCode::BAD_REQUEST, "invalid_request", what);
    }
    let (status, body) = app.post_raw(&queue.token, &consume, "text/plain", b"{}".to_vec()).await;
    assert_error(status, &body, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", "consume text/plain");
    for path in ["/ack", "/nack"] {
        let url = app.url(&queue, path);
        let too_many: Vec<String> = (0..101).map(|i| i.to_string()).collect();
        for (request, what) in [
            (json!({}), "no receipts"),
            (json!({"receipts": []}), "empty receipts"),
            (json!({"receipts": too_many}), "101 receipts"),
            (json!({"receipts": "abc"}), "receipts not a list"),
        ] {
            let (status, body) = app.post(&queue.token, &url, &request).await;
            assert_error(status, &body, StatusCode::BAD_REQUEST, "invalid_request", &format!("{path} {what}"));
        }
        let (status, body) = app.post_raw(&queue.token, &url, "application/json", b"[".to_vec()).await;
        assert_error(status, &body, StatusCode::BAD_REQUEST, "invalid_request", "malformed");
    }
    let nack = app.url(&queue, "/nack");
    let (status, body) = app.post(&queue.token, &nack, &json!({"receipts": ["x"], "delay_seconds": 43_201})).await;
    assert_error(status, &body, StatusCode::BAD_REQUEST, "invalid_request", "nack delay");
    // A receipt that is not ours is reported per receipt, not as a failed request.
    let body = app.ack(&queue, &["garbage"]).await;
    assert_eq!(body["acked"], 0);
    assert_eq!(body["failed"][0]["error"], "receipt_invalid");
    assert_eq!(body["failed"][0]["receipt"], "garbage");
}

#[tokio::test]
async fn manage_routes_reject_bad_input() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    for path in ["/messages/peek?limit=0", "/messages/peek?limit=101", "/dead-letters?limit=abc"] {
        let (status, body) = app.get(&queue.token, &app.url(&queue, path)).await;
        assert_error(status, &body, StatusCode::BAD_REQUEST, "invalid_request", path);
    }
    let (status, body) = app.post(&queue.token, &app.url(&queue, "/purge"), &json!({"state": "everything"})).await;
    assert_error(status, &body, StatusCode::BAD_REQUEST, "invalid_request", "purge state");
    let replay = app.url(&queue, "/dead-letters/replay");
    for (request, what) in [
        (json!({"ids": []}), "no ids"),
        (json!({"ids": ["not-an-id"]}), "bad id"),
        (json!({"ids": [1]}), "id not a string"),
        (json!({"all": false}), "all false"),
    ] {
        let (status, body) = app.post(&queue.token, &replay, &request).await;
        assert_error(status, &body, StatusCode::BAD_REQUEST, "invalid_request", what);
    }
    let (status, body) =
        app.post_raw(&queue.token, &app.url(&queue, "/dead-letters/purge"), "text/html", b"<p>".to_vec()).await;
    assert_error(status, &body, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", "dlq purge html");
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
