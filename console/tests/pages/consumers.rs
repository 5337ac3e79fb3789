//! The Consumers tab: with no consumer it says nothing is asking; once a client consumes and
//! acknowledges through the queue API, it lists the token by name, the client address, the user
//! agent read as a device, and the requests, messages and acknowledgements of the last minutes,
//! beside the leases held now (the queue's in-flight count).

use super::support::{Visitor, publish, queue_of, spawn_console};
use serde_json::{Value, json};
use sqlx::PgPool;

#[sqlx::test(migrations = "../migrations")]
async fn a_consumer_is_listed_with_its_token_address_device_and_counts(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    let created = ada.create_queue("jobs", "5").await;
    let token = created.secret().expect("the first token");
    let queue = queue_of(&app, "ada@example.com", "jobs").await;

    let empty = ada.get("/queues/jobs/consumers").await;
    assert_eq!(empty.status, 200, "{}", empty.body);
    empty.assert_contains("aria-current=\"page\">Consumers</a>");
    empty.assert_contains("id=\"no-consumers\"");
    assert_eq!(empty.text_of("leases-held").as_deref(), Some("0"));

    for i in 0..3 {
        publish(&app, &queue, &format!("m{i}"), "text/plain").await;
    }
    let http = reqwest::Client::new();
    let consumed: Value = http
        .post(format!("{}/queue/v1/jobs/consume", app.api))
        .bearer_auth(&token)
        .header("user-agent", "image-worker/2.1 (Linux)")
        .json(&json!({"max_messages": 3}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let receipts: Vec<&str> =
        consumed["messages"].as_array().unwrap().iter().map(|m| m["receipt"].as_str().unwrap()).collect();
    assert_eq!(receipts.len(), 3, "{consumed}");
    let acked = http
        .post(format!("{}/queue/v1/jobs/ack", app.api))
        .bearer_auth(&token)
        .header("user-agent", "image-worker/2.1 (Linux)")
        .json(&json!({"receipts": receipts[..1]}))
        .send()
        .await
        .unwrap();
    assert_eq!(acked.status(), 200);
    // The data plane writes its tallies every few seconds; a test asks for it at once.
    app.data.flush_consumers().await;

    let page = ada.get("/queues/jobs/consumers").await;
    page.assert_lacks("id=\"no-consumers\"");
    page.assert_contains("<th scope=\"row\" data-label=\"Token\">default</th>");
    page.assert_contains("<td data-label=\"Address\"><code class=\"nowrap\">127.0.0.1</code></td>");
    page.assert_contains("<span title=\"image-worker/2.1 (Linux)\">A browser on Linux</span>");
    page.assert_contains("data-label=\"Requests (5 min)\" class=\"num\">1</td>");
    page.assert_contains("data-label=\"Messages (5 min)\" class=\"num\">3</td>");
    page.assert_contains("data-label=\"Acknowledged (5 min)\" class=\"num\">1</td>");
    page.assert_contains("data-label=\"Received − acked (10 min)\" class=\"num\">2</td>");
    assert_eq!(page.text_of("leases-held").as_deref(), Some("2"), "the two unacknowledged are in flight");
    page.assert_contains("which consumer holds each lease is not kept".replace("which", "Which").as_str());
}
