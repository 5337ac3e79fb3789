//! Message mode's leasing ahead of its requests: what it leased and did not send goes back at once
//! when the target changes, and a message that waited too long for a free place goes back to be
//! leased afresh instead of being sent on a lease too short for the handler's timeout.

use crate::helpers::spawn_app;
use crate::push_handler::{Reply, handler, record};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_changed_target_gets_at_once_and_uncounted_what_the_old_one_leased_but_had_not_sent() {
    let app = spawn_app().await;
    let queue = app.queue_with(|meta| meta.max_attempts = 1).await;
    let old = handler(|_, _| Reply::status(200).after(Duration::from_secs(2))).await;
    let mut one_place = record(&queue, &old.url);
    one_place.concurrency = 1;
    for i in 0..3 {
        app.publish_text(&queue, &format!("m{i}")).await;
    }
    app.set_push(&queue, &one_place).await;
    // The old target holds one message in its handler and the others leased, ready to send.
    old.wait_for(1, WAIT).await;

    let new = handler(|_, _| Reply::status(200)).await;
    app.set_push(&queue, &record(&queue, &new.url)).await;
    // Their leases (timeout + margin, 10 s) would outlast this wait.
    let seen = new.wait_for(2, Duration::from_secs(4)).await;
    assert!(seen.iter().all(|s| s.body["attempts"] == 0), "the handed-back leases were not deliveries");
    app.wait_drained(&queue, WAIT).await;
    assert_eq!(old.seen().len(), 1, "the stopped dispatcher sent nothing more");
    assert!(app.state.engine.dead_letters(queue.id, 10).await.unwrap().unwrap().is_empty());
}

#[tokio::test]
async fn a_message_that_waited_for_a_place_is_sent_on_a_fresh_lease() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    // Each answer takes 7 s of an 8 s timeout: the second message waits 7 s for the one place. Sent
    // on the lease taken before that wait (8 s + 5 s margin), it would lose it a second before
    // its answer, be leased again and sent twice.
    let hook = handler(|_, _| Reply::status(200).after(Duration::from_secs(7))).await;
    let mut slow = record(&queue, &hook.url);
    slow.concurrency = 1;
    slow.timeout_seconds = 8;
    let first = app.publish_text(&queue, "first").await;
    let second = app.publish_text(&queue, "second").await;
    app.set_push(&queue, &slow).await;
    app.wait_drained(&queue, Duration::from_secs(25)).await;
    let ids: Vec<_> = hook.seen().iter().map(|s| s.body["id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(ids, [first, second], "each message sent once");
    assert!(hook.seen().iter().all(|s| s.body["attempts"] == 0));
    let log = app.push_log(&queue).await;
    assert_eq!(log.len(), 2, "{log:?}");
    assert!(log.iter().all(|line| line["outcome"] == "acked"), "{log:?}");
}

#[tokio::test]
async fn pausing_stops_the_leasing_at_once_and_only_what_was_leased_ahead_is_still_sent() {
    let app = spawn_app().await;
    let queue = app.queue().await;
    let hook = handler(|_, _| Reply::status(200).after(Duration::from_millis(600))).await;
    let mut one_place = record(&queue, &hook.url);
    one_place.concurrency = 1;
    for i in 0..7 {
        app.publish_text(&queue, &format!("m{i}")).await;
    }
    app.set_push(&queue, &one_place).await;
    // One message in the handler, three leased ahead of it (four per place, message_flow.rs).
    hook.wait_for(1, WAIT).await;
    app.set_paused(&queue, true).await;
    // The three are sent by 1.8 s; a message leased after the pause would arrive by 2.4 s.
    tokio::time::sleep(Duration::from_millis(4000)).await;
    assert_eq!(hook.seen().len(), 4, "the one in flight and the three leased ahead, nothing leased after the pause");
    app.set_paused(&queue, false).await;
    hook.wait_for(7, WAIT).await;
    app.wait_drained(&queue, WAIT).await;
    let ids: std::collections::HashSet<_> = hook.seen().iter().map(|s| s.body["id"].to_string()).collect();
    assert_eq!(ids.len(), 7, "each message sent once");
}
