//! The Overview (figures, live fragment, chart) and the Messages tab (peek with previews).

use super::support::{Visitor, publish, queue_of, spawn_console};
use sqlx::PgPool;

#[sqlx::test(migrations = "../migrations")]
async fn overview_shows_depth_storage_and_the_chart(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;

    let empty = ada.get("/queues/jobs").await;
    assert_eq!(empty.status, 200);
    assert_eq!(empty.text_of("depth-total").as_deref(), Some("0"));
    assert_eq!(empty.text_of("oldest-age").as_deref(), Some("—"));
    empty.assert_contains("<noscript><meta http-equiv=\"refresh\" content=\"5\"></noscript>");
    empty.assert_contains("data-refresh=\"/queues/jobs/live\"");
    empty.assert_contains("http://127.0.0.1/queue/v1/jobs");
    // The same copyable send snippet as the Connect tab and the created page.
    empty.assert_contains(
        "id=\"snippet-curl\" tabindex=\"0\"><code>curl -X POST \"http://127.0.0.1/queue/v1/jobs/messages\"",
    );
    empty.assert_contains("aria-current=\"page\">Overview</a>");

    let queue = queue_of(&app, "ada@example.com", "jobs").await;
    for _ in 0..3 {
        publish(&app, &queue, r#"{"type":"resize"}"#, "application/json").await;
    }
    let page = ada.get("/queues/jobs").await;
    assert_eq!(page.text_of("depth-total").as_deref(), Some("3"));
    assert_eq!(page.text_of("depth-ready").as_deref(), Some("3"));
    assert_eq!(page.text_of("depth-in-flight").as_deref(), Some("0"));
    assert_eq!(page.text_of("depth-delayed").as_deref(), Some("0"));
    assert_eq!(page.text_of("published-today").as_deref(), Some("3"));
    assert_eq!(page.text_of("stored-bytes").as_deref(), Some("51 B"));
    assert!(page.text_of("oldest-age").unwrap().ends_with(" s"));
    page.assert_contains("of the 1 GiB limit");
    page.assert_contains("<rect class=\"bar published\"");
    page.assert_contains("3 published and 0 delivered over 14 days");
    // The last hour per minute sits beside the 14 days, and refreshes with them.
    assert_eq!(page.text_of("minutes-published").as_deref(), Some("3"));

    // The fragment the script polls: the figures alone, no layout.
    let live = ada.get("/queues/jobs/live").await;
    assert_eq!(live.status, 200);
    assert_eq!(live.text_of("depth-ready").as_deref(), Some("3"));
    assert_eq!(live.text_of("minutes-published").as_deref(), Some("3"));
    live.assert_lacks("<html");
}

#[sqlx::test(migrations = "../migrations")]
async fn messages_tab_lists_bodies_as_sent(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    ada.get("/queues/jobs/messages").await.assert_contains("The queue holds no message.");

    let queue = queue_of(&app, "ada@example.com", "jobs").await;
    publish(&app, &queue, r#"{"type":"resize","key":"avatars/42.png"}"#, "application/json").await;
    publish(&app, &queue, "plain <b>text</b>", "text/plain").await;
    let page = ada.get("/queues/jobs/messages").await;
    assert_eq!(page.status, 200);
    // Keys in the order they were sent, never re-sorted.
    page.assert_contains("<code>{&#34;type&#34;:&#34;resize&#34;,&#34;key&#34;:&#34;avatars/42.png&#34;}</code>");
    page.assert_contains("plain &#60;b&#62;text&#60;/b&#62;");
    // Kept on one line in the table.
    page.assert_contains("<code class=\"nowrap\">application/json</code>");
    page.assert_contains("<td data-label=\"Attempts\" class=\"num\">0</td>");
    let peeked = app.engine.peek(queue.id, 10, aqs_core::time::now_ms()).await.unwrap().unwrap();
    page.assert_contains(&peeked[0].id);
}

/// The chart of the last hour as the server writes it, as a browser without JavaScript gets it.
fn plot<'a>(page: &'a super::support::Page, chart: &str) -> &'a str {
    let start = page.body.find(&format!("data-chart=\"{chart}\"")).unwrap_or_else(|| panic!("no chart {chart}"));
    let end = start + page.body[start..].find("</svg>").unwrap();
    &page.body[start..end]
}

#[sqlx::test(migrations = "../migrations")]
async fn the_last_hour_reads_without_javascript(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    let queue = queue_of(&app, "ada@example.com", "jobs").await;
    for _ in 0..3 {
        publish(&app, &queue, "x", "text/plain").await;
    }
    for path in ["/queues/jobs", "/queues/jobs/activity"] {
        let page = ada.get(path).await;
        // The legend: the hour's totals, each series' key drawn as its line, no square swatches.
        assert_eq!(page.text_of("minutes-when").as_deref(), Some("Last hour"));
        assert_eq!(page.text_of("minutes-published").as_deref(), Some("3"));
        assert_eq!(page.text_of("minutes-acked").as_deref(), Some("0"));
        let legend = &page.body[page.body.find("id=\"minutes-legend\"").unwrap()..];
        let legend = &legend[..legend.find("</ul>").unwrap()];
        assert!(!legend.contains("swatch") && legend.matches("<svg class=\"key\"").count() == 4, "{legend}");

        let minutes = plot(&page, "minutes");
        // A label every 10 minutes: six in any hour.
        assert_eq!(minutes.matches("class=\"axis x\"").count(), 6, "{minutes}");
        // Series at zero draw nothing and come first; the axis comes after every line.
        assert!(minutes.contains("<path class=\"line acked\" d=\"\">"), "{minutes}");
        let first_drawn = minutes.find("class=\"line ").unwrap();
        assert!(!minutes[first_drawn..].starts_with("class=\"line published\""), "a zero series first");
        assert!(minutes.find("class=\"baseline\"").unwrap() > minutes.rfind("class=\"line ").unwrap());
        // Each minute's values in its tooltip, and in the table.
        assert!(minutes.contains(": Published 3, Delivered 0, Acknowledged 0, Dead-lettered 0</title>"), "{minutes}");
        page.assert_contains("id=\"minutes-table\"");
    }

    // Age and latency beside the counts, per minute and per day: nothing acknowledged yet.
    let page = ada.get("/queues/jobs").await;
    plot(&page, "timing-minutes");
    plot(&page, "timing-days");
    assert!(page.text_of("timing-minutes-age").unwrap().starts_with("max "));
    assert_eq!(page.text_of("timing-minutes-p50").as_deref(), Some("—"));
    assert_eq!(page.text_of("timing-days-p99").as_deref(), Some("—"));
    page.assert_contains("<summary>Age and latency per minute</summary>");
    page.assert_contains("<summary>Age and latency per day</summary>");
}
