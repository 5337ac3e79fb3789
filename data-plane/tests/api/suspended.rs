//! A queue whose team an operator suspended: the control plane writes the reason into the queue's
//! meta hash (`suspended`, `aqs_core::projection`), written here as it does. Every token of the
//! queue is then refused with 403 `team_suspended` on every route (after 401 for an unknown token,
//! before 403 for a missing scope), push delivers nothing, and both work again once it is lifted.

use crate::helpers::*;
use crate::push_handler::{always, record};
use aqs_core::projection::meta_field;
use aqs_core::token::Scope;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::Duration;

const REASON: &str = "unpaid invoice INV-7";

/// What `teams::admin::project_suspension` writes (`put_suspension.lua`): the field, or its absence.
async fn set_suspended(app: &TestApp, queue: &TestQueue, reason: Option<&str>) {
    let mut conn = app.redis.clone();
    let key = app.keys.queue(queue.id).meta();
    let cmd = match reason {
        Some(reason) => {
            let mut cmd = redis::cmd("HSET");
            cmd.arg(&key).arg(meta_field::SUSPENDED).arg(reason);
            cmd
        }
        None => {
            let mut cmd = redis::cmd("HDEL");
            cmd.arg(&key).arg(meta_field::SUSPENDED);
            cmd
        }
    };
    let _: () = cmd.query_async(&mut conn).await.unwrap();
}

fn routes() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        ("POST", "/messages", json!({"body": "x"})),
        ("POST", "/messages/batch", json!({"messages": [{"body": "x"}]})),
        ("POST", "/consume", json!({})),
        ("POST", "/ack", json!({"receipts": ["x"]})),
        ("POST", "/nack", json!({"receipts": ["x"]})),
        ("POST", "/extend", json!({"receipts": ["x"], "visibility_timeout_seconds": 10})),
        ("GET", "/stats", Value::Null),
        ("GET", "/messages/peek", Value::Null),
        ("POST", "/purge", json!({})),
        ("GET", "/dead-letters", Value::Null),
        ("POST", "/dead-letters/replay", json!({"all": true})),
        ("POST", "/dead-letters/purge", json!({"all": true})),
    ]
}

async fn call(app: &TestApp, token: &str, url: &str, method: &str, body: &Value) -> (StatusCode, Value) {
    if method == "GET" { app.get(token, url).await } else { app.post(token, url, body).await }
}

#[tokio::test]
async fn a_suspended_teams_tokens_are_refused_everywhere_until_it_is_lifted() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let other = app.queue().await;
    let send_only = app.token(queue.id, &[Scope::Send]).await;
    let id = app.publish_text(&queue, "before").await;
    set_suspended(&app, &queue, Some(REASON)).await;

    // Within the settings cache's life every route refuses the queue's tokens.
    eventually("the suspension is seen", || async {
        app.post(&queue.token, &app.url(&queue, "/messages"), &json!({"body": "x"})).await.0 == StatusCode::FORBIDDEN
    })
    .await;
    for (method, path, body) in routes() {
        let (status, answer) = call(&app, &queue.token, &app.url(&queue, path), method, &body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {answer}");
        assert_eq!(answer["error"], "team_suspended", "{method} {path}: {answer}");
        assert!(answer["message"].as_str().unwrap().contains(REASON), "{answer}");
        // A token without the route's scope hears of the suspension first.
        let (status, answer) = call(&app, &send_only, &app.url(&queue, path), method, &body).await;
        assert_eq!((status, answer["error"].as_str()), (StatusCode::FORBIDDEN, Some("team_suspended")), "{path}");
    }
    // An unknown token is still 401, another queue is untouched.
    let (status, _) = app.post("acq_unknown", &app.url(&queue, "/consume"), &json!({})).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    app.publish_text(&other, "elsewhere").await;

    set_suspended(&app, &queue, None).await;
    eventually("the suspension is lifted", || async {
        app.post(&queue.token, &app.url(&queue, "/messages"), &json!({"body": "after"})).await.0.is_success()
    })
    .await;
    let delivered = app.consume(&queue, json!({"max_messages": 10})).await;
    assert!(delivered.iter().any(|m| m["id"] == id.as_str()), "the message kept from before: {delivered:?}");
}

#[tokio::test]
async fn a_suspended_teams_queue_pushes_nothing_until_it_is_lifted() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let hook = always(200).await;
    app.publish_text(&queue, "waiting").await;
    set_suspended(&app, &queue, Some(REASON)).await;
    app.set_push(&queue, &record(&queue, &hook.url)).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(hook.seen().is_empty(), "a suspended team's queue sent something");
    set_suspended(&app, &queue, None).await;
    hook.wait_for(1, Duration::from_secs(10)).await;
    app.wait_drained(&queue, Duration::from_secs(10)).await;
}
