//! The operators' Teams page: finding a member's teams, suspending one with a reason (its members
//! see the reason and their forms are refused), lifting it, changing its limits, each audited as
//! the operator; everyone else gets the 404 page.

use super::support::{OPERATOR, Visitor, member_id, spawn_console};
use sqlx::PgPool;

const OWNER: &str = "olga@example.com";

#[sqlx::test(migrations = "../migrations")]
async fn operators_suspend_unsuspend_and_change_limits(db: PgPool) {
    let app = spawn_console(db).await;
    let mut olga = Visitor::new(&app);
    olga.sign_up(OWNER).await;
    olga.create_queue("jobs", "5").await;
    let mut operator = Visitor::new(&app);
    operator.sign_up(OPERATOR).await;
    let team = member_id(&app, OWNER).await;
    let page = format!("/admin/teams/{team}");

    // A member, even the team's owner, does not see the page exist.
    for path in ["/admin/teams".to_owned(), page.clone()] {
        assert_eq!(olga.get(&path).await.status, 404, "{path}");
    }
    olga.get("/").await;
    assert_eq!(olga.post(&format!("{page}/suspend"), &[("reason", "mine")]).await.status, 404);

    let found = operator.get("/admin/teams?email=OLGA%40example.com").await;
    assert_eq!(found.status, 200, "{}", found.body);
    found.assert_contains(&format!(
        "<a href=\"/admin/teams/{team}\">Personal</a> <span class=\"muted\">(personal)</span>"
    ));
    found.assert_contains("1 of 10");
    let none = operator.get("/admin/teams?email=nobody%40example.com").await;
    none.assert_contains("No team has a member with this email.");

    let detail = operator.get(&page).await;
    assert_eq!(detail.status, 200, "{}", detail.body);
    detail.assert_contains(&format!("{OWNER} <span class=\"muted\">(owner)</span>"));
    assert_eq!(detail.text_of("admin-team-status").as_deref(), Some("Active"));

    // A blank reason is refused beside its field.
    let blank = operator.post(&format!("{page}/suspend"), &[("reason", " ")]).await;
    assert_eq!(blank.status, 422, "{}", blank.body);
    assert!(blank.text_of("suspend-reason-error").is_some(), "{}", blank.body);

    let suspended = operator.post(&format!("{page}/suspend"), &[("reason", "unpaid invoices")]).await;
    assert_eq!(suspended.location(), page, "{}", suspended.body);
    let detail = operator.follow(suspended).await;
    detail.assert_contains("Suspended Personal");
    assert!(detail.text_of("admin-team-status").unwrap().starts_with("Suspended since"), "{}", detail.body);
    // The member sees why, and the team's forms are refused.
    let home = olga.get("/").await;
    home.assert_contains("This team is suspended: unpaid invoices.");
    olga.get("/queues/jobs/settings").await;
    let refused = olga.post("/queues/jobs/pause", &[]).await;
    assert_eq!(refused.status, 403, "{}", refused.body);

    operator.get(&page).await;
    let lifted = operator.post(&format!("{page}/unsuspend"), &[]).await;
    assert_eq!(lifted.location(), page);
    operator.follow(lifted).await.assert_contains("Lifted the suspension of Personal.");
    olga.get("/").await.assert_lacks("This team is suspended");

    // Limits: out of range beside the field, then saved.
    let bad = operator.post(&format!("{page}/limits"), &[("max_queues", "0"), ("max_storage_mib", "")]).await;
    assert_eq!(bad.status, 422, "{}", bad.body);
    assert!(bad.text_of("max-queues-error").is_some(), "{}", bad.body);
    let saved = operator.post(&format!("{page}/limits"), &[("max_queues", "25"), ("max_storage_mib", "2048")]).await;
    assert_eq!(saved.location(), page, "{}", saved.body);
    let limits: (i32, Option<i64>) = sqlx::query_as("SELECT max_queues, max_storage_bytes FROM teams WHERE id = $1")
        .bind(team)
        .fetch_one(app.cp.db())
        .await
        .unwrap();
    assert_eq!(limits, (25, Some(2048 * 1024 * 1024)));
    let detail = operator.follow(saved).await;
    assert_eq!(detail.text_of("admin-team-queues").as_deref(), Some("1 of 25"));
    let unbound = operator.post(&format!("{page}/limits"), &[("max_queues", "25"), ("max_storage_mib", "")]).await;
    assert_eq!(unbound.status, 303, "{}", unbound.body);
    let bound: Option<i64> = sqlx::query_scalar("SELECT max_storage_bytes FROM teams WHERE id = $1")
        .bind(team)
        .fetch_one(app.cp.db())
        .await
        .unwrap();
    assert_eq!(bound, None);

    let events: Vec<(String, String)> = sqlx::query_as(
        "SELECT action, actor_kind FROM audit_events WHERE team_id = $1 AND actor_kind = 'operator' ORDER BY at, id",
    )
    .bind(team)
    .fetch_all(app.cp.db())
    .await
    .unwrap();
    let operator_event = |action: &str| (action.to_owned(), "operator".to_owned());
    assert_eq!(
        events,
        [
            operator_event("team.suspended"),
            operator_event("team.unsuspended"),
            operator_event("team.limits_changed"),
            operator_event("team.limits_changed"),
        ]
    );
}
