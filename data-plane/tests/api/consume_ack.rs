//! A consume that acknowledges the previous batch first (`"ack"` on `POST /consume`): the receipts
//! are settled as `POST /ack` would settle them, before anything is leased, and the answer says
//! what each did; the request is charged once.

use crate::helpers::*;
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test]
async fn a_consume_acknowledges_the_previous_batch_before_leasing_the_next() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    for i in 0..3 {
        app.publish_text(&queue, &format!("first {i}")).await;
    }
    let first = app.consume(&queue, json!({ "max_messages": 3 })).await;
    assert_eq!(first.len(), 3);
    app.publish_text(&queue, "second").await;
    let url = app.url(&queue, "/consume");
    let (status, body) = app.post(&queue.token, &url, &json!({ "max_messages": 10, "ack": receipts(&first) })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["ack"], json!({ "acked": 3, "failed": [] }), "{body}");
    let next = body["messages"].as_array().unwrap();
    assert_eq!(next.len(), 1, "only the new message: the acknowledged ones are gone, not leased again");
    assert_eq!(decode_body(&next[0]), b"second");
    let stats = app.stats(&queue).await;
    assert_eq!((stats["depth"]["total"].as_u64(), stats["depth"]["in_flight"].as_u64()), (Some(1), Some(1)), "{stats}");

    // The same receipts again: each says why it did nothing, and the consume still answers.
    let bogus = "not-a-receipt".to_owned();
    let mut again = receipts(&first)[..1].to_vec();
    again.push(bogus.clone());
    let (status, body) = app.post(&queue.token, &url, &json!({ "ack": again })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["ack"]["acked"], 0);
    let errors: Vec<&str> =
        body["ack"]["failed"].as_array().unwrap().iter().map(|f| f["error"].as_str().unwrap()).collect();
    assert_eq!(errors, ["receipt_invalid", "lease_lost"], "{body}");
    assert_eq!(body["messages"], json!([]));

    // Without `ack` the answer has no `ack`.
    let (_, body) = app.post(&queue.token, &url, &json!({})).await;
    assert!(body.get("ack").is_none(), "{body}");
}

#[tokio::test]
async fn a_consume_with_an_empty_or_oversized_ack_is_refused_naming_the_field_and_changes_nothing() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    app.publish_text(&queue, "stays ready").await;
    let url = app.url(&queue, "/consume");
    for ack in [json!([]), json!(vec!["x"; 101]), json!("one"), json!([7])] {
        let (status, body) = app.post(&queue.token, &url, &json!({ "ack": ack })).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{ack}: {body}");
        assert_eq!(body["error"], "invalid_request", "{body}");
    }
    let (_, body) = app.post(&queue.token, &url, &json!({ "ack": [] })).await;
    assert_eq!(body["field"], "ack", "{body}");
    assert_eq!(app.stats(&queue).await["depth"]["ready"], 1, "nothing was leased");
}
