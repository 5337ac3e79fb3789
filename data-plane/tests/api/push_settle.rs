//! Message mode settles many answers per round trip to Redis: with a crowd of deliveries answered
//! at once (ack, retry and dead letter mixed), each message still gets its own outcome, applied to
//! its own lease, and its own line in the push log.

use crate::helpers::spawn_app;
use crate::push_handler::{Reply, handler, record};
use std::collections::HashMap;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(15);

#[tokio::test]
async fn answers_settled_together_each_get_their_own_outcome_and_log_line() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    // "retry-…" fails its first delivery, "dead-…" is refused for good, the rest are taken.
    let hook = handler(|seen, _| {
        let payload = seen.body["payload"].as_str().unwrap_or_default();
        match (payload.split('-').next(), seen.body["attempts"].as_u64()) {
            (Some("retry"), Some(0)) => Reply::status(503).header("retry-after", "0"),
            (Some("dead"), _) => Reply::status(404).body("gone"),
            _ => Reply::status(200),
        }
    })
    .await;
    let mut names = Vec::new();
    for i in 0..40 {
        names.push(match i % 10 {
            3 => format!("retry-{i}"),
            7 => format!("dead-{i}"),
            _ => format!("ok-{i}"),
        });
    }
    let mut ids = HashMap::new();
    for name in &names {
        let id = app.publish_text(&queue, name).await;
        ids.insert(id, name.clone());
    }
    let mut target = record(&queue, &hook.url);
    target.concurrency = 20;
    app.set_push(&queue, &target).await;

    // 40 first deliveries and 4 retries.
    hook.wait_for(44, WAIT).await;
    let dead = app.wait_dead(&queue, 4, WAIT).await;
    app.wait_drained(&queue, WAIT).await;
    let stats = app.state.engine.stats(queue.id, aqs_core::time::now_ms()).await.unwrap().unwrap();
    assert_eq!(stats.acked_today, 36, "32 taken at once and 4 on their retry: {stats:?}");
    assert_eq!(dead.len(), 4);

    let log = app.push_log(&queue).await;
    let mut outcomes: HashMap<&str, Vec<&str>> = HashMap::new();
    // Newest first: reversed, each message's outcomes read in order.
    for line in log.iter().rev() {
        assert_eq!(line["messages"], 1, "{line}");
        let name = &ids[line["message_id"].as_str().unwrap()];
        outcomes.entry(name.as_str()).or_default().push(line["outcome"].as_str().unwrap());
    }
    // The log keeps the last 20 lines only; every line it kept is right.
    assert_eq!(log.len(), 20);
    for (name, seen) in &outcomes {
        let expected: &[&str] = match name.split('-').next() {
            Some("retry") => &["retried", "acked"],
            Some("dead") => &["dead_lettered"],
            _ => &["acked"],
        };
        assert!(expected.ends_with(seen), "{name}: {seen:?}");
    }
}
