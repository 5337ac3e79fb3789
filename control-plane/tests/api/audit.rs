//! The audit log: each change over `/api/v1` (queues, tokens, push, domains, hosts, budget),
//! each log-in and each operator's callback-URL change records one event with who, what, from
//! where and which request; a refused change records none; `GET /api/v1/audit` pages newest first
//! and filters, for owners and admins only; operators read every team's at
//! `GET /api/v1/admin/audit`; old events are swept.

use super::billed::spawn_billed;
use super::push_admin::{OPERATOR, app_with_operator, member_id};
use super::support::{Reply, TestApp, spawn_app_with};
use aqs_core::limits::MIB;
use aqs_testkit::dns::TestDns;
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;

const AGENT: &str = "audit-test/1.0";

/// A request with a session, a user agent, an `x-request-id` and optionally `AQS-Team`.
async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    session: &str,
    body: Option<Value>,
    team: Option<&str>,
    request_id: &str,
) -> Reply {
    let mut request = app
        .client
        .request(method, format!("{}{path}", app.base))
        .bearer_auth(session)
        .header("user-agent", AGENT)
        .header("x-request-id", request_id);
    if let Some(team) = team {
        request = request.header("AQS-Team", team);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    app.raw(request).await
}

/// The team's events for `query` (`action=…&limit=…`), newest first.
async fn events(app: &TestApp, session: &str, query: &str) -> Value {
    app.get(session, &format!("/api/v1/audit?{query}")).await.expect(200)
}

/// The newest event of `action` in the caller's personal team.
async fn newest(app: &TestApp, session: &str, action: &str) -> Value {
    let page = events(app, session, &format!("action={action}&limit=1")).await;
    page["events"][0].clone()
}

async fn count(db: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM audit_events").fetch_one(db).await.unwrap()
}

/// Asserts an event's action, actor, target and origin.
#[track_caller]
fn assert_event(event: &Value, action: &str, actor: (&str, &str), target: (&str, &str), request_id: &str) {
    assert_eq!(event["action"], action, "{event}");
    assert_eq!(event["actor"]["id"], actor.0, "{event}");
    assert_eq!(event["actor"]["email"], actor.1, "{event}");
    assert_eq!(event["actor"]["kind"], "member", "{event}");
    assert_eq!(event["target"], json!({"kind": target.0, "id": target.1}), "{event}");
    assert_eq!(event["ip"], "127.0.0.1", "{event}");
    assert_eq!(event["user_agent"], AGENT, "{event}");
    assert_eq!(event["request_id"], request_id, "{event}");
    assert!(event["id"].is_string() && event["at"].is_string(), "{event}");
}

#[sqlx::test(migrations = "../migrations")]
async fn queue_token_push_and_budget_changes_each_record_one_event(db: PgPool) {
    let (app, operator) = app_with_operator(db.clone()).await;
    let ada = app.member("ada@example.com").await;
    let id = member_id(&app, &ada).await;
    let me = (id.as_str(), "ada@example.com");
    let call = |method: Method, path: &'static str, body: Option<Value>, request_id: &'static str| {
        let (app, ada) = (&app, ada.clone());
        async move { send(app, method, path, &ada, body, None, request_id).await }
    };

    let created = call(Method::POST, "/api/v1/queues", Some(json!({"name": "jobs"})), "r-create").await.expect(201);
    let queue = created["queue"]["id"].as_str().unwrap().to_owned();
    let event = newest(&app, &ada, "queue.created").await;
    assert_event(&event, "queue.created", me, ("queue", &queue), "r-create");
    assert_eq!(event["team"], id.as_str());

    call(Method::PATCH, "/api/v1/queues/jobs", Some(json!({"max_attempts": 3})), "r-update").await.expect(200);
    assert_event(&newest(&app, &ada, "queue.updated").await, "queue.updated", me, ("queue", &queue), "r-update");
    call(Method::POST, "/api/v1/queues/jobs/pause", None, "r-pause").await.expect(200);
    assert_event(&newest(&app, &ada, "queue.paused").await, "queue.paused", me, ("queue", &queue), "r-pause");
    call(Method::POST, "/api/v1/queues/jobs/resume", None, "r-resume").await.expect(200);
    assert_event(&newest(&app, &ada, "queue.resumed").await, "queue.resumed", me, ("queue", &queue), "r-resume");

    let minted =
        call(Method::POST, "/api/v1/queues/jobs/tokens", Some(json!({"name": "ci", "scopes": ["send"]})), "r-mint")
            .await
            .expect(201);
    let token = minted["token"]["id"].as_str().unwrap().to_owned();
    assert_event(&newest(&app, &ada, "token.minted").await, "token.minted", me, ("token", &token), "r-mint");
    let path = format!("/api/v1/queues/jobs/tokens/{token}");
    send(&app, Method::DELETE, &path, &ada, None, None, "r-revoke").await.expect(204);
    assert_event(&newest(&app, &ada, "token.revoked").await, "token.revoked", me, ("token", &token), "r-revoke");
    // Revoking it again changes nothing and records nothing.
    send(&app, Method::DELETE, &path, &ada, None, None, "r-revoke-again").await.expect(204);
    assert_eq!(events(&app, &ada, "action=token.revoked").await["events"].as_array().unwrap().len(), 1);

    let prefix = format!("/api/v1/admin/members/{id}/callback-urls");
    app.post(&operator, &prefix, json!({"prefix": "http://localhost:9/"})).await.expect(201);
    let hook = json!({"handler_url": "http://localhost:9/hook"});
    call(Method::PUT, "/api/v1/queues/jobs/push", Some(hook), "r-push").await.expect(201);
    assert_event(&newest(&app, &ada, "push.updated").await, "push.updated", me, ("push", &queue), "r-push");
    call(Method::POST, "/api/v1/queues/jobs/push/rotate-secret", None, "r-rotate").await.expect(200);
    assert_event(&newest(&app, &ada, "secret.rotated").await, "secret.rotated", me, ("push", &queue), "r-rotate");
    call(Method::DELETE, "/api/v1/queues/jobs/push", None, "r-stop").await.expect(204);
    assert_event(&newest(&app, &ada, "push.updated").await, "push.updated", me, ("push", &queue), "r-stop");

    let budget = json!({"monthly_limit_cents": 5000, "alert_percent": 50});
    call(Method::PUT, "/api/v1/billing/budget", Some(budget), "r-budget").await.expect(200);
    let event = newest(&app, &ada, "billing.budget_changed").await;
    assert_event(&event, "billing.budget_changed", me, ("billing", &id), "r-budget");

    call(Method::DELETE, "/api/v1/queues/jobs", None, "r-delete").await.expect(204);
    assert_event(&newest(&app, &ada, "queue.deleted").await, "queue.deleted", me, ("queue", &queue), "r-delete");

    // Refused changes record nothing.
    let before = count(&db).await;
    call(Method::POST, "/api/v1/queues", Some(json!({"name": "!!!"})), "r-bad")
        .await
        .expect_error(400, "invalid_request");
    call(Method::POST, "/api/v1/queues", Some(json!({"name": "a", "max_attempts": 0})), "r-bad")
        .await
        .expect_error(400, "invalid_request");
    call(Method::PATCH, "/api/v1/queues/jobs", Some(json!({"max_attempts": 3})), "r-gone")
        .await
        .expect_error(404, "not_found");
    call(Method::POST, "/api/v1/queues/jobs/pause", None, "r-gone").await.expect_error(404, "not_found");
    let budget = json!({"monthly_limit_cents": 5000, "alert_percent": 101});
    call(Method::PUT, "/api/v1/billing/budget", Some(budget), "r-bad").await.expect_error(400, "invalid_request");
    app.queue(&ada, "again").await;
    call(Method::DELETE, "/api/v1/queues/again/push", None, "r-unset").await.expect_error(404, "not_found");
    assert_eq!(count(&db).await, before + 1, "only the second queue's creation");
}

#[sqlx::test(migrations = "../migrations")]
async fn domain_and_host_changes_each_record_one_event(db: PgPool) {
    let dns = TestDns::start().await;
    let server = dns.server();
    let app = spawn_app_with(db.clone(), move |config| config.dns_servers = vec![server]).await;
    let ada = app.member("ada@example.com").await;
    let id = member_id(&app, &ada).await;
    let me = (id.as_str(), "ada@example.com");
    app.queue(&ada, "jobs").await;

    let added = send(&app, Method::POST, "/api/v1/domains", &ada, Some(json!({"name": "example.test"})), None, "d-add")
        .await
        .expect(201);
    let domain = added["domain"]["id"].as_str().unwrap().to_owned();
    assert_event(&newest(&app, &ada, "domain.added").await, "domain.added", me, ("domain", &domain), "d-add");

    // Not verified yet: no event.
    let verify = format!("/api/v1/domains/{domain}/verify");
    let pending = send(&app, Method::POST, &verify, &ada, None, None, "d-early").await.expect(200);
    assert_eq!(pending["domain"]["status"], "pending");
    assert_eq!(events(&app, &ada, "action=domain.verified").await["events"], json!([]));
    dns.set_txt("_aqs-challenge.example.test", added["domain"]["verification"]["value"].as_str().unwrap()).await;
    let verified = send(&app, Method::POST, &verify, &ada, None, None, "d-verify").await.expect(200);
    assert_eq!(verified["domain"]["status"], "verified");
    assert_event(&newest(&app, &ada, "domain.verified").await, "domain.verified", me, ("domain", &domain), "d-verify");
    // Verifying a verified domain again changes nothing.
    send(&app, Method::POST, &verify, &ada, None, None, "d-again").await.expect(200);
    assert_eq!(events(&app, &ada, "action=domain.verified").await["events"].as_array().unwrap().len(), 1);

    let body = json!({"hostname": "q.example.test", "queue": "jobs"});
    let host = send(&app, Method::POST, "/api/v1/hosts", &ada, Some(body), None, "h-add").await.expect(201);
    let host = host["host"]["id"].as_str().unwrap().to_owned();
    assert_event(&newest(&app, &ada, "host.added").await, "host.added", me, ("host", &host), "h-add");
    let path = format!("/api/v1/hosts/{host}/check");
    send(&app, Method::POST, &path, &ada, None, None, "h-check").await.expect(200);
    assert_event(&newest(&app, &ada, "host.checked").await, "host.checked", me, ("host", &host), "h-check");

    // A domain with a host cannot go: 409, and no event.
    let before = count(&db).await;
    let path = format!("/api/v1/domains/{domain}");
    send(&app, Method::DELETE, &path, &ada, None, None, "d-busy").await.expect_error(409, "conflict");
    assert_eq!(count(&db).await, before);

    send(&app, Method::DELETE, &format!("/api/v1/hosts/{host}"), &ada, None, None, "h-remove").await.expect(204);
    assert_event(&newest(&app, &ada, "host.removed").await, "host.removed", me, ("host", &host), "h-remove");
    send(&app, Method::DELETE, &path, &ada, None, None, "d-remove").await.expect(204);
    assert_event(&newest(&app, &ada, "domain.removed").await, "domain.removed", me, ("domain", &domain), "d-remove");
}

#[sqlx::test(migrations = "../migrations")]
async fn the_log_pages_newest_first_and_filters(db: PgPool) {
    let (app, _operator) = app_with_operator(db).await;
    let ada = app.member("ada@example.com").await;
    let id = member_id(&app, &ada).await;
    app.queue(&ada, "jobs").await;
    for _ in 0..3 {
        app.post(&ada, "/api/v1/queues/jobs/pause", json!({})).await.expect(200);
        app.post(&ada, "/api/v1/queues/jobs/resume", json!({})).await.expect(200);
    }
    // 7 events: created, then 3 × (paused, resumed).
    let all = events(&app, &ada, "").await;
    let actions: Vec<&str> = all["events"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert_eq!(actions.len(), 7);
    assert_eq!(actions[0], "queue.resumed");
    assert_eq!(actions[6], "queue.created");
    assert_eq!(all["next_before"], Value::Null);

    // Pages of 3 read the same events in the same order.
    let mut paged = Vec::new();
    let mut query = "limit=3".to_owned();
    loop {
        let page = events(&app, &ada, &query).await;
        let got = page["events"].as_array().unwrap();
        assert!(got.len() <= 3);
        paged.extend(got.iter().map(|e| e["id"].clone()));
        match page["next_before"].as_str() {
            Some(before) => query = format!("limit=3&before={before}"),
            None => break,
        }
    }
    let ids: Vec<Value> = all["events"].as_array().unwrap().iter().map(|e| e["id"].clone()).collect();
    assert_eq!(paged, ids);

    // Filters: by action, by actor id or email (any case); an unknown actor matches nothing.
    assert_eq!(events(&app, &ada, "action=queue.paused").await["events"].as_array().unwrap().len(), 3);
    assert_eq!(events(&app, &ada, &format!("actor={id}")).await["events"].as_array().unwrap().len(), 7);
    assert_eq!(events(&app, &ada, "actor=ADA@example.com&limit=200").await["events"].as_array().unwrap().len(), 7);
    assert_eq!(events(&app, &ada, "actor=bob@example.com").await["events"], json!([]));
    let unknown = uuid::Uuid::now_v7();
    assert_eq!(events(&app, &ada, &format!("before={unknown}")).await["events"], json!([]));

    for (query, field) in [
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("limit=many", "limit"),
        ("before=yesterday", "before"),
        ("action=Queue", "action"),
        ("actor=ada", "actor"),
    ] {
        let message = app.get(&ada, &format!("/api/v1/audit?{query}")).await.expect_error(400, "invalid_request");
        assert!(message.starts_with(field), "{query}: {message}");
    }
}

/// Gives `member` a role in `team` directly.
async fn join(db: &PgPool, team: &str, member: &str, role: &str) {
    sqlx::query("INSERT INTO team_members (team_id, member_id, role) VALUES ($1::uuid, $2::uuid, $3)")
        .bind(team)
        .bind(member)
        .bind(role)
        .execute(db)
        .await
        .unwrap();
}

#[sqlx::test(migrations = "../migrations")]
async fn owners_and_admins_read_the_log_and_roles_bound_what_tokens_allow(db: PgPool) {
    let (app, _operator) = app_with_operator(db.clone()).await;
    let ada = app.member("ada@example.com").await;
    let team = member_id(&app, &ada).await;
    app.queue(&ada, "jobs").await;
    let (bob, cy, dee) =
        (app.member("bob@example.com").await, app.member("cy@example.com").await, app.member("dee@example.com").await);
    let bob_id = member_id(&app, &bob).await;
    join(&db, &team, &bob_id, "developer").await;
    join(&db, &team, &member_id(&app, &cy).await, "viewer").await;
    join(&db, &team, &member_id(&app, &dee).await, "admin").await;

    for session in [&bob, &cy] {
        let message = send(&app, Method::GET, "/api/v1/audit", session, None, Some(&team), "x")
            .await
            .expect_error(403, "forbidden");
        assert!(message.contains("admin"), "{message}");
    }
    let page = send(&app, Method::GET, "/api/v1/audit", &dee, None, Some(&team), "x").await.expect(200);
    assert_eq!(page["events"][0]["action"], "queue.created");
    // Without the header, Dee reads her own personal team's (empty) log.
    assert_eq!(app.get(&dee, "/api/v1/audit").await.expect(200)["events"], json!([]));

    // A developer mints and revokes tokens without manage; with manage it takes an admin.
    let tokens = "/api/v1/queues/jobs/tokens";
    let manage = json!({"name": "ops", "scopes": ["manage"]});
    send(&app, Method::POST, tokens, &bob, Some(manage.clone()), Some(&team), "b-1")
        .await
        .expect_error(403, "forbidden");
    let sender =
        send(&app, Method::POST, tokens, &bob, Some(json!({"name": "ci", "scopes": ["send"]})), Some(&team), "b-2")
            .await
            .expect(201);
    let event = newest(&app, &ada, "token.minted").await;
    assert_eq!((event["actor"]["id"].as_str(), event["team"].as_str()), (Some(bob_id.as_str()), Some(team.as_str())));
    assert_eq!(event["request_id"], "b-2");
    let ops = send(&app, Method::POST, tokens, &dee, Some(manage), Some(&team), "d-1").await.expect(201);
    let ops = format!("{tokens}/{}", ops["token"]["id"].as_str().unwrap());
    send(&app, Method::DELETE, &ops, &bob, None, Some(&team), "b-3").await.expect_error(403, "forbidden");
    let sender = format!("{tokens}/{}", sender["token"]["id"].as_str().unwrap());
    send(&app, Method::DELETE, &sender, &bob, None, Some(&team), "b-4").await.expect(204);
    assert_eq!(newest(&app, &ada, "token.revoked").await["request_id"], "b-4");
    assert_eq!(events(&app, &ada, "action=token.minted").await["events"].as_array().unwrap().len(), 2);
    assert_eq!(events(&app, &ada, "action=token.revoked").await["events"].as_array().unwrap().len(), 1);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_paid_payload_size_needs_the_owner(db: PgPool) {
    let b = spawn_billed(db.clone()).await;
    let ada = b.app.member("ada@example.com").await;
    let team = member_id(&b.app, &ada).await;
    b.app.queue(&ada, "jobs").await;
    let dee = b.app.member("dee@example.com").await;
    join(&db, &team, &member_id(&b.app, &dee).await, "admin").await;
    let before = count(&db).await;
    let body = json!({"payload_size": 10 * MIB});
    let message = send(&b.app, Method::PATCH, "/api/v1/queues/jobs", &dee, Some(body), Some(&team), "x")
        .await
        .expect_error(403, "forbidden");
    assert!(message.contains("owner"), "{message}");
    assert_eq!(count(&db).await, before);
    // Other settings stay an admin's.
    send(&b.app, Method::PATCH, "/api/v1/queues/jobs", &dee, Some(json!({"max_attempts": 4})), Some(&team), "y")
        .await
        .expect(200);
}

#[sqlx::test(migrations = "../migrations")]
async fn log_ins_are_recorded_without_the_email_of_an_unknown_account(db: PgPool) {
    let (app, operator) = app_with_operator(db.clone()).await;
    app.member("ada@example.com").await;
    let login = |email: &'static str, password: &'static str, request_id: &'static str| {
        let app = &app;
        let body = json!({"email": email, "password": password});
        let request = app
            .client
            .post(format!("{}/api/v1/auth/login", app.base))
            .header("user-agent", AGENT)
            .header("x-request-id", request_id)
            .json(&body);
        async move { app.raw(request).await }
    };
    let ada = login("ada@example.com", super::support::PASSWORD, "l-ok").await.expect(200);
    let id = ada["member"]["id"].as_str().unwrap().to_owned();
    let session = ada["session"].as_str().unwrap();
    let event = newest(&app, session, "session.login").await;
    assert_event(
        &event,
        "session.login",
        (&id, "ada@example.com"),
        ("session", event["target"]["id"].as_str().unwrap()),
        "l-ok",
    );
    assert_eq!(event["team"], id.as_str());

    login("ada@example.com", "wrong-password", "l-wrong").await.expect_error(401, "unauthorized");
    let event = newest(&app, session, "session.login_failed").await;
    assert_eq!(event["actor"], json!({"kind": "member", "id": id, "email": "ada@example.com"}));
    assert_eq!(event["target"], json!({"kind": "session", "id": null}));
    assert_eq!((event["team"].as_str(), event["request_id"].as_str()), (Some(id.as_str()), Some("l-wrong")));

    login("nobody@example.com", "wrong-password", "l-unknown").await.expect_error(401, "unauthorized");
    let page = app.get(&operator, "/api/v1/admin/audit?action=session.login_failed").await.expect(200);
    let event = &page["events"][0];
    assert_eq!(event["request_id"], "l-unknown");
    assert_eq!(event["team"], Value::Null);
    assert_eq!(event["actor"], json!({"kind": "anonymous", "id": null, "email": null}));
    let leaked: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_events WHERE audit_events::text LIKE '%nobody@example.com%'")
            .fetch_one(&db)
            .await
            .unwrap();
    assert_eq!(leaked, 0);
}

#[sqlx::test(migrations = "../migrations")]
async fn operators_read_every_team_and_their_own_changes_are_recorded(db: PgPool) {
    let (app, operator) = app_with_operator(db.clone()).await;
    let operator_id = member_id(&app, &operator).await;
    let ada = app.member("ada@example.com").await;
    let ada_id = member_id(&app, &ada).await;
    let bob = app.member("bob@example.com").await;
    let bob_id = member_id(&app, &bob).await;
    app.queue(&ada, "jobs").await;
    app.queue(&bob, "mail").await;

    let path = format!("/api/v1/admin/members/{ada_id}/callback-urls");
    let added =
        send(&app, Method::POST, &path, &operator, Some(json!({"prefix": "https://a.example.com/"})), None, "o-1")
            .await
            .expect(201);
    let url = added["callback_url"]["id"].as_str().unwrap().to_owned();
    send(&app, Method::DELETE, &format!("{path}/{url}"), &operator, None, None, "o-2").await.expect(200);
    let page = events(&app, &ada, "").await;
    let (removed, added) = (&page["events"][0], &page["events"][1]);
    for (event, action, request_id) in [(added, "callback_url.added", "o-1"), (removed, "callback_url.removed", "o-2")]
    {
        assert_eq!(event["action"], action);
        assert_eq!(event["actor"], json!({"kind": "operator", "id": operator_id, "email": OPERATOR}));
        assert_eq!(event["target"], json!({"kind": "callback_url", "id": url}));
        assert_eq!(event["team"], ada_id.as_str());
        assert_eq!((event["request_id"].as_str(), event["user_agent"].as_str()), (Some(request_id), Some(AGENT)));
    }

    // Across teams, or one team's.
    let all = app.get(&operator, "/api/v1/admin/audit?action=queue.created").await.expect(200);
    let mut teams: Vec<&str> = all["events"].as_array().unwrap().iter().map(|e| e["team"].as_str().unwrap()).collect();
    teams.sort();
    let mut expected = vec![ada_id.as_str(), bob_id.as_str()];
    expected.sort();
    assert_eq!(teams, expected);
    let bobs = app.get(&operator, &format!("/api/v1/admin/audit?team={bob_id}")).await.expect(200);
    assert!(bobs["events"].as_array().unwrap().iter().all(|e| e["team"] == bob_id.as_str()), "{bobs}");
    assert_eq!(bobs["events"].as_array().unwrap().len(), 1);
    let message = app.get(&operator, "/api/v1/admin/audit?team=bob").await.expect_error(400, "invalid_request");
    assert!(message.starts_with("team"), "{message}");

    // Everyone else: 404.
    for session in [Some(ada.as_str()), None, Some("not-a-session")] {
        app.call(Method::GET, "/api/v1/admin/audit", session, None).await.expect_error(404, "not_found");
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn events_past_their_retention_are_swept(db: PgPool) {
    let (app, _operator) = app_with_operator(db.clone()).await;
    let ada = app.member("ada@example.com").await;
    app.queue(&ada, "jobs").await;
    sqlx::query(
        "INSERT INTO audit_events (id, at, team_id, actor_kind, action, target_kind)
         SELECT gen_random_uuid(), now() - make_interval(days => $1 + 1), NULL, 'anonymous', 'session.login_failed', 'session'
         FROM generate_series(1, 3)",
    )
    .bind(aqs_control_plane::audit::KEPT_DAYS as i32)
    .execute(&db)
    .await
    .unwrap();
    assert_eq!(count(&db).await, 4);
    assert_eq!(aqs_control_plane::audit::sweep_expired(&db).await.unwrap(), 3);
    assert_eq!(count(&db).await, 1);
    assert_eq!(newest(&app, &ada, "queue.created").await["action"], "queue.created");
}
