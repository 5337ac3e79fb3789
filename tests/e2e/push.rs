//! Push delivery through the real binary: an operator (granted by `AQS_OPERATOR_EMAILS`) authorises
//! a callback URL, a member points a queue at a handler on loopback (the servers run with
//! `AQS_PUSH_ALLOW_PRIVATE_NETWORKS=true`), and a kill -9 of the server mid-delivery brings the
//! message back to the handler after the timeout, with `attempts` one higher.

use crate::harness::{Redis, Server, Tenant, fresh_database, get_json, sign_up};
use aqs_testkit::namespace;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const OPERATOR: &str = "push-operator@example.com";

/// A handler that never answers its first request and acknowledges every later one.
async fn hanging_then_ok() -> (String, Arc<Mutex<Vec<(Instant, Value)>>>) {
    let seen: Arc<Mutex<Vec<(Instant, Value)>>> = Arc::default();
    let record = seen.clone();
    let app = axum::Router::new().fallback(move |body: axum::body::Bytes| {
        let record = record.clone();
        async move {
            let first = {
                let mut seen = record.lock().unwrap();
                seen.push((Instant::now(), serde_json::from_slice(&body).unwrap_or(Value::Null)));
                seen.len() == 1
            };
            if first {
                tokio::time::sleep(Duration::from_secs(600)).await;
            }
            axum::http::StatusCode::OK
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://localhost:{}/", listener.local_addr().unwrap().port());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

async fn wait_seen(seen: &Mutex<Vec<(Instant, Value)>>, n: usize, timeout: Duration) -> Vec<(Instant, Value)> {
    let start = Instant::now();
    loop {
        let now = seen.lock().unwrap().clone();
        if now.len() >= n {
            return now;
        }
        assert!(start.elapsed() < timeout, "the handler saw {} of {n} requests", now.len());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_mid_delivery_delivers_again_after_the_timeout() {
    let redis = Redis::start("everysec");
    let env = [("AQS_PUSH_ALLOW_PRIVATE_NETWORKS", "true"), ("AQS_OPERATOR_EMAILS", OPERATOR)];
    let mut server = Server::start_with_env(&fresh_database().await, &redis.url(), &namespace(), &env).await;
    let http = reqwest::Client::new();
    let base = server.base();

    // The operator, granted at sign-up, authorises the member's callback URL.
    let signup = sign_up(&http, &base, OPERATOR).await;
    assert_eq!(signup["member"]["role"], "operator");
    let operator = signup["session"].as_str().unwrap().to_owned();
    let tenant = Tenant::sign_up(&server, json!({"name": "push-crash"})).await;
    let me = get_json(&http, &format!("{base}/api/v1/auth/me"), &tenant.session).await;
    let member = me["member"]["id"].as_str().unwrap();
    let admin = format!("{base}/api/v1/admin/members/{member}/callback-urls");
    let not_for_members = http.get(&admin).bearer_auth(&tenant.session).send().await.unwrap();
    assert_eq!(not_for_members.status(), 404, "operator routes are hidden from members");
    let (handler_url, seen) = hanging_then_ok().await;
    let added = http.post(&admin).bearer_auth(&operator).json(&json!({"prefix": handler_url})).send().await.unwrap();
    assert_eq!(added.status(), 201);

    // Push with the shortest timeout (30 s): the lease is that plus a 5 s margin.
    let set = http
        .put(format!("{base}/api/v1/queues/{}/push", tenant.slug))
        .bearer_auth(&tenant.session)
        .json(&json!({"handler_url": handler_url, "timeout_seconds": 30}))
        .send()
        .await
        .unwrap();
    assert_eq!(set.status(), 201);
    let (status, published) = tenant.publish("{\"to\":\"a@b.com\"}").await;
    assert_eq!(status, 201, "{published}");
    let id = published["id"].as_str().unwrap().to_owned();

    let first = wait_seen(&seen, 1, Duration::from_secs(15)).await;
    assert_eq!(first[0].1["id"], id.as_str());
    assert_eq!(first[0].1["attempts"], 0);
    assert_eq!(first[0].1["payload"], "{\"to\":\"a@b.com\"}");
    server.kill9();
    server.restart().await;

    let both = wait_seen(&seen, 2, Duration::from_secs(60)).await;
    assert_eq!(both[1].1["id"], id.as_str(), "the same message came back");
    assert_eq!(both[1].1["attempts"], 1, "the lost delivery counts as an attempt");
    let gap = both[1].0 - both[0].0;
    assert!(gap >= Duration::from_secs(30), "delivered again only after the timeout: {gap:?}");

    // Acknowledged this time: the queue empties and the log shows it.
    let (stats, http, token) = (&format!("{base}/queue/v1/{}/stats", tenant.slug), &http, &tenant.token);
    aqs_testkit::eventually("the message is acknowledged: the queue is empty", || async move {
        get_json(http, stats, token).await["depth"]["total"] == 0
    })
    .await;
    let log = get_json(http, &format!("{base}/api/v1/queues/{}/push/deliveries", tenant.slug), &tenant.session).await;
    assert_eq!(log["deliveries"][0]["outcome"], "acked", "{log}");
    assert_eq!(seen.lock().unwrap().len(), 2, "delivered exactly twice");
}
