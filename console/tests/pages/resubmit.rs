//! Reload, Back and resubmit: every state-changing form redirects after acting, and a replayed
//! submission (same one-time form id) is answered with the first result, never done twice.
//! Secrets are shown on the first view of the page after the redirect only.

use super::push::{authorise, target};
use super::support::{OPERATOR, Page, TestConsole, Visitor, queue_of, spawn_console};
use sqlx::PgPool;

const CREATE: [(&str, &str); 5] = [
    ("name", "Image Jobs"),
    ("visibility_timeout_seconds", "30"),
    ("max_attempts", "5"),
    ("payload_size", "1048576"),
    ("intent", "create"),
];

/// Ada, signed up and on the create form, with that form's one-time id.
async fn ada_on_the_create_form(app: &TestConsole) -> (Visitor, String) {
    let mut ada = Visitor::new(app);
    ada.sign_up("ada@example.com").await;
    ada.get("/new").await;
    let form_id = ada.form_id.clone().expect("the form carries a one-time id");
    (ada, form_id)
}

/// The fields of the create form as a browser posts them, with its one-time id.
fn create_fields(form_id: &str) -> Vec<(&str, &str)> {
    let mut fields = CREATE.to_vec();
    fields.push(("form_id", form_id));
    fields
}

#[sqlx::test(migrations = "../migrations")]
async fn replaying_the_create_queue_post_makes_no_second_queue(db: PgPool) {
    let app = spawn_console(db).await;
    let (mut ada, form_id) = ada_on_the_create_form(&app).await;
    let fields = create_fields(&form_id);

    let first = ada.post("/new", &fields).await;
    assert_eq!(first.status, 303, "{}", first.body);
    let location = first.location().to_owned();
    let shown = ada.follow(first).await;
    let secret = shown.secret().expect("the first token, shown once");

    // A reload of the page after the redirect: the queue, but the secret no more.
    let reload = ada.get(&location).await;
    assert_eq!(reload.status, 200);
    reload.assert_lacks(&secret);
    assert_eq!(reload.secret(), None);
    reload.assert_contains("shown once and is not shown again");

    // Back and resubmit: the same form id is answered with the first result.
    let replay = ada.post("/new", &fields).await;
    assert_eq!((replay.status, replay.location()), (303, location.as_str()));
    let page = ada.follow(replay).await;
    page.assert_contains("already sent; it was done once and not again");
    assert_eq!(page.secret(), None);

    let list = ada.get("/").await;
    assert_eq!(list.body.matches("href=\"/queues/image-jobs\"").count(), 1, "{}", list.body);
    assert!(!list.body.contains("image-jobs-2"), "no second queue: {}", list.body);
    let tokens = ada.get("/queues/image-jobs/tokens").await;
    assert_eq!(tokens.body.matches("data-label=\"Name\">default</th>").count(), 1);
}

#[sqlx::test(migrations = "../migrations")]
async fn replaying_a_mint_makes_no_second_token(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    ada.get("/queues/jobs/tokens").await;
    let form_id = ada.form_id.clone().expect("the mint form carries a one-time id");
    let fields = [("name", "worker"), ("scopes", "consume"), ("form_id", form_id.as_str())];

    let first = ada.post("/queues/jobs/tokens", &fields).await;
    let location = first.location().to_owned();
    let created = ada.follow(first).await;
    let secret = created.secret().expect("the secret, once");
    let reload = ada.get(&location).await;
    assert_eq!(reload.secret(), None, "a reload shows the secret no more");
    reload.assert_lacks(&secret);

    let replay = ada.post("/queues/jobs/tokens", &fields).await;
    assert_eq!((replay.status, replay.location()), (303, location.as_str()));
    let list = ada.get("/queues/jobs/tokens").await;
    assert_eq!(list.body.matches("data-label=\"Name\">worker</th>").count(), 1, "{}", list.body);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_form_without_its_one_time_id_acts_not(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.get("/new").await;
    let page = ada.post("/new", &[CREATE.as_slice(), &[("form_id", "")]].concat()).await;
    assert_eq!(page.status, 400);
    ada.get("/").await.assert_contains("No queues yet");
}

#[sqlx::test(migrations = "../migrations")]
async fn replaying_rotate_secret_does_not_retire_the_new_secret(db: PgPool) {
    let app = spawn_console(db.clone()).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    let mut operator = Visitor::new(&app);
    operator.sign_up(OPERATOR).await;
    authorise(&mut operator, "ada@example.com", "http://localhost:9/").await;
    ada.get("/queues/jobs/push").await;
    let on = ada.post("/queues/jobs/push", &target("http://localhost:9/h", "30")).await;
    let original = ada.follow(on).await.signing_secret().expect("the first secret");

    ada.get("/queues/jobs/push/rotate-secret").await;
    let form_id = ada.form_id.clone().expect("the confirmation carries a one-time id");
    let first = ada.post("/queues/jobs/push/rotate-secret", &[("form_id", form_id.as_str())]).await;
    let location = first.location().to_owned();
    let rotated = ada.follow(first).await.signing_secret().expect("the new secret, once");
    assert_eq!(ada.get(&location).await.signing_secret(), None, "a reload shows it no more");

    let replay = ada.post("/queues/jobs/push/rotate-secret", &[("form_id", form_id.as_str())]).await;
    assert_eq!((replay.status, replay.location()), (303, location.as_str()));
    let queue = queue_of(&app, "ada@example.com", "jobs").await;
    let (secret, previous): (String, Option<String>) =
        sqlx::query_as("SELECT secret, previous_secret FROM push_targets WHERE queue_id = $1")
            .bind(queue.id.0)
            .fetch_one(&db)
            .await
            .unwrap();
    assert_eq!(secret, rotated, "the new secret still signs");
    assert_eq!(previous.as_deref(), Some(original.as_str()), "the old one keeps its 24 hours");
}

#[sqlx::test(migrations = "../migrations")]
async fn replaying_an_old_pause_does_not_pause_a_resumed_queue(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    ada.get("/queues/jobs/settings").await;
    let page = ada.get("/queues/jobs/settings").await;
    let marker = "action=\"/queues/jobs/pause\">";
    let at = page.body.find(marker).expect("the pause form") + marker.len();
    let pause_id = Page::input_value_in(&page.body[at..], "form_id").expect("the pause form's id");

    let paused = ada.post("/queues/jobs/pause", &[("form_id", pause_id.as_str())]).await;
    ada.follow(paused).await.assert_contains("Queue paused");
    let resumed = ada.post("/queues/jobs/resume", &[]).await;
    ada.follow(resumed).await.assert_contains("Queue resumed.");

    let replay = ada.post("/queues/jobs/pause", &[("form_id", pause_id.as_str())]).await;
    ada.follow(replay).await.assert_contains("already sent; it was done once and not again");
    assert!(!queue_of(&app, "ada@example.com", "jobs").await.paused, "the replay paused nothing");
}

#[sqlx::test(migrations = "../migrations")]
async fn replaying_a_token_revoke_or_an_added_domain_is_answered_not_repeated(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    let list = ada.get("/queues/jobs/tokens").await;
    let at = list.body.find("/tokens/").and_then(|i| list.body[i..].find("/revoke").map(|j| (i, j))).unwrap();
    let revoke_path = format!("/queues/jobs{}", &list.body[at.0..at.0 + at.1 + "/revoke".len()]);
    ada.get(&revoke_path).await;
    let form_id = ada.form_id.clone().expect("the confirmation carries a one-time id");
    let first = ada.post(&revoke_path, &[("form_id", &form_id)]).await;
    assert_eq!((first.status, first.location()), (303, "/queues/jobs/tokens"));
    ada.follow(first).await.assert_contains("revoked");
    let replay = ada.post(&revoke_path, &[("form_id", &form_id)]).await;
    assert_eq!((replay.status, replay.location()), (303, "/queues/jobs/tokens"));
    ada.follow(replay).await.assert_contains("already sent; it was done once and not again");

    ada.get("/hosts").await;
    let form_id = ada.form_id.clone().expect("the hosts page's forms carry one-time ids");
    let fields = [("name", "example.test"), ("form_id", form_id.as_str())];
    let first = ada.post("/hosts/domains", &fields).await;
    ada.follow(first).await.assert_contains("Added example.test.");
    let replay = ada.post("/hosts/domains", &fields).await;
    assert_eq!((replay.status, replay.location()), (303, "/hosts"), "{}", replay.body);
    let page = ada.follow(replay).await;
    page.assert_contains("already sent");
    page.assert_lacks("already exists");
    assert_eq!(page.body.matches("<tr data-domain=\"example.test\"").count(), 1);
}

/// A double click on "Create queue" posts the form twice, the second while the first is still
/// creating the queue: both answers lead to the page that shows the queue's token.
#[sqlx::test(migrations = "../migrations")]
async fn a_double_click_on_create_leads_both_submissions_to_the_token(db: PgPool) {
    let app = spawn_console(db).await;
    let (mut ada, form_id) = ada_on_the_create_form(&app).await;
    let fields = create_fields(&form_id);

    let mut same_tab = ada.clone();
    let (first, second) = tokio::join!(ada.post("/new", &fields), same_tab.post("/new", &fields));
    assert_eq!((first.status, second.status), (303, 303), "{}\n{}", first.body, second.body);
    assert!(first.location().starts_with("/queues/image-jobs"), "{}", first.location());
    assert_eq!(first.location(), second.location(), "both clicks lead to the created queue");
    // The browser shows the answer to the last click; that page shows the token.
    let shown = same_tab.follow(second).await;
    assert!(shown.secret().is_some(), "the token, shown once: {}", shown.body);
    let list = ada.get("/").await;
    assert_eq!(list.body.matches("href=\"/queues/image-jobs\"").count(), 1, "{}", list.body);
}

/// The first of two clicks is abandoned by the browser (it closes the connection) while the queue
/// is being created: the creation still finishes and says where its token is shown, so the second
/// click lands there instead of on a page without it.
#[sqlx::test(migrations = "../migrations")]
async fn a_create_whose_browser_left_still_leads_the_next_click_to_its_token(db: PgPool) {
    use tokio::io::AsyncWriteExt;
    let app = spawn_console(db.clone()).await;
    let (mut ada, form_id) = ada_on_the_create_form(&app).await;
    let fields = create_fields(&form_id);

    // Holds the creation at its insert until the browser has gone.
    let mut lock = db.begin().await.unwrap();
    sqlx::query("LOCK TABLE queues IN SHARE ROW EXCLUSIVE MODE").execute(&mut *lock).await.unwrap();
    let csrf = ada.csrf.clone().expect("the form's CSRF token");
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields.iter().copied().chain([("csrf", csrf.as_str())]))
        .finish();
    let address = app.base.trim_start_matches("http://");
    let mut browser = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!(
        "POST /new HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {}\r\nCookie: {}\r\n\r\n{body}",
        body.len(),
        ada.cookie_line()
    );
    browser.write_all(request.as_bytes()).await.unwrap();
    wait_for_a_waiting_insert(&db).await;
    drop(browser);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    lock.rollback().await.unwrap();

    let second = ada.post("/new", &fields).await;
    assert_eq!(second.status, 303, "{}", second.body);
    assert!(second.location().starts_with("/queues/image-jobs"), "the created queue, not {}", second.location());
    let shown = ada.follow(second).await;
    assert!(shown.secret().is_some(), "the token, shown once: {}", shown.body);
}

/// Waits until a statement is blocked on the lock the test holds: the creation has begun.
async fn wait_for_a_waiting_insert(db: &PgPool) {
    for _ in 0..200 {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
        )
        .fetch_one(db)
        .await
        .unwrap();
        if waiting > 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("the creation never reached the queues table");
}
