//! A member sees only their own queues: another member's queue is the 404 page on every tab and
//! every form, and stays untouched.

use super::support::{Visitor, queue_of, spawn_console};
use sqlx::PgPool;

#[sqlx::test(migrations = "../migrations")]
async fn another_members_queue_is_a_404_page_everywhere(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("ada jobs", "5").await;
    let tokens = ada.get("/queues/ada-jobs/tokens").await;
    let at = tokens.body.find("/revoke\"").unwrap();
    let start = tokens.body[..at].rfind("/queues/").unwrap();
    let revoke = format!("{}/revoke", &tokens.body[start..at]);

    let mut bob = Visitor::new(&app);
    bob.sign_up("bob@example.com").await;
    bob.get("/").await.assert_lacks("ada jobs");
    let q = "/queues/ada-jobs";
    for path in [
        q.to_owned(),
        format!("{q}/live"),
        format!("{q}/messages"),
        format!("{q}/messages/purge"),
        format!("{q}/messages/send"),
        format!("{q}/messages/view?entry=1-0"),
        format!("{q}/activity"),
        format!("{q}/activity/live"),
        format!("{q}/dead-letters/view?id=0123456789abcdef0123456789abcdef"),
        format!("{q}/tokens"),
        format!("{q}/dead-letters"),
        format!("{q}/dead-letters/purge"),
        format!("{q}/settings"),
        format!("{q}/push"),
        format!("{q}/push/stop"),
        format!("{q}/push/rotate-secret"),
        revoke.clone(),
    ] {
        let page = bob.get(&path).await;
        assert_eq!(page.status, 404, "GET {path}");
        page.assert_contains("There is nothing here");
        page.assert_lacks("ada jobs");
    }
    let posts: Vec<(String, Vec<(&str, &str)>)> = vec![
        (format!("{q}/tokens"), vec![("name", "stolen"), ("scopes", "send")]),
        (revoke.clone(), vec![]),
        (format!("{q}/dead-letters/purge"), vec![]),
        (format!("{q}/messages/purge"), vec![]),
        (format!("{q}/messages/send"), vec![("body", "stolen"), ("content_type", "text/plain")]),
        (format!("{q}/messages/receive"), vec![]),
        (
            format!("{q}/settings"),
            vec![
                ("visibility_timeout_seconds", "5"),
                ("max_attempts", "1"),
                ("payload_size", "1048576"),
                ("storage_limit_mib", "1"),
            ],
        ),
        (format!("{q}/pause"), vec![]),
        (format!("{q}/push"), vec![("handler_url", "http://localhost:9/stolen")]),
        (format!("{q}/push/stop"), vec![]),
        (format!("{q}/delete"), vec![("confirm_name", "ada jobs")]),
    ];
    for (path, fields) in posts {
        bob.get("/").await;
        let page = bob.post(&path, &fields).await;
        assert_eq!(page.status, 404, "POST {path}: {}", page.body);
    }
    let queue = queue_of(&app, "ada@example.com", "ada-jobs").await;
    assert!(!queue.paused);
    assert_eq!(queue.max_attempts, 5);
    assert!(ada.get("/queues/ada-jobs/tokens").await.body.contains("Never"));
    ada.get("/queues/ada-jobs/tokens").await.assert_lacks("stolen");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_path_that_is_not_a_slug_is_the_404_page(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    for bad in ["JOBS", "jobs-", "jo--bs", "jo_bs", "%FF", &"j".repeat(49)] {
        for path in [format!("/queues/{bad}"), format!("/queues/{bad}/tokens"), format!("/queues/{bad}/push/stop")] {
            let page = ada.get(&path).await;
            assert_eq!(page.status, 404, "GET {path}");
            page.assert_contains("There is nothing here");
        }
    }
}
