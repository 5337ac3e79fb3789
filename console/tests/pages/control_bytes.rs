//! A body's control characters on the message page: a browser shows NUL as nothing and a CR as a
//! line break, so "exactly as sent" marks each one visibly (its name in the title) and says how
//! many there are; the rest of the text is untouched.

use super::support::{Visitor, publish, queue_of, spawn_console};
use sqlx::PgPool;

#[sqlx::test(migrations = "../migrations")]
async fn nul_and_cr_are_shown_as_markers(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    let queue = queue_of(&app, "ada@example.com", "jobs").await;
    publish(&app, &queue, "a\0b\r\nc\td", "text/plain").await;
    let list = ada.get("/queues/jobs/messages").await;
    let at = list.body.find("/queues/jobs/messages/view?entry=").expect("a message link");
    let href = &list.body[at..at + list.body[at..].find('"').unwrap()];
    let view = ada.get(href).await;
    view.assert_contains(
        "<code>a<span class=\"ctl\" title=\"NUL (0x00)\">\\0</span>b<span class=\"ctl\" title=\"CR (0x0D)\">\\r</span>\nc\td</code>",
    );
    view.assert_contains("2 control characters shown as escapes on a coloured background");
    view.assert_lacks('\0'.to_string().as_str());
    view.assert_lacks("\r");

    // A plain body has no markers and no note.
    publish(&app, &queue, "plain", "text/plain").await;
    let list = ada.get("/queues/jobs/messages").await;
    let at = list.body.rfind("/queues/jobs/messages/view?entry=").unwrap();
    let view = ada.get(&list.body[at..at + list.body[at..].find('"').unwrap()]).await;
    view.assert_contains("<code>plain</code>");
    view.assert_lacks("id=\"body-controls\"");
}
