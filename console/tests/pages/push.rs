//! The Push tab: push off, the control plane's rules beside the handler URL field, turning push on
//! (the signing secret shown once), changing the target, rotating the secret, stopping push after a
//! confirmation, CSRF on its forms, and another member's queue.

use super::support::{OPERATOR, Page, Visitor, spawn_console};
use sqlx::PgPool;

/// An operator authorises `prefix` for the member with `email` through the operator page.
pub(super) async fn authorise(operator: &mut Visitor, email: &str, prefix: &str) -> Page {
    operator.get(&format!("/admin/callback-urls?email={email}")).await;
    let page = operator.post("/admin/callback-urls", &[("email", email), ("prefix", prefix)]).await;
    assert_eq!(page.status, 303, "{}", page.body);
    operator.follow(page).await
}

pub(super) fn target<'a>(handler_url: &'a str, timeout: &'a str) -> Vec<(&'static str, &'a str)> {
    vec![
        ("handler_url", handler_url),
        ("mode", "message"),
        ("messages_per_run", "10"),
        ("wait_seconds", "5"),
        ("timeout_seconds", timeout),
        ("concurrency", "10"),
    ]
}

#[sqlx::test(migrations = "../migrations")]
async fn the_push_tab_of_a_queue_without_push(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;

    let page = ada.get("/queues/jobs/push").await;
    assert_eq!(page.status, 200, "{}", page.body);
    page.assert_contains("<a href=\"/queues/jobs/push\" aria-current=\"page\">Push</a>");
    page.assert_contains("<title>Push · jobs · AQS</title>");
    page.assert_contains("Push is off.");
    page.assert_contains("No prefix is authorised for your account yet.</strong> An operator authorises them");
    page.assert_contains("id=\"no-deliveries\"");
    page.assert_contains("Turn on push</button>");
    page.assert_contains(
        "name=\"timeout_seconds\" type=\"number\" inputmode=\"numeric\" min=\"30\" max=\"900\" value=\"30\"",
    );
    page.assert_lacks("Rotate the secret");
    page.assert_lacks("Stop push…");
    // Members see no link to the operator page.
    page.assert_lacks("/admin/callback-urls");
}

#[sqlx::test(migrations = "../migrations")]
async fn the_rules_of_the_handler_url_are_shown_beside_the_field(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    ada.get("/queues/jobs/push").await;

    let page = ada.post("/queues/jobs/push", &target("https://app.example.com/hook", "60")).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"handler-url-error\">Not among the callback URLs authorised for your account");
    page.assert_contains("ask an operator to authorise one");
    page.assert_contains("value=\"https://app.example.com/hook\"");
    page.assert_contains("value=\"60\"");

    let mut operator = Visitor::new(&app);
    operator.sign_up(OPERATOR).await;
    authorise(&mut operator, "ada@example.com", "https://app.example.com/queue").await;
    let page = ada.get("/queues/jobs/push").await;
    page.assert_contains("<li><code>https://app.example.com/queue</code></li>");
    page.assert_contains("Authorised by an operator (ask one to add another)");

    for (url, rule) in [
        ("ftp://app.example.com/queue/x", "The scheme must be http or https, not ftp."),
        ("https://user:pw@app.example.com/queue/x", "Credentials (user:password@) are not allowed in the URL."),
        ("https://app.example.com/queue/x#top", "A #fragment is not allowed in the URL."),
        ("not a url", "Not a valid URL"),
        ("https://app.example.com/queued", "authorised prefixes: https://app.example.com/queue"),
    ] {
        let page = ada.post("/queues/jobs/push", &target(url, "60")).await;
        assert_eq!(page.status, 422, "{url}");
        let error = page.text_of("handler-url-error").unwrap_or_default();
        assert!(error.contains(rule), "{url}: {error}");
        page.assert_contains("aria-invalid=\"true\"");
    }

    // The other fields: numbers parsed here, ranges checked by the control plane.
    let mut fields = target("https://app.example.com/queue/x", "10");
    fields[5] = ("concurrency", "many");
    let page = ada.post("/queues/jobs/push", &fields).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"concurrency-error\">Enter a whole number, such as 30.");
    let page = ada.post("/queues/jobs/push", &target("https://app.example.com/queue/x", "10")).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"timeout-seconds-error\">Must be between 30 and 900.");
    let mut fields = target("https://app.example.com/queue/x", "30");
    fields[1] = ("mode", "batch");
    fields[2] = ("messages_per_run", "500");
    let page = ada.post("/queues/jobs/push", &fields).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"messages-per-run-error\">Must be between 1 and 100.");
    page.assert_contains("value=\"batch\" checked");
    ada.get("/queues/jobs/push").await.assert_contains("Push is off.");
}

#[sqlx::test(migrations = "../migrations")]
async fn turning_push_on_shows_the_secret_once_and_rotation_shows_a_new_one(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    let mut operator = Visitor::new(&app);
    operator.sign_up(OPERATOR).await;
    authorise(&mut operator, "ada@example.com", "http://localhost:9/").await;

    ada.get("/queues/jobs/push").await;
    let answer = ada.post("/queues/jobs/push", &target("http://localhost:9/hooks/jobs", "45")).await;
    assert_eq!(answer.status, 303, "Post/Redirect/Get: {}", answer.body);
    let on = ada.follow(answer).await;
    assert_eq!(on.status, 200, "{}", on.body);
    on.assert_contains("<h2>Push is on</h2>");
    on.assert_contains("This secret is shown once.");
    on.assert_contains("data-copy=\"signing-secret\"");
    let secret = on.signing_secret().expect("the signing secret");
    assert!(secret.starts_with("whsec_"), "{secret}");

    let page = ada.get("/queues/jobs/push").await;
    page.assert_lacks(&secret);
    page.assert_lacks("id=\"signing-secret\"");
    assert_eq!(page.text_of("push-handler-url").as_deref(), Some("http://localhost:9/hooks/jobs"));
    assert_eq!(page.text_of("push-mode").as_deref(), Some("One message per request"));
    page.assert_contains("<dd>45 s</dd>");
    page.assert_contains("Change the push target");
    page.assert_contains("Consumers cannot receive from a queue that pushes.");

    // A change keeps the secret: a flash, no secret.
    let mut fields = target("http://localhost:9/hooks/jobs", "120");
    fields[1] = ("mode", "batch");
    fields[2] = ("messages_per_run", "25");
    let saved = ada.post("/queues/jobs/push", &fields).await;
    assert_eq!(saved.location(), "/queues/jobs/push");
    let page = ada.follow(saved).await;
    page.assert_contains("Push target saved.");
    page.assert_lacks("id=\"signing-secret\"");
    assert_eq!(page.text_of("push-mode").as_deref(), Some("Batch"));
    page.assert_contains("<dt>Messages per run</dt><dd>25</dd>");
    page.assert_contains("<dd>2 min</dd>");
    page.assert_lacks("id=\"previous-secret\"");

    // Rotation: a confirmation that explains the 24 h overlap, then a new secret shown once.
    let confirm = ada.get("/queues/jobs/push/rotate-secret").await;
    assert_eq!(confirm.status, 200);
    confirm.assert_contains("The old secret keeps working for 24 hours");
    confirm.assert_contains("action=\"/queues/jobs/push/rotate-secret\"");
    let answer = ada.post("/queues/jobs/push/rotate-secret", &[]).await;
    assert_eq!(answer.status, 303, "Post/Redirect/Get: {}", answer.body);
    let rotated = ada.follow(answer).await;
    assert_eq!(rotated.status, 200, "{}", rotated.body);
    rotated.assert_contains("<h2>New signing secret</h2>");
    rotated.assert_contains("The old secret keeps signing alongside it for 24 hours; it stops <time");
    rotated.assert_contains("<span class=\"when-word\">at </span>");
    let new_secret = rotated.signing_secret().expect("the new secret");
    assert!(new_secret.starts_with("whsec_"));
    assert_ne!(new_secret, secret);
    let page = ada.get("/queues/jobs/push").await;
    page.assert_lacks(&new_secret);
    page.assert_contains(
        "id=\"previous-secret\">The secret replaced by the last rotation keeps signing requests too; it stops <time",
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn stopping_push_asks_for_confirmation(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    let mut operator = Visitor::new(&app);
    operator.sign_up(OPERATOR).await;
    authorise(&mut operator, "ada@example.com", "http://localhost:9/").await;
    ada.get("/queues/jobs/push").await;
    assert_eq!(ada.post("/queues/jobs/push", &target("http://localhost:9/h", "30")).await.status, 303);

    let push = ada.get("/queues/jobs/push").await;
    push.assert_contains("<a class=\"button danger\" href=\"/queues/jobs/push/stop\">Stop push…</a>");
    let confirm = ada.get("/queues/jobs/push/stop").await;
    assert_eq!(confirm.status, 200);
    confirm.assert_contains("Stop push on “jobs”?");
    confirm.assert_contains("<code>http://localhost:9/h</code>");
    confirm.assert_contains("action=\"/queues/jobs/push/stop\"");
    confirm.assert_contains("Cancel</a>");
    // Showing the confirmation changed nothing.
    ada.get("/queues/jobs/push").await.assert_contains("id=\"push-target\"");

    let done = ada.post("/queues/jobs/push/stop", &[]).await;
    assert_eq!(done.location(), "/queues/jobs/push");
    let page = ada.follow(done).await;
    page.assert_contains("Push stopped: the handler gets no more requests.");
    page.assert_contains("Push is off.");

    // Stopping or rotating again: nothing to do, said plainly.
    let again = ada.post("/queues/jobs/push/stop", &[]).await;
    ada.follow(again).await.assert_contains("Push is not set for this queue");
    let again = ada.get("/queues/jobs/push/rotate-secret").await;
    assert_eq!(again.location(), "/queues/jobs/push");
    assert_eq!(ada.get("/queues/jobs/push/unknown").await.status, 404);

    // Turning it on again starts with a fresh secret.
    ada.get("/queues/jobs/push").await;
    let on = ada.post("/queues/jobs/push", &target("http://localhost:9/h", "30")).await;
    assert!(ada.follow(on).await.signing_secret().is_some());
}

#[sqlx::test(migrations = "../migrations")]
async fn push_forms_need_the_csrf_token(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    let mut operator = Visitor::new(&app);
    operator.sign_up(OPERATOR).await;
    authorise(&mut operator, "ada@example.com", "http://localhost:9/").await;
    ada.get("/queues/jobs/push").await;

    let mut fields = target("http://localhost:9/h", "30");
    fields.push(("csrf", "forged"));
    assert_eq!(ada.post("/queues/jobs/push", &fields).await.status, 403);
    ada.get("/queues/jobs/push").await.assert_contains("Push is off.");

    assert_eq!(ada.post("/queues/jobs/push", &target("http://localhost:9/h", "30")).await.status, 303);
    for path in ["/queues/jobs/push/stop", "/queues/jobs/push/rotate-secret"] {
        assert_eq!(ada.post(path, &[("csrf", "")]).await.status, 403, "{path}");
    }
    let page = operator
        .post("/admin/callback-urls", &[("email", "ada@example.com"), ("prefix", "https://x.example/"), ("csrf", "x")])
        .await;
    assert_eq!(page.status, 403);
    ada.get("/queues/jobs/push").await.assert_contains("id=\"push-target\"");
    operator.get("/admin/callback-urls?email=ada@example.com").await.assert_lacks("https://x.example/");
}

#[sqlx::test(migrations = "../migrations")]
async fn another_members_push_tab_is_a_404_page(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("ada jobs", "5").await;
    let mut operator = Visitor::new(&app);
    operator.sign_up(OPERATOR).await;
    authorise(&mut operator, "ada@example.com", "http://localhost:9/").await;
    ada.get("/queues/ada-jobs/push").await;
    assert_eq!(ada.post("/queues/ada-jobs/push", &target("http://localhost:9/ada", "30")).await.status, 303);

    let mut bob = Visitor::new(&app);
    bob.sign_up("bob@example.com").await;
    for path in ["/queues/ada-jobs/push", "/queues/ada-jobs/push/stop", "/queues/ada-jobs/push/rotate-secret"] {
        let page = bob.get(path).await;
        assert_eq!(page.status, 404, "GET {path}");
        page.assert_lacks("localhost:9/ada");
    }
    bob.get("/").await;
    for (path, fields) in [
        ("/queues/ada-jobs/push", target("http://localhost:9/bob", "30")),
        ("/queues/ada-jobs/push/rotate-secret", vec![]),
        ("/queues/ada-jobs/push/stop", vec![]),
    ] {
        let page = bob.post(path, &fields).await;
        assert_eq!(page.status, 404, "POST {path}: {}", page.body);
    }
    let page = ada.get("/queues/ada-jobs/push").await;
    assert_eq!(page.text_of("push-handler-url").as_deref(), Some("http://localhost:9/ada"));
    page.assert_lacks("id=\"previous-secret\"");
}
