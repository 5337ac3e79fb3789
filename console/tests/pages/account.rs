//! The Account page: change the password (old sessions end, this browser stays in), end one
//! session, delete the account; and the smaller things around logging in: `next` after log-in,
//! the 404 page with the account menu, the create form at the queue limit.

use super::support::{PASSWORD, Visitor, queue_of, spawn_console};
use aqs_core::time::now_ms;
use sqlx::PgPool;

const NEW_PASSWORD: &str = "a much better passphrase";

async fn log_in(visitor: &mut Visitor, email: &str, password: &str) -> super::support::Page {
    visitor.get("/login").await;
    visitor.post("/login", &[("email", email), ("password", password)]).await
}

#[sqlx::test(migrations = "../migrations")]
async fn a_password_change_refuses_a_wrong_current_password_and_ends_the_old_sessions(db: PgPool) {
    let app = spawn_console(db).await;
    let mut laptop = Visitor::new(&app);
    laptop.sign_up("ada@example.com").await;
    let mut phone = Visitor::new(&app);
    assert_eq!(log_in(&mut phone, "ada@example.com", PASSWORD).await.status, 303);

    let page = laptop.get("/account").await;
    assert_eq!(page.status, 200);
    page.assert_contains("id=\"account-email\">ada@example.com");
    assert_eq!(page.body.matches("<tr data-session=").count(), 2, "{}", page.body);
    assert_eq!(page.body.matches("This browser").count(), 1);

    let wrong = laptop
        .post("/account/password", &[("current_password", "not my password"), ("new_password", NEW_PASSWORD)])
        .await;
    assert_eq!(wrong.status, 422);
    wrong.assert_contains("id=\"current-password-error\">This is not your current password.");
    assert_eq!(phone.get("/").await.status, 200, "nothing changed");

    let copied = laptop.cookie("aqs_session").unwrap().to_owned();
    let answer =
        laptop.post("/account/password", &[("current_password", PASSWORD), ("new_password", NEW_PASSWORD)]).await;
    assert_eq!((answer.status, answer.location()), (303, "/account"), "{}", answer.body);
    let fresh = answer.set_cookie("aqs_session").expect("a fresh session for this browser");
    assert!(!fresh.contains(&copied));
    let page = laptop.follow(answer).await;
    assert_eq!(page.status, 200);
    page.assert_contains("Password changed.");
    assert_eq!(page.body.matches("<tr data-session=").count(), 1, "only this browser's session is left");

    // The old cookie of this browser and the other browser's session open nothing any more.
    let mut thief = Visitor::new(&app);
    thief.set_cookie("aqs_session", &copied);
    assert_eq!(thief.get("/account").await.location(), "/login?next=%2Faccount");
    assert_eq!(phone.get("/").await.location(), "/login");
    assert_eq!(log_in(&mut phone, "ada@example.com", PASSWORD).await.status, 422);
    assert_eq!(log_in(&mut phone, "ada@example.com", NEW_PASSWORD).await.status, 303);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_member_ends_one_other_session(db: PgPool) {
    let app = spawn_console(db).await;
    let mut laptop = Visitor::new(&app);
    laptop.sign_up("ada@example.com").await;
    let mut phone = Visitor::new(&app);
    log_in(&mut phone, "ada@example.com", PASSWORD).await;

    let page = laptop.get("/account").await;
    // The row that is not "This browser" is the phone's.
    let rows: Vec<&str> = page.body.split("<tr data-session=\"").skip(1).collect();
    let other = rows.iter().find(|row| !row.contains("This browser")).expect("the phone's session");
    let id = &other[..other.find('"').unwrap()];
    let form = &other[other.find("name=\"form_id\"").unwrap()..];
    let form_id = super::support::Page::input_value_in(&format!("<input {form}"), "form_id").unwrap();

    let answer = laptop.post(&format!("/account/sessions/{id}/end"), &[("form_id", &form_id)]).await;
    assert_eq!((answer.status, answer.location()), (303, "/account"));
    laptop.follow(answer).await.assert_contains("Session ended");
    assert_eq!(phone.get("/").await.location(), "/login", "the phone is logged out");
    assert_eq!(laptop.get("/").await.status, 200, "this browser is not");

    // A replay of the same form is answered, not done again.
    let replay = laptop.post(&format!("/account/sessions/{id}/end"), &[("form_id", &form_id)]).await;
    assert_eq!(replay.status, 303);
    laptop.follow(replay).await.assert_contains("already sent");
}

#[sqlx::test(migrations = "../migrations")]
async fn deleting_the_account_takes_its_queues_and_it_cannot_log_in(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("Jobs", "5").await;
    let queue = queue_of(&app, "ada@example.com", "jobs").await;
    super::support::publish(&app, &queue, "{}", "application/json").await;
    let mut bea = Visitor::new(&app);
    bea.sign_up("bea@example.com").await;
    bea.create_queue("Theirs", "5").await;

    ada.get("/account").await;
    let wrong = ada.post("/account/delete", &[("confirm_email", "bea@example.com")]).await;
    assert_eq!(wrong.status, 422);
    wrong.assert_contains(
        "id=\"confirm-email-error\">That is not your account&#39;s email; type ada@example.com exactly.",
    );
    assert_eq!(ada.get("/queues/jobs").await.status, 200, "nothing was deleted");

    ada.get("/account").await;
    let answer = ada.post("/account/delete", &[("confirm_email", "ada@example.com")]).await;
    assert_eq!((answer.status, answer.location()), (303, "/signup"), "{}", answer.body);
    assert!(answer.set_cookie("aqs_session").unwrap().contains("Max-Age=0"));
    ada.follow(answer).await.assert_contains("Your account was deleted");

    assert!(app.engine.stats(queue.id, now_ms()).await.unwrap().is_none(), "the queue's messages are gone");
    assert_eq!(log_in(&mut ada, "ada@example.com", PASSWORD).await.status, 422, "no such account any more");
    assert_eq!(bea.get("/queues/theirs").await.status, 200, "another member's queue stays");
}

#[sqlx::test(migrations = "../migrations")]
async fn log_in_lands_on_the_page_asked_for_and_never_off_site(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("Jobs", "5").await;
    ada.post("/logout", &[]).await;

    let asked = ada.get("/queues/jobs/tokens").await;
    assert_eq!(asked.location(), "/login?next=%2Fqueues%2Fjobs%2Ftokens");
    let form = ada.get(asked.location()).await;
    form.assert_contains("name=\"next\" value=\"/queues/jobs/tokens\"");
    let answer = ada
        .post("/login", &[("email", "ada@example.com"), ("password", PASSWORD), ("next", "/queues/jobs/tokens")])
        .await;
    assert_eq!((answer.status, answer.location()), (303, "/queues/jobs/tokens"));
    assert_eq!(ada.follow(answer).await.status, 200);

    for evil in ["https://evil.example.com/", "//evil.example.com/x", "/\\evil.example.com", "javascript:alert(1)"] {
        ada.get("/").await;
        ada.post("/logout", &[]).await;
        let query = form_urlencoded::byte_serialize(evil.as_bytes()).collect::<String>();
        let form = ada.get(&format!("/login?next={query}")).await;
        form.assert_lacks("name=\"next\"");
        let answer = ada.post("/login", &[("email", "ada@example.com"), ("password", PASSWORD), ("next", evil)]).await;
        assert_eq!((answer.status, answer.location()), (303, "/"), "{evil}");
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn the_404_page_keeps_the_account_menu(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    let page = ada.get("/queues/no-such-queue").await;
    assert_eq!(page.status, 404);
    page.assert_contains("<h1>Not found</h1>");
    page.assert_contains("<nav class=\"account\"");
    page.assert_contains("href=\"/account\"");
    page.assert_contains("action=\"/logout\"");

    // Logged out, the operator pages stay a bare 404.
    let mut guest = Visitor::new(&app);
    let page = guest.get("/admin/hosts").await;
    assert_eq!(page.status, 404);
    page.assert_lacks("<nav class=\"account\"");
}

#[sqlx::test(migrations = "../migrations")]
async fn at_the_queue_limit_the_create_form_is_disabled_with_the_reason(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    let form = ada.get("/new").await;
    form.assert_lacks("id=\"queue-limit\"");
    form.assert_lacks(" disabled");
    for n in 0..aqs_core::limits::QUEUES_PER_MEMBER {
        ada.create_queue(&format!("queue {n}"), "5").await;
    }
    let form = ada.get("/new").await;
    assert_eq!(form.status, 200);
    form.assert_contains("id=\"queue-limit\">This team has 10 queues, the most it may have.");
    form.assert_contains("<fieldset class=\"bare stack\" disabled aria-describedby=\"queue-limit\">");
}
