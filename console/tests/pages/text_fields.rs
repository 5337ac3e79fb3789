//! Control characters typed into the console's forms (log-in, sign-up, create queue, mint token,
//! the operator's member search) are shown beside their field; nothing reaches PostgreSQL, where a
//! NUL used to be a 500 page.

use super::support::{OPERATOR, PASSWORD, Visitor, spawn_console};
use sqlx::PgPool;

const CONTROLS: [&str; 3] = ["\0", "\r\n", "\u{7f}"];

#[sqlx::test(migrations = "../migrations")]
async fn control_characters_in_emails_are_field_errors(db: PgPool) {
    let app = spawn_console(db).await;
    let mut visitor = Visitor::new(&app);
    for control in CONTROLS {
        let email = format!("ada{control}x@example.com");
        visitor.get("/signup").await;
        let page = visitor.post("/signup", &[("email", &email), ("password", PASSWORD)]).await;
        assert_eq!(page.status, 422, "{}", page.body);
        page.assert_contains("id=\"email-error\">Control characters");
        visitor.get("/login").await;
        let page = visitor.post("/login", &[("email", &email), ("password", PASSWORD)]).await;
        assert_eq!(page.status, 422, "{}", page.body);
        page.assert_contains("id=\"email-error\">Control characters");
    }
    let mut operator = Visitor::new(&app);
    operator.sign_up(OPERATOR).await;
    for encoded in ["%00", "ada%40example.com%0D%0A"] {
        let page = operator.get(&format!("/admin/callback-urls?email={encoded}")).await;
        assert_eq!(page.status, 200, "{}", page.body);
        page.assert_contains("id=\"member-email-error\">Control characters");
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn control_characters_in_queue_and_token_names_are_field_errors(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    for control in CONTROLS {
        let name = format!("image{control}jobs");
        ada.get("/new").await;
        let fields = [
            ("name", name.as_str()),
            ("visibility_timeout_seconds", "30"),
            ("max_attempts", "5"),
            ("payload_size", "1048576"),
            ("intent", "create"),
        ];
        let page = ada.post("/new", &fields).await;
        assert_eq!(page.status, 422, "{}", page.body);
        page.assert_contains("id=\"name-error\">Control characters");
        ada.get("/queues/jobs/tokens").await;
        let page = ada.post("/queues/jobs/tokens", &[("name", &name), ("scopes", "send")]).await;
        assert_eq!(page.status, 422, "{}", page.body);
        page.assert_contains("id=\"token-name-error\">Control characters");
    }
    let list = ada.get("/").await;
    list.assert_lacks("image");
}
