//! Every POST needs the CSRF token of the visitor's own session: missing or foreign is a 403 page.

use super::support::{PASSWORD, Visitor, spawn_console};
use sqlx::PgPool;

#[sqlx::test(migrations = "../migrations")]
async fn forms_without_a_valid_token_are_refused(db: PgPool) {
    let app = spawn_console(db).await;

    let mut guest = Visitor::new(&app);
    guest.get("/login").await;
    let page = guest.post("/login", &[("email", "a@example.com"), ("password", PASSWORD), ("csrf", "")]).await;
    assert_eq!(page.status, 403);
    page.assert_contains("The form has expired");
    let mut no_cookie = Visitor::new(&app);
    let page = no_cookie.post("/signup", &[("email", "a@example.com"), ("password", PASSWORD), ("csrf", "x")]).await;
    assert_eq!(page.status, 403, "no binding cookie at all");

    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    let mut bob = Visitor::new(&app);
    bob.sign_up("bob@example.com").await;
    let bobs_token = bob.csrf.clone().unwrap();
    assert_ne!(ada.csrf, bob.csrf, "a token is bound to its session");

    let fields = [("name", "jobs"), ("intent", "create")];
    let page = ada.post("/new", &[fields[0], fields[1], ("csrf", "")]).await;
    assert_eq!(page.status, 403);
    let page = ada.post("/new", &[fields[0], fields[1], ("csrf", &bobs_token)]).await;
    assert_eq!(page.status, 403, "another session's token");
    let page = ada.post("/logout", &[("csrf", "forged")]).await;
    assert_eq!(page.status, 403);
    assert!(page.headers.get("content-type").unwrap().to_str().unwrap().starts_with("text/html"));

    // Nothing was created; with the right token the same form works.
    ada.get("/").await.assert_contains("No queues yet");
    assert_eq!(ada.create_queue("jobs", "5").await.status, 200);
}
