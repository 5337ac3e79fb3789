//! The Messages tab with real traffic: every state with its time, paging past the first page, the
//! detail with the body byte for byte, purging the waiting messages; sending, receiving and
//! acknowledging or returning in the browser, safe to reload; the last hour per minute.

use super::support::{Page, Visitor, publish, queue_of, spawn_console};
use aqs_core::time::now_ms;
use aqs_engine::{ConsumeOutcome, NewMessage};
use sqlx::PgPool;

/// The address of the "Next page" link.
pub fn next_page(page: &Page) -> Option<String> {
    let marker = "rel=\"next\" href=\"";
    let start = page.body.find(marker)? + marker.len();
    let end = page.body[start..].find('"')?;
    Some(page.body[start..start + end].replace("&#38;", "&").replace("&amp;", "&"))
}

/// The value of `name` in the form whose element id is `form`.
fn form_field(page: &Page, form: &str, name: &str) -> String {
    let at = page.body.find(&format!("id=\"{form}\"")).unwrap_or_else(|| panic!("no form {form}:\n{}", page.body));
    Page::input_value_in(&page.body[at..], name).unwrap()
}

#[sqlx::test(migrations = "../migrations")]
async fn every_state_shows_with_its_time_pages_run_past_the_first_and_purge_empties_the_waiting(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    let queue = queue_of(&app, "ada@example.com", "jobs").await;
    publish(&app, &queue, r#"{"b":1,"a":2}"#, "application/json").await;
    for i in 0..54 {
        publish(&app, &queue, &format!("m{i}"), "text/plain").await;
    }
    let delayed = NewMessage { delay_ms: 600_000, ..NewMessage::text("later") };
    app.engine.publish(queue.id, &[delayed], now_ms()).await.unwrap();
    let ConsumeOutcome::Delivered { deliveries, .. } =
        app.engine.consume(queue.id, 1, 120_000, now_ms(), 0).await.unwrap()
    else {
        panic!("no delivery");
    };
    let leased = &deliveries[0];

    let first = ada.get("/queues/jobs/messages").await;
    assert_eq!(first.status, 200, "{}", first.body);
    first.assert_contains("1 in flight");
    first.assert_contains("<span class=\"badge state-in-flight\">In flight</span>");
    // Each label reads before the exact time and, once the script makes it relative, alone.
    first.assert_contains("Lease ends</span> <time datetime=");
    first.assert_contains("><span class=\"when-word\">at </span>");
    first.assert_lacks("Lease until");
    first.assert_contains("<span class=\"badge state-ready\">Ready</span>");
    first.assert_contains(&leased.message.to_string());
    first.assert_lacks("m53");
    first.assert_lacks("state-delayed");
    let next = next_page(&first).expect("a next page");
    let second = ada.get(&next).await;
    second.assert_contains("m53");
    second.assert_contains("<span class=\"badge state-delayed\">Delayed</span>");
    second.assert_contains("Due</span> <time datetime=");
    second.assert_lacks(&leased.message.to_string());

    // The detail: the body exactly as sent, key order kept, pretty-printed on request in order.
    let view = ada.get(&format!("/queues/jobs/messages/view?entry={}", leased.stream_id)).await;
    assert_eq!(view.status, 200, "{}", view.body);
    view.assert_contains("<code>{&#34;b&#34;:1,&#34;a&#34;:2}</code>");
    view.assert_contains("Exactly as sent.");
    assert_eq!(view.text_of("message-state").as_deref(), Some("In flight"));
    assert_eq!(view.text_of("message-attempts").as_deref(), Some("1"));
    let pretty = ada.get(&format!("/queues/jobs/messages/view?entry={}&pretty=1", leased.stream_id)).await;
    pretty.assert_contains("{\n  &#34;b&#34;: 1,\n  &#34;a&#34;: 2\n}");
    assert_eq!(ada.get("/queues/jobs/messages/view?entry=1-0").await.status, 404);
    assert_eq!(ada.get("/queues/jobs/messages/view?entry=nonsense").await.status, 404);

    // Purge: the 54 waiting go; the leased and the delayed stay. A resubmission does nothing.
    let confirm = ada.get("/queues/jobs/messages/purge").await;
    confirm.assert_contains("Purge the waiting messages of this queue?");
    let purge_form = confirm.input_value("form_id").unwrap();
    let done = ada.post("/queues/jobs/messages/purge", &[("form_id", &purge_form)]).await;
    assert_eq!(done.location(), "/queues/jobs/messages");
    ada.follow(done).await.assert_contains("Purged 54 waiting messages.");
    let stats = app.engine.stats(queue.id, now_ms()).await.unwrap().unwrap();
    assert_eq!((stats.ready, stats.in_flight, stats.delayed), (0, 1, 1));
    let again = ada.post("/queues/jobs/messages/purge", &[("form_id", &purge_form)]).await;
    ada.follow(again).await.assert_contains("already sent; it was done once and not again");
}

#[sqlx::test(migrations = "../migrations")]
async fn send_receive_and_ack_in_the_browser_and_a_reload_acks_nothing_twice(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    let queue = queue_of(&app, "ada@example.com", "jobs").await;

    // Every field's error at once.
    let send_form = ada.get("/queues/jobs/messages/send").await.input_value("form_id").unwrap();
    let refused = ada
        .post(
            "/queues/jobs/messages/send",
            &[
                ("body", "x"),
                ("content_type", ""),
                ("attributes", "[1]"),
                ("delay_seconds", "-1"),
                ("form_id", &send_form),
            ],
        )
        .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    for field in ["content_type", "attributes", "delay_seconds"] {
        refused.assert_contains(&format!("id=\"{field}-error\""));
    }
    let sent = ada
        .post(
            "/queues/jobs/messages/send",
            &[
                ("body", r#"{"b":1,"a":2}"#),
                ("content_type", "application/json"),
                ("attributes", r#"{"kind": "test"}"#),
                ("group_id", "g-1"),
                ("delay_seconds", "0"),
                ("form_id", &send_form),
            ],
        )
        .await;
    assert!(sent.location().starts_with("/queues/jobs/messages/view?entry="), "{}", sent.body);
    let list = ada.follow(sent).await;
    list.assert_contains("Sent message ");
    let resent = ada
        .post(
            "/queues/jobs/messages/send",
            &[("body", "again"), ("content_type", "text/plain"), ("form_id", &send_form)],
        )
        .await;
    ada.follow(resent).await.assert_contains("already sent");
    assert_eq!(app.engine.stats(queue.id, now_ms()).await.unwrap().unwrap().ready, 1, "sent once");

    // Receive: a lease; the page shows the message and its two actions.
    let receive_form = ada.get("/queues/jobs/messages").await.input_value("form_id").unwrap();
    let received =
        ada.post("/queues/jobs/messages/receive", &[("visibility_seconds", "60"), ("form_id", &receive_form)]).await;
    let at = received.location().to_owned();
    assert!(at.starts_with("/queues/jobs/messages/received/"), "{at}");
    let page = ada.follow(received).await;
    page.assert_contains("<code>{&#34;b&#34;:1,&#34;a&#34;:2}</code>");
    page.assert_contains("Attribute <code>kind</code></dt><dd><code>test</code>");
    assert_eq!(page.text_of("message-state").as_deref(), Some("In flight"));
    page.assert_contains("<dt>Lease ends</dt>");
    page.assert_lacks("acq_");
    // Receiving again with the same form leases nothing more: it shows the same delivery.
    let again =
        ada.post("/queues/jobs/messages/receive", &[("visibility_seconds", "60"), ("form_id", &receive_form)]).await;
    assert_eq!(again.location(), at);
    assert_eq!(app.engine.stats(queue.id, now_ms()).await.unwrap().unwrap().in_flight, 1);

    let ack_form = form_field(&page, "ack-form", "form_id");
    let acked = ada.post(&format!("{at}/ack"), &[("form_id", &ack_form)]).await;
    assert_eq!(acked.location(), "/queues/jobs/messages");
    ada.follow(acked).await.assert_contains("Acknowledged message ");
    let reload = ada.post(&format!("{at}/ack"), &[("form_id", &ack_form)]).await;
    assert_eq!(reload.status, 303, "a reload is answered, not failed: {}", reload.body);
    ada.follow(reload).await.assert_contains("already sent; it was done once and not again");
    let stats = app.engine.stats(queue.id, now_ms()).await.unwrap().unwrap();
    assert_eq!((stats.total, stats.acked_today), (0, 1), "acknowledged once");
    ada.get(&at).await.assert_contains("This delivery is over");

    // Nack: back in the queue at once.
    publish(&app, &queue, "retry me", "text/plain").await;
    let receive_form = ada.get("/queues/jobs/messages").await.input_value("form_id").unwrap();
    let received = ada.post("/queues/jobs/messages/receive", &[("form_id", &receive_form)]).await;
    let at = received.location().to_owned();
    let page = ada.follow(received).await;
    let nack_form = form_field(&page, "nack-form", "form_id");
    let nacked = ada.post(&format!("{at}/nack"), &[("form_id", &nack_form), ("delay_seconds", "0")]).await;
    ada.follow(nacked).await.assert_contains("it is ready again");
    assert_eq!(app.engine.stats(queue.id, now_ms()).await.unwrap().unwrap().ready, 1);

    // Nothing to receive says so.
    app.engine.purge_ready(queue.id, now_ms()).await.unwrap();
    let receive_form = ada.get("/queues/jobs/messages").await.input_value("form_id").unwrap();
    let empty = ada.post("/queues/jobs/messages/receive", &[("form_id", &receive_form)]).await;
    ada.follow(empty).await.assert_contains("No message was ready to receive.");
}

#[sqlx::test(migrations = "../migrations")]
async fn the_last_hour_counts_what_happened_per_minute(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    let queue = queue_of(&app, "ada@example.com", "jobs").await;
    ada.get("/queues/jobs/activity").await.assert_contains("Nothing happened in the last hour.");
    for i in 0..3 {
        publish(&app, &queue, &format!("m{i}"), "text/plain").await;
    }
    let receive_form = ada.get("/queues/jobs/messages").await.input_value("form_id").unwrap();
    let received = ada.post("/queues/jobs/messages/receive", &[("form_id", &receive_form)]).await;
    let at = received.location().to_owned();
    let page = ada.follow(received).await;
    let ack_form = form_field(&page, "ack-form", "form_id");
    ada.post(&format!("{at}/ack"), &[("form_id", &ack_form)]).await;

    let page = ada.get("/queues/jobs/activity").await;
    page.assert_contains("data-refresh=\"/queues/jobs/activity/live\"");
    let live = ada.get("/queues/jobs/activity/live").await;
    assert_eq!(live.text_of("minutes-published").as_deref(), Some("3"), "{}", live.body);
    assert_eq!(live.text_of("minutes-delivered").as_deref(), Some("1"));
    assert_eq!(live.text_of("minutes-acked").as_deref(), Some("1"));
    assert_eq!(live.text_of("minutes-dead").as_deref(), Some("0"));
}

/// The "Send a message" form wakes a long poll waiting on the same process: the engine wakes this
/// process's polls after its write, whoever called it. When the publish route did the waking, the
/// form's message reached such a poll only at its deadline (18.8 s later, measured).
#[sqlx::test(migrations = "../migrations")]
async fn a_message_sent_from_the_console_wakes_a_long_poll_on_the_same_process(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    let queue = queue_of(&app, "ada@example.com", "jobs").await;
    // A long poll of this process, registered as the data plane's polls register.
    let waiter = app.engine.waiters().register(queue.id);
    let woken = waiter.notify.notified();
    tokio::pin!(woken);
    woken.as_mut().enable();

    let send_form = ada.get("/queues/jobs/messages/send").await.input_value("form_id").unwrap();
    let sent = ada
        .post(
            "/queues/jobs/messages/send",
            &[("body", "wake up"), ("content_type", "text/plain"), ("form_id", &send_form)],
        )
        .await;
    assert!(sent.location().starts_with("/queues/jobs/messages/view?entry="), "{}", sent.body);
    // Not a timing check: a poll nobody wakes waits out its deadline, so this would hang.
    tokio::time::timeout(std::time::Duration::from_secs(10), woken).await.expect("the send woke the waiting poll");
}
