//! What an operator's load balancer and supervisor rely on: `/livez` and `/readyz` on every role
//! (readiness naming what it waits for, a store's own reason in the log), and SIGTERM draining
//! (`/readyz` 503 first while requests are still served, then held polls end and the process
//! exits 0).

use crate::harness::{Redis, Server, Tenant, free_port, fresh_database};
use serde_json::{Value, json};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SESSION: &str = "prod-session-secret-0123456789abcdefgh";
const RECEIPT: &str = "prod-receipt-secret-0123456789abcdefgh";

/// `aqs serve` with these settings only, its log captured.
fn serve(port: u16, envs: &[(&str, String)]) -> Child {
    crate::harness::serve_alone(port, envs.iter().map(|(k, v)| (*k, v.as_str())), Stdio::piped())
}

/// The status and JSON of `GET path` once it answers `status`; fails after the tests' patience.
async fn until(port: u16, path: &str, status: u16) -> Value {
    let url = &format!("http://127.0.0.1:{port}{path}");
    aqs_testkit::eventually_some(&format!("{path} answers {status}"), || async move {
        match reqwest::get(url).await {
            Ok(response) if response.status().as_u16() == status => Some(response.json().await.unwrap()),
            _ => None,
        }
    })
    .await
}

fn stop(mut child: Child) -> String {
    child.kill().unwrap();
    let output = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_role_answers_livez_and_readyz_naming_what_it_waits_for() {
    let redis = Redis::start("everysec");
    let database = fresh_database().await;
    let migrated = Command::new(env!("CARGO_BIN_EXE_aqs"))
        .arg("migrate")
        .env("AQS_DATABASE_URL", &database)
        .env("AQS_REDIS_URL", redis.url())
        .status()
        .unwrap();
    assert!(migrated.success());
    let namespace = aqs_testkit::namespace();
    let common = [
        ("AQS_REDIS_URL", redis.url()),
        ("AQS_REDIS_NAMESPACE", namespace),
        ("AQS_SESSION_SECRET", SESSION.to_owned()),
        ("AQS_RECEIPT_SECRET", RECEIPT.to_owned()),
    ];
    let with =
        |extra: &[(&'static str, String)]| common.iter().cloned().chain(extra.iter().cloned()).collect::<Vec<_>>();

    let data_port = free_port();
    let data = serve(data_port, &with(&[("AQS_ROLES", "data".into())]));
    until(data_port, "/livez", 200).await;
    assert_eq!(until(data_port, "/readyz", 200).await, json!({"ok": true, "roles": ["data"]}));

    let console_port = free_port();
    let console =
        serve(console_port, &with(&[("AQS_ROLES", "console".into()), ("AQS_DATABASE_URL", database.clone())]));
    until(console_port, "/livez", 200).await;
    assert_eq!(until(console_port, "/readyz", 200).await, json!({"ok": true, "roles": ["console"]}));

    // A control replica given a database that does not exist starts, is live, is not ready, and
    // says why in its log.
    let wrong = format!("{}_missing", database);
    let control_port = free_port();
    let control = serve(control_port, &with(&[("AQS_ROLES", "control".into()), ("AQS_DATABASE_URL", wrong)]));
    until(control_port, "/livez", 200).await;
    let not_ready = until(control_port, "/readyz", 503).await;
    assert_eq!(not_ready["ok"], false);
    assert_eq!(not_ready["waiting_for"], json!(["postgres"]), "{not_ready}");
    assert_eq!(not_ready["error"], "service_unavailable");
    let log = stop(control);
    assert!(log.contains("does not exist"), "the log names PostgreSQL's reason: {log}");

    // Redis gone: every role says so.
    drop(redis);
    let not_ready = until(data_port, "/readyz", 503).await;
    assert_eq!(not_ready["waiting_for"], json!(["redis"]), "{not_ready}");
    until(data_port, "/livez", 200).await;
    stop(data);
    stop(console);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_turns_readyz_to_503_first_then_ends_polls_and_exits_zero() {
    let redis = Redis::start("everysec");
    let database = fresh_database().await;
    let namespace = aqs_testkit::namespace();
    let server =
        Server::start_with_env(&database, &redis.url(), &namespace, &[("AQS_SHUTDOWN_DRAIN_SECONDS", "2")]).await;
    let tenant = Tenant::sign_up(&server, json!({"name": "drained"})).await;
    let other = Tenant::sign_up(&server, json!({"name": "busy"})).await;
    let port = server.port;
    assert_eq!(until(port, "/readyz", 200).await["ok"], true);

    // A long poll held across the drain.
    let poll = {
        let http = tenant.http.clone();
        let url = format!("{}/queue/v1/{}/consume", tenant.base, tenant.slug);
        let token = tenant.token.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let body = json!({"max_messages": 1, "max_wait_seconds": 20});
            let response = http.post(url).bearer_auth(token).json(&body).send().await.unwrap();
            (response.status().as_u16(), response.json::<Value>().await.unwrap(), started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;

    let signalled = Instant::now();
    let killed = Command::new("kill").args(["-TERM", &server.pid().to_string()]).status().unwrap();
    assert!(killed.success());
    let draining = until(port, "/readyz", 503).await;
    assert_eq!(draining["waiting_for"], json!(["draining"]), "{draining}");
    // Still served while draining: a load balancer may send until its next check.
    let (status, _) = other.post("messages", json!({"body": "sent while draining"})).await;
    assert_eq!(status, 201);

    let (status, answer, held) = poll.await.unwrap();
    assert_eq!(status, 200);
    assert!(held >= Duration::from_millis(1500), "the poll was held through the drain: {held:?}");
    assert_eq!(answer["messages"], json!([]), "a held poll ends empty when the listeners close");
    let mut server = server;
    let status = server.wait_for_exit(Duration::from_secs(15));
    assert_eq!(status.code(), Some(0), "aqs exits 0 after SIGTERM");
    assert!(signalled.elapsed() >= Duration::from_secs(2), "the listeners stayed open for the drain");
}
