//! The audit events of the console's actions that change only Redis: replaying and purging dead
//! letters, purging the waiting messages and deleting one message each write exactly one event
//! naming the member and the queue, written once the change succeeded; a refused form, a form
//! sent again and an action that found nothing to change write none.

use super::support::{Page, TestConsole, Visitor, fail_all, join_team, member_id, publish, queue_of, spawn_console};
use sqlx::PgPool;
use uuid::Uuid;

const OWNER: &str = "olga@example.com";
const ADMIN: &str = "ada@example.com";

const ACTIONS: [&str; 4] = ["dead_letters.replayed", "dead_letters.purged", "messages.purged", "message.deleted"];

/// One event as the tests compare it: action, actor kind, actor email, target kind, target id.
type Seen = (String, String, Option<String>, String, Option<String>);

/// The team's events of the four Redis-only actions, oldest first.
async fn events(app: &TestConsole, team: Uuid) -> Vec<Seen> {
    sqlx::query_as(
        "SELECT action, actor_kind, actor_email, target_kind, target_id FROM audit_events
         WHERE team_id = $1 AND action = ANY($2) ORDER BY at, id",
    )
    .bind(team)
    .bind(&ACTIONS[..])
    .fetch_all(app.cp.db())
    .await
    .unwrap()
}

fn event(action: &str, email: &str, queue: &aqs_control_plane::Queue) -> Seen {
    (action.into(), "member".into(), Some(email.into()), "queue".into(), Some(queue.id.to_string()))
}

/// The stream id of the first message the Messages tab links.
fn first_entry(list: &Page) -> String {
    let marker = "/queues/jobs/messages/view?entry=";
    let at = list.body.find(marker).unwrap_or_else(|| panic!("no message linked:\n{}", list.body));
    let rest = &list.body[at + marker.len()..];
    rest[..rest.find('"').unwrap()].to_owned()
}

/// Olga's team with a queue `jobs` (one attempt) holding two dead letters, and `email` in it with
/// `role`, acting on it.
async fn team(db: PgPool, email: &str, role: &str) -> (TestConsole, Uuid, aqs_control_plane::Queue, Visitor) {
    let app = spawn_console(db).await;
    let mut olga = Visitor::new(&app);
    olga.sign_up(OWNER).await;
    olga.create_queue("jobs", "1").await;
    let queue = queue_of(&app, OWNER, "jobs").await;
    publish(&app, &queue, "one", "text/plain").await;
    publish(&app, &queue, "two", "text/plain").await;
    fail_all(&app, &queue, "it broke").await;
    let team = member_id(&app, OWNER).await;
    let mut member = Visitor::new(&app);
    member.sign_up(email).await;
    join_team(&app, team, email, role).await;
    member.choose_team(team);
    (app, team, queue, member)
}

#[sqlx::test(migrations = "../migrations")]
async fn each_redis_only_action_writes_one_event_naming_the_member_and_the_queue(db: PgPool) {
    let (app, team, queue, mut ada) = team(db, ADMIN, "admin").await;
    assert_eq!(events(&app, team).await, vec![]);

    // Replay one dead letter; the same form sent again replays nothing and writes nothing.
    let letters = app.engine.dead_letters(queue.id, 10).await.unwrap().unwrap();
    let id = letters[0].id.clone();
    ada.get(&format!("/queues/jobs/dead-letters/replay?id={id}")).await;
    let done = ada.post("/queues/jobs/dead-letters/replay", &[("id", &id)]).await;
    ada.follow(done).await.assert_contains("Replayed 1 dead letter.");
    let again = ada.post("/queues/jobs/dead-letters/replay", &[("id", &id)]).await;
    ada.follow(again).await.assert_contains("already sent");
    assert_eq!(events(&app, team).await, vec![event("dead_letters.replayed", ADMIN, &queue)]);

    // Purge the other one; then a fresh purge finds none and writes nothing.
    ada.get("/queues/jobs/dead-letters/purge").await;
    let done = ada.post("/queues/jobs/dead-letters/purge", &[("all", "true")]).await;
    ada.follow(done).await.assert_contains("Purged 1 dead letter.");
    let again = ada.post("/queues/jobs/dead-letters/purge", &[("all", "true")]).await;
    ada.follow(again).await.assert_contains("already sent");
    ada.get("/queues/jobs/dead-letters/purge").await;
    let none = ada.post("/queues/jobs/dead-letters/purge", &[("all", "true")]).await;
    ada.follow(none).await.assert_contains("There were no dead letters.");
    assert_eq!(events(&app, team).await.len(), 2);

    // Delete the replayed message; the same form again deletes nothing.
    let entry = first_entry(&ada.get("/queues/jobs/messages").await);
    let path = format!("/queues/jobs/messages/delete?entry={entry}");
    let form_id = ada.get(&path).await.input_value("form_id").unwrap();
    let done = ada.post(&path, &[("form_id", &form_id)]).await;
    ada.follow(done).await.assert_contains("Deleted message ");
    let again = ada.post(&path, &[("form_id", &form_id)]).await;
    ada.follow(again).await.assert_contains("already sent");
    assert_eq!(events(&app, team).await.len(), 3);

    // Purge the waiting messages; again, and then with none waiting, nothing more.
    publish(&app, &queue, "three", "text/plain").await;
    publish(&app, &queue, "four", "text/plain").await;
    let form_id = ada.get("/queues/jobs/messages/purge").await.input_value("form_id").unwrap();
    let done = ada.post("/queues/jobs/messages/purge", &[("form_id", &form_id)]).await;
    ada.follow(done).await.assert_contains("Purged 2 waiting messages.");
    let again = ada.post("/queues/jobs/messages/purge", &[("form_id", &form_id)]).await;
    ada.follow(again).await.assert_contains("already sent");
    ada.get("/queues/jobs/messages/purge").await;
    let none = ada.post("/queues/jobs/messages/purge", &[]).await;
    ada.follow(none).await.assert_contains("There were no waiting messages.");

    assert_eq!(
        events(&app, team).await,
        vec![
            event("dead_letters.replayed", ADMIN, &queue),
            event("dead_letters.purged", ADMIN, &queue),
            event("message.deleted", ADMIN, &queue),
            event("messages.purged", ADMIN, &queue),
        ]
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn a_refused_action_writes_no_event(db: PgPool) {
    let (app, team, queue, mut dev) = team(db, "dev@example.com", "developer").await;
    publish(&app, &queue, "waiting", "text/plain").await;
    let entry = first_entry(&dev.get("/queues/jobs/messages").await);
    let letters = app.engine.dead_letters(queue.id, 10).await.unwrap().unwrap();
    let id = letters[0].id.clone();
    let delete = format!("/queues/jobs/messages/delete?entry={entry}");
    let posts: [(&str, Vec<(&str, &str)>); 4] = [
        ("/queues/jobs/dead-letters/replay", vec![("id", &id)]),
        ("/queues/jobs/dead-letters/purge", vec![("all", "true")]),
        ("/queues/jobs/messages/purge", vec![]),
        (&delete, vec![]),
    ];
    for (path, fields) in posts {
        let mut fields: Vec<(&str, &str)> = fields;
        let form_id = Uuid::new_v4().simple().to_string();
        fields.push(("form_id", &form_id));
        let refused = dev.post(path, &fields).await;
        assert_eq!(refused.status, 403, "{path}: {}", refused.body);
    }
    assert_eq!(events(&app, team).await, vec![]);
    let stats = app.engine.stats(queue.id, aqs_core::time::now_ms()).await.unwrap().unwrap();
    assert_eq!((stats.ready, stats.dead_letters), (1, 2), "nothing changed");

    // A message under a lease is not deleted: refused by the page, no event either.
    let mut adam = Visitor::new(&app);
    adam.sign_up("adam@example.com").await;
    join_team(&app, team, "adam@example.com", "admin").await;
    adam.choose_team(team);
    let leased = super::support::lease(&app, &queue, 1, aqs_core::time::now_ms()).await;
    let path = format!("/queues/jobs/messages/delete?entry={}", leased[0].stream_id);
    adam.get(&path).await;
    let refused = adam.post(&path, &[]).await;
    adam.follow(refused).await.assert_contains("Not deleted: a consumer holds this message");
    assert_eq!(events(&app, team).await, vec![]);
}
