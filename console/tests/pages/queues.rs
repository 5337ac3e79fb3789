//! The queue list and Create queue: the slug preview, defaults, field errors, and the first token
//! shown once with its warning.

use super::support::{Visitor, publish, queue_of, spawn_console};
use sqlx::PgPool;

const WARNING: &str =
    "Treat it as a privileged token and keep it server-side: never put it in browser code or source control.";

#[sqlx::test(migrations = "../migrations")]
async fn create_queue_previews_the_address_then_shows_the_token_once(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;

    let form = ada.get("/new").await;
    form.assert_contains("<label for=\"name\">Name</label>");
    form.assert_contains("value=\"30\"");
    form.assert_contains("value=\"5\"");
    form.assert_contains("1 MiB (included)");

    let preview = ada.post("/new", &[("name", "Image Jobs!"), ("intent", "preview")]).await;
    assert_eq!(preview.status, 200);
    preview.assert_contains("http://127.0.0.1/queue/v1/image-jobs</output>");
    preview.assert_contains("value=\"Image Jobs!\"");
    ada.get("/").await.assert_contains("No queues yet");

    // Empty numbers mean the defaults.
    let answer = ada
        .post(
            "/new",
            &[
                ("name", "Image Jobs!"),
                ("visibility_timeout_seconds", ""),
                ("max_attempts", ""),
                ("payload_size", "1048576"),
                ("intent", "create"),
            ],
        )
        .await;
    assert_eq!(answer.status, 303, "Post/Redirect/Get: {}", answer.body);
    assert!(answer.location().starts_with("/queues/image-jobs/created?shown="), "{}", answer.location());
    let created = ada.follow(answer).await;
    assert_eq!(created.status, 200, "{}", created.body);
    let secret = created.secret().expect("the secret is shown");
    assert!(secret.starts_with("acq_") && secret.len() > 30, "{secret}");
    created.assert_contains(WARNING);
    created.assert_contains("data-copy=\"token-secret\"");
    created.assert_contains("href=\"/queues/image-jobs\"");
    assert_eq!(created.headers.get("cache-control").unwrap(), "no-store");

    let queue = queue_of(&app, "ada@example.com", "image-jobs").await;
    assert_eq!((queue.visibility_timeout_seconds, queue.max_attempts), (30, 5));

    // Never again: not on the tokens tab nor anywhere else.
    let tokens = ada.get("/queues/image-jobs/tokens").await;
    tokens.assert_lacks(&secret);
    tokens.assert_contains(&format!("acq_…{}", &secret[secret.len() - 4..]));
    ada.get("/queues/image-jobs").await.assert_lacks(&secret);
}

#[sqlx::test(migrations = "../migrations")]
async fn create_queue_errors_are_shown_beside_their_field(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.get("/new").await;

    let page = ada.post("/new", &[("name", ""), ("intent", "create")]).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"name-error\">Give the queue a name.");

    let page = ada.post("/new", &[("name", "日本語"), ("intent", "preview")]).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"name-error\">Include at least one letter a-z or digit");

    let page = ada
        .post(
            "/new",
            &[("name", "jobs"), ("visibility_timeout_seconds", "soon"), ("max_attempts", "101"), ("intent", "create")],
        )
        .await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"visibility-error\">Enter a whole number");
    page.assert_contains("value=\"soon\"");

    let page = ada.post("/new", &[("name", "jobs"), ("max_attempts", "101"), ("intent", "create")]).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"attempts-error\">Must be between 1 and 100.");

    let page = ada.post("/new", &[("name", "jobs"), ("payload_size", "7"), ("intent", "create")]).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"payload-error\">Choose one of");

    let page = ada.post("/new", &[("name", &"n".repeat(65)), ("intent", "create")]).await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"name-error\">Use 1 to 64 characters.");

    ada.get("/").await.assert_contains("No queues yet");
}

#[sqlx::test(migrations = "../migrations")]
async fn the_live_slug_preview_answers_with_the_address(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    assert_eq!(ada.get("/new/slug?name=Hello%20World").await.body, "http://127.0.0.1/queue/v1/hello-world");
    assert!(ada.get("/new/slug?name=%21%21").await.body.starts_with("No address yet"));
    assert_eq!(ada.get("/new/slug?name=").await.body, "");
}

#[sqlx::test(migrations = "../migrations")]
async fn the_queue_list_shows_each_queues_figures(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("image jobs", "5").await;
    ada.create_queue("emails", "5").await;
    let queue = queue_of(&app, "ada@example.com", "image-jobs").await;
    publish(&app, &queue, "{}", "application/json").await;
    publish(&app, &queue, "{}", "application/json").await;

    let list = ada.get("/").await;
    list.assert_contains("<a href=\"/queues/image-jobs\">image jobs</a>");
    list.assert_contains("<code class=\"address\">http://127.0.0.1/queue/v1/image-jobs</code>");
    list.assert_contains("<a href=\"/queues/emails\">emails</a>");
    list.assert_contains("<td data-label=\"Depth\" class=\"num\">2</td>");
    list.assert_contains("<td data-label=\"Published today\" class=\"num\">2</td>");
    list.assert_contains("<td data-label=\"Delivered today\" class=\"num\">0</td>");
    list.assert_contains("<td data-label=\"Dead letters\" class=\"num\">0</td>");
}

#[sqlx::test(migrations = "../migrations")]
async fn the_queue_limit_is_a_form_error(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    let member = aqs_control_plane::auth::login(
        &app.cp,
        aqs_control_plane::Credentials { email: "ada@example.com".into(), password: super::support::PASSWORD.into() },
        aqs_control_plane::client_addr::ClientAddr(None),
    )
    .await
    .unwrap()
    .member;
    let caller = aqs_control_plane::Caller::of_member(&app.cp, &member, None, true, Default::default()).await.unwrap();
    for n in 0..aqs_core::limits::QUEUES_PER_MEMBER {
        let input = aqs_control_plane::NewQueue { name: format!("queue {n}"), ..Default::default() };
        aqs_control_plane::queues::create(&app.cp, &caller, input).await.unwrap();
    }
    let list = ada.get("/").await;
    list.assert_lacks("href=\"/new\"");
    list.assert_contains("This team has 10 queues, the most it may have.");
    ada.get("/new").await;
    let page = ada.post("/new", &[("name", "one more"), ("intent", "create")]).await;
    assert_eq!(page.status, 422);
    page.assert_contains(
        "role=\"alert\">This team may have at most 10 queues; delete one to create another, or ask us to raise the limit.",
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn create_queue_shows_every_field_error_at_once(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.get("/new").await;
    let page = ada
        .post(
            "/new",
            &[
                ("name", ""),
                ("visibility_timeout_seconds", "0"),
                ("max_attempts", "500"),
                ("payload_size", "1048576"),
                ("intent", "create"),
            ],
        )
        .await;
    assert_eq!(page.status, 422);
    page.assert_contains("id=\"name-error\">Give the queue a name.");
    page.assert_contains("id=\"visibility-error\">Must be between 1 and 43200.");
    page.assert_contains("id=\"attempts-error\">Must be between 1 and 100.");
    ada.get("/").await.assert_contains("No queues yet");
}
