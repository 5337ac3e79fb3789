//! Lease extension (`POST /extend`): a heartbeat keeps a message hidden past its first deadline,
//! its fresh receipt acks, a stale receipt is `lease_lost`, bad input is a 4xx.

use crate::helpers::*;
use aqs_core::token::Scope;
use reqwest::StatusCode;
use serde_json::{Value, json};

impl TestApp {
    async fn extend(&self, queue: &TestQueue, receipts: &[&str], visibility_seconds: u64) -> (StatusCode, Value) {
        let body = json!({ "receipts": receipts, "visibility_seconds": visibility_seconds });
        self.post(&queue.token, &self.url(queue, "/extend"), &body).await
    }

    /// The message's lease deadline (ms) in the lease zset.
    async fn deadline(&self, queue: &TestQueue) -> Option<u64> {
        let mut conn = self.redis.clone();
        let leases: Vec<(String, u64)> = redis::cmd("ZRANGE")
            .arg(self.keys.queue(queue.id).lease())
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query_async(&mut conn)
            .await
            .unwrap();
        leases.first().map(|(_, at)| *at)
    }
}

#[tokio::test]
async fn an_extended_lease_stays_hidden_past_its_first_deadline_and_its_new_receipt_acks() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let id = app.publish_text(&queue, "long job").await;
    let leased = app.consume(&queue, json!({"visibility_seconds": 1})).await;
    let receipt = text(&leased[0], "receipt");
    let first_deadline = app.deadline(&queue).await.expect("leased");
    // Two hours: longer than the first receipt's validity (an hour), so the fresh one differs.
    let (status, body) = app.extend(&queue, &[&receipt], 7200).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["failed"], json!([]));
    assert_eq!(body["extended"][0]["receipt"], receipt.as_str());
    let fresh = text(&body["extended"][0], "new_receipt");
    assert_ne!(fresh, receipt);
    assert!(body["extended"][0]["visible_at"].is_string());
    // Past the first deadline (by Redis's own clock, not ours), the message is still in flight.
    eventually("the first lease's deadline has passed", || async {
        let mut conn = app.redis.clone();
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
        secs * 1000 + micros / 1000 > first_deadline + 200
    })
    .await;
    assert!(app.deadline(&queue).await.expect("still leased") >= first_deadline + 7_000_000);
    assert!(app.consume(&queue, json!({})).await.is_empty(), "extended: still invisible");
    let depth = app.stats(&queue).await["depth"].clone();
    assert_eq!(depth["in_flight"], 1, "{depth}");
    // The fresh receipt acknowledges the same delivery.
    assert_eq!(app.ack(&queue, &[&fresh]).await["acked"], 1);
    assert!(app.consume(&queue, json!({})).await.is_empty());
    assert_eq!(app.stats(&queue).await["depth"]["total"], 0, "message {id} acknowledged");
}

#[tokio::test]
async fn the_old_receipt_after_a_redelivery_is_lease_lost_and_extends_nothing() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    app.publish_text(&queue, "job").await;
    let first = app.consume(&queue, json!({"visibility_seconds": 1})).await;
    let stale = text(&first[0], "receipt");
    let second = eventually_consume(&app, &queue).await;
    assert_eq!(second["attempts"], 2);
    let deadline = app.deadline(&queue).await;
    let (status, body) = app.extend(&queue, &[&stale], 600).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["extended"], json!([]));
    assert_eq!(body["failed"][0]["error"], "lease_lost");
    assert_eq!(body["failed"][0]["receipt"], stale.as_str());
    assert_eq!(app.deadline(&queue).await, deadline, "the current lease is untouched");
    // An acknowledged delivery cannot be extended either.
    let current = text(&second, "receipt");
    assert_eq!(app.ack(&queue, &[&current]).await["acked"], 1);
    let (_, body) = app.extend(&queue, &[&current], 60).await;
    assert_eq!(body["failed"][0]["error"], "lease_lost");
}

/// A long poll, which sleeps until the short lease falls due and then takes the redelivery.
async fn eventually_consume(app: &TestApp, queue: &TestQueue) -> Value {
    let mut got = app.consume(queue, json!({"max_wait_seconds": 20, "visibility_seconds": 60})).await;
    assert_eq!(got.len(), 1, "the expired lease is redelivered");
    got.pop().unwrap()
}

#[tokio::test]
async fn a_mixed_batch_answers_per_receipt() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let other = app.queue().await;
    app.publish_text(&queue, "a").await;
    app.publish_text(&other, "theirs").await;
    let mine = app.consume(&queue, json!({})).await;
    let theirs = app.consume(&other, json!({})).await;
    let (good, foreign) = (text(&mine[0], "receipt"), text(&theirs[0], "receipt"));
    let (status, body) = app.extend(&queue, &[&good, "garbage", &foreign], 5).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["extended"].as_array().unwrap().len(), 1);
    let errors: Vec<_> = body["failed"].as_array().unwrap().iter().map(|f| f["error"].clone()).collect();
    assert_eq!(errors, vec![json!("receipt_invalid"), json!("receipt_invalid")]);
}

#[tokio::test]
async fn bad_input_is_a_4xx_in_the_error_format() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    app.publish_text(&queue, "x").await;
    let receipt = text(&app.consume(&queue, json!({})).await[0], "receipt");
    let url = app.url(&queue, "/extend");
    let many: Vec<&str> = vec![receipt.as_str(); 101];
    let cases = [
        json!({"receipts": [receipt], "visibility_seconds": 0}),
        json!({"receipts": [receipt], "visibility_seconds": 43_201}),
        json!({"receipts": [receipt], "visibility_seconds": -1}),
        json!({"receipts": [receipt]}),
        json!({"receipts": [], "visibility_seconds": 30}),
        json!({"receipts": many, "visibility_seconds": 30}),
        json!({"receipts": "not a list", "visibility_seconds": 30}),
    ];
    for case in cases {
        let (status, body) = app.post(&queue.token, &url, &case).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{case}: {body}");
        assert_eq!(body["error"], "invalid_request", "{case}: {body}");
        assert!(body["message"].is_string());
    }
    let (status, body) = app.post_raw(&queue.token, &url, "application/json", b"{not json".to_vec()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _) = app.post_raw(&queue.token, &url, "text/plain", b"{}".to_vec()).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    // 12 h is the most a lease may be extended by.
    let (status, body) = app.extend(&queue, &[&receipt], 43_200).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["extended"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn extend_needs_the_consume_scope_and_never_reveals_another_tenants_queue() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let other = app.queue().await;
    app.publish_text(&queue, "x").await;
    let receipt = text(&app.consume(&queue, json!({})).await[0], "receipt");
    let body = json!({"receipts": [receipt], "visibility_seconds": 30});
    let url = app.url(&queue, "/extend");
    for scopes in [&[Scope::Send][..], &[Scope::Manage][..]] {
        let token = app.token(queue.id, scopes).await;
        let (status, answer) = app.post(&token, &url, &body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{scopes:?}: {answer}");
        assert_eq!(answer["error"], "forbidden");
    }
    let (status, answer) = app.post(&other.token, &url, &body).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    assert_eq!(answer["error"], "not_found");
    let (status, _) = app.post("acq_nonsense", &url, &body).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn shortening_a_lease_wakes_a_waiting_long_poll_at_the_new_deadline() {
    let app = spawn_app().await;
    app.listening().await;
    let queue = app.queue().await;
    app.publish_text(&queue, "job").await;
    let receipt = text(&app.consume(&queue, json!({"visibility_seconds": 600})).await[0], "receipt");
    let poll = {
        let (client, url, token) = (app.client.clone(), app.url(&queue, "/consume"), queue.token.clone());
        tokio::spawn(async move {
            let response = client.post(url).bearer_auth(token).json(&json!({"max_wait_seconds": 20})).send();
            response.await.unwrap().json::<Value>().await.unwrap()
        })
    };
    // The poll found nothing and waits (it marked the queue), sleeping past the 600 s lease's reach.
    eventually("the long poll waits", || async {
        let mut conn = app.redis.clone();
        let mark: Option<u64> =
            redis::cmd("HGET").arg(app.keys.queue(queue.id).meta()).arg("w").query_async(&mut conn).await.unwrap();
        mark.is_some()
    })
    .await;
    let (status, body) = app.extend(&queue, &[&receipt], 1).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Woken by the extension, it sleeps until the new deadline (a second) and takes the
    // redelivery; unwoken, it would sleep out its 20 s. The bound is only against that.
    let answer = tokio::time::timeout(std::time::Duration::from_secs(12), poll)
        .await
        .expect("the extension woke the waiting poll")
        .unwrap();
    assert_eq!(answer["messages"].as_array().unwrap().len(), 1, "{answer}");
    assert_eq!(answer["messages"][0]["attempts"], 2);
}
