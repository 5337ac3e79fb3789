//! The Push tab's delivery log, from real deliveries: the data plane's push supervisor runs, and a
//! tiny handler on loopback acknowledges one message and refuses another for good.

use super::push::{authorise, target};
use super::support::{OPERATOR, Page, Visitor, publish, queue_of, spawn_console_delivering};
use axum::http::StatusCode;
use sqlx::PgPool;
use std::time::{Duration, Instant};

/// A handler that answers 422 to a payload containing "reject" and 200 to anything else.
async fn handler() -> String {
    let app = axum::Router::new().fallback(|body: String| async move {
        if body.contains("reject") { (StatusCode::UNPROCESSABLE_ENTITY, "no thanks") } else { (StatusCode::OK, "ok") }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://localhost:{}/", listener.local_addr().unwrap().port());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

/// Reloads the Push tab until it shows `n` deliveries.
async fn wait_for_deliveries(visitor: &mut Visitor, path: &str, n: usize) -> Page {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let page = visitor.get(path).await;
        let rows = page.body.matches("<td data-label=\"Outcome\">").count();
        if rows >= n {
            return page;
        }
        assert!(Instant::now() < deadline, "{rows} of {n} deliveries shown:\n{}", page.body);
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn delivery_outcomes_are_listed_with_status_and_latency(db: PgPool) {
    let app = spawn_console_delivering(db).await;
    let base = handler().await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    let mut operator = Visitor::new(&app);
    operator.sign_up(OPERATOR).await;
    authorise(&mut operator, "ada@example.com", &base).await;

    ada.get("/queues/jobs/push").await.assert_contains("id=\"no-deliveries\"");
    let url = format!("{base}jobs");
    let on = ada.post("/queues/jobs/push", &target(&url, "30")).await;
    assert_eq!(on.status, 303, "{}", on.body);

    let queue = queue_of(&app, "ada@example.com", "jobs").await;
    publish(&app, &queue, "{\"hello\":1}", "application/json").await;
    let page = wait_for_deliveries(&mut ada, "/queues/jobs/push", 1).await;
    page.assert_contains("<span class=\"badge ok\">Acknowledged</span>");
    page.assert_contains("<td data-label=\"Status\" class=\"num\">200</td>");
    page.assert_contains(" ms</td>");
    page.assert_contains(&format!("<td data-label=\"URL\" class=\"detail\"><code>{url}</code></td>"));
    page.assert_lacks("id=\"no-deliveries\"");

    publish(&app, &queue, "please reject me", "text/plain").await;
    let page = wait_for_deliveries(&mut ada, "/queues/jobs/push", 2).await;
    // Newest first: the refusal, dead-lettered at once with the handler's answer as the detail.
    let refused = page.body.find("<span class=\"badge bad\">Dead-lettered</span>").expect("the refusal");
    let acked = page.body.find("Acknowledged").unwrap();
    assert!(refused < acked, "newest first");
    page.assert_contains("<td data-label=\"Status\" class=\"num\">422</td>");
    page.assert_contains("no thanks");
    page.assert_contains("<time datetime=\"");
    let dead = ada.get("/queues/jobs/dead-letters").await;
    dead.assert_contains("please reject me");
}
