//! The Connect tab: snippets with this queue's address filled in (curl, TypeScript, the Worker
//! runner, Rust) and links to the OpenAPI documents; the curl snippet, run by the real `curl`
//! against the queue API, publishes.

use super::support::{Visitor, queue_of, spawn_console};
use aqs_core::time::now_ms;
use sqlx::PgPool;

/// The text of the `<pre>` with this id, its entities decoded as a browser would.
fn snippet(body: &str, id: &str) -> String {
    let at = body.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no #{id}"));
    let start = at + body[at..].find("<code>").unwrap() + 6;
    let end = start + body[start..].find("</code>").unwrap();
    body[start..end]
        .replace("&gt;", ">")
        .replace("&lt;", "<")
        .replace("&#34;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

#[sqlx::test(migrations = "../migrations")]
async fn the_snippets_name_this_queue_and_the_curl_one_publishes(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    let token = ada.create_queue("Image jobs", "5").await.secret().unwrap();
    let page = ada.get("/queues/image-jobs/connect").await;
    assert_eq!(page.status, 200, "{}", page.body);
    page.assert_contains("aria-current=\"page\">Connect</a>");
    page.assert_contains("href=\"/queue/v1/openapi.json\"");
    page.assert_contains("href=\"/api/v1/openapi.json\"");
    let queue = queue_of(&app, "ada@example.com", "image-jobs").await;
    let typescript = snippet(&page.body, "snippet-typescript");
    assert!(typescript.contains("queue: \"image-jobs\" });"), "{typescript}");
    assert!(typescript.contains("await queue.ack(messages.map((message) => message.receipt));"), "{typescript}");
    assert!(snippet(&page.body, "snippet-worker-run").contains("--queue image-jobs "));
    assert!(snippet(&page.body, "snippet-rust").contains(".queue(\"image-jobs\");"));

    // The curl snippet, as copied, with the queue API's address for the service's (tests serve
    // the queue API on a port of their own).
    let curl = snippet(&page.body, "snippet-curl");
    assert!(curl.contains(&format!("\"{}/messages\"", queue.address)), "{curl}");
    let origin = queue.address.trim_end_matches("/queue/v1/image-jobs");
    let script = curl.replace(origin, &app.api);
    // Off the test's runtime thread, which must keep serving the request curl sends.
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{script} -sS -o /dev/null -w '%{{http_code}}'"))
            .env("AQS_TOKEN", &token)
            .output()
            .expect("curl must be installed")
    })
    .await
    .unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), "201", "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(app.engine.stats(queue.id, now_ms()).await.unwrap().unwrap().ready, 1);
}
