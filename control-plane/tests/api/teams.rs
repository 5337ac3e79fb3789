//! Teams: creating one, invite links (shape, expiry, single use, withdrawal), roles, the last
//! owner, removal and leaving, acting for a team with `AQS-Team`, and the audit events of each.

use super::support::{Reply, TestApp, spawn_app};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;

/// A request with `AQS-Team: team`.
pub async fn as_team(
    app: &TestApp,
    method: Method,
    session: &str,
    team: &str,
    path: &str,
    body: Option<Value>,
) -> Reply {
    let mut request =
        app.client.request(method, format!("{}{path}", app.base)).bearer_auth(session).header("AQS-Team", team);
    if let Some(body) = body {
        request = request.json(&body);
    }
    app.raw(request).await
}

/// The member id of a session.
pub async fn member_id(app: &TestApp, session: &str) -> String {
    app.get(session, "/api/v1/auth/me").await.expect(200)["member"]["id"].as_str().unwrap().to_owned()
}

/// Creates a team named `name` and returns its id.
pub async fn team(app: &TestApp, session: &str, name: &str) -> String {
    let team = app.post(session, "/api/v1/teams", json!({"name": name})).await.expect(201)["team"].clone();
    team["id"].as_str().unwrap().to_owned()
}

/// Invites `email` to `team` with `role` and returns the link's secret.
pub async fn invite(app: &TestApp, session: &str, team: &str, email: &str, role: &str) -> String {
    let created = app
        .post(session, &format!("/api/v1/teams/{team}/invites"), json!({"email": email, "role": role}))
        .await
        .expect(201);
    created["url"].as_str().unwrap().rsplit('/').next().unwrap().to_owned()
}

/// `session`'s member joins `team` with `role` through an invite.
pub async fn join(app: &TestApp, owner: &str, team: &str, session: &str, email: &str, role: &str) {
    let secret = invite(app, owner, team, email, role).await;
    app.post(session, &format!("/api/v1/invites/{secret}/accept"), json!({})).await.expect(200);
}

/// The actions of `team`'s audit events, oldest first.
pub async fn actions(app: &TestApp, team: &str) -> Vec<String> {
    sqlx::query_scalar("SELECT action FROM audit_events WHERE team_id = $1::uuid ORDER BY at, id")
        .bind(team)
        .fetch_all(app.cp.db())
        .await
        .unwrap()
}

#[sqlx::test(migrations = "../migrations")]
async fn a_member_creates_teams_and_lists_them_with_roles(db: PgPool) {
    let app = spawn_app(db).await;
    let ada = app.member("ada@example.com").await;
    let ada_id = member_id(&app, &ada).await;
    let teams = app.get(&ada, "/api/v1/teams").await.expect(200)["teams"].clone();
    assert_eq!(teams, json!([{"id": ada_id, "name": "Personal", "personal": true, "role": "owner"}]));

    let created = app.post(&ada, "/api/v1/teams", json!({"name": "  Platform "})).await.expect(201)["team"].clone();
    assert_eq!(created["name"], "Platform");
    assert_eq!(created["personal"], false);
    assert_eq!(created["role"], "owner");
    let teams = app.get(&ada, "/api/v1/teams").await.expect(200)["teams"].clone();
    assert_eq!(teams.as_array().unwrap().len(), 2);
    assert_eq!(teams[1], created);
    let id = created["id"].as_str().unwrap();
    assert_eq!(actions(&app, id).await, ["team.created"]);

    for bad in [json!({"name": ""}), json!({"name": "x".repeat(65)}), json!({"name": "a\nb"})] {
        let message = app.post(&ada, "/api/v1/teams", bad).await.expect_error(400, "invalid_request");
        assert!(message.starts_with("name"), "{message}");
    }
    app.call(Method::GET, "/api/v1/teams", None, None).await.expect_error(401, "unauthorized");
    let members = app.get(&ada, &format!("/api/v1/teams/{id}/members")).await.expect(200)["members"].clone();
    assert_eq!(members.as_array().unwrap().len(), 1);
    assert_eq!(members[0]["member_id"], ada_id);
    assert_eq!(members[0]["email"], "ada@example.com");
    assert_eq!(members[0]["role"], "owner");
}

#[sqlx::test(migrations = "../migrations")]
async fn an_invite_link_is_shown_once_lasts_seven_days_and_is_used_once(db: PgPool) {
    let app = spawn_app(db).await;
    let ada = app.member("ada@example.com").await;
    let bob = app.member("bob@example.com").await;
    let cy = app.member("cy@example.com").await;
    let team = team(&app, &ada, "Platform").await;

    let created = app
        .post(&ada, &format!("/api/v1/teams/{team}/invites"), json!({"email": " Bob@Example.com", "role": "developer"}))
        .await
        .expect(201);
    let url = created["url"].as_str().unwrap();
    let prefix = format!("{}/invites/", app.config.public_url.trim_end_matches('/'));
    let secret = url.strip_prefix(&prefix).unwrap_or_else(|| panic!("{url} starts with {prefix}"));
    assert!(secret.starts_with("aqi_") && secret.len() == 42, "{secret}");
    let offer = &created["invite"];
    assert_eq!(offer["email"], "bob@example.com");
    assert_eq!(offer["role"], "developer");
    assert_eq!(offer["invited_by_email"], "ada@example.com");
    let at = |v: &Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
    assert_eq!((at(&offer["expires_at"]) - at(&offer["created_at"])).num_days(), 7);
    let hash: String = sqlx::query_scalar("SELECT secret_hash FROM invites WHERE id = $1::uuid")
        .bind(offer["id"].as_str().unwrap())
        .fetch_one(app.cp.db())
        .await
        .unwrap();
    assert_eq!(hash, hex::encode(<sha2::Sha256 as sha2::Digest>::digest(secret.as_bytes())));

    let pending = app.get(&ada, &format!("/api/v1/teams/{team}/invites")).await;
    assert!(!pending.text.contains(secret), "a listing shows no secret");
    assert_eq!(pending.expect(200)["invites"][0]["id"], offer["id"]);

    // Anyone with the link sees what it offers, without a session.
    let preview = app.call(Method::GET, &format!("/api/v1/invites/{secret}"), None, None).await.expect(200);
    assert_eq!(preview["invite"]["team_name"], "Platform");
    assert_eq!(preview["invite"]["role"], "developer");
    assert_eq!(preview["invite"]["email"], "bob@example.com");

    // Any signed-in member holding the link may accept it, once.
    let accept = format!("/api/v1/invites/{secret}/accept");
    app.call(Method::POST, &accept, None, None).await.expect_error(401, "unauthorized");
    let joined = app.post(&cy, &accept, json!({})).await.expect(200)["team"].clone();
    assert_eq!(joined, json!({"id": team, "name": "Platform", "personal": false, "role": "developer"}));
    let message = app.post(&bob, &accept, json!({})).await.expect_error(404, "not_found");
    assert!(message.contains("already used"), "{message}");
    let message =
        app.call(Method::GET, &format!("/api/v1/invites/{secret}"), None, None).await.expect_error(404, "not_found");
    assert!(message.contains("already used"), "{message}");
    assert!(
        app.get(&ada, &format!("/api/v1/teams/{team}/invites")).await.expect(200)["invites"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    let cy_teams = app.get(&cy, "/api/v1/teams").await.expect(200)["teams"].clone();
    assert_eq!(cy_teams[1]["id"], team);
    let members = app.get(&cy, &format!("/api/v1/teams/{team}/members")).await.expect(200)["members"].clone();
    assert_eq!(members.as_array().unwrap().len(), 2);
    assert_eq!(members[1]["email"], "cy@example.com");
    assert_eq!(members[1]["role"], "developer");

    // A member already in the team: 409, and the link stays unused.
    let again = invite(&app, &ada, &team, "someone@example.com", "viewer").await;
    app.post(&cy, &format!("/api/v1/invites/{again}/accept"), json!({})).await.expect_error(409, "conflict");
    app.post(&bob, &format!("/api/v1/invites/{again}/accept"), json!({})).await.expect(200);

    // Garbage links are unknown.
    for bad in ["nope", "aqi_0000000000000000000000000000000000000"] {
        app.call(Method::GET, &format!("/api/v1/invites/{bad}"), None, None).await.expect_error(404, "not_found");
        app.post(&bob, &format!("/api/v1/invites/{bad}/accept"), json!({})).await.expect_error(404, "not_found");
    }
    assert_eq!(
        actions(&app, &team).await,
        ["team.created", "member.invited", "member.joined", "member.invited", "member.joined"]
    );
    let actor: (String, String, String) = sqlx::query_as(
        "SELECT actor_kind, actor_email, target_kind FROM audit_events WHERE team_id = $1::uuid AND action = 'member.joined' ORDER BY at LIMIT 1",
    )
    .bind(&team)
    .fetch_one(app.cp.db())
    .await
    .unwrap();
    assert_eq!(actor, ("member".into(), "cy@example.com".into(), "invite".into()));
}

#[sqlx::test(migrations = "../migrations")]
async fn expired_and_revoked_invites_are_refused(db: PgPool) {
    let app = spawn_app(db).await;
    let ada = app.member("ada@example.com").await;
    let bob = app.member("bob@example.com").await;
    let team = team(&app, &ada, "Platform").await;

    let expired = invite(&app, &ada, &team, "bob@example.com", "viewer").await;
    sqlx::query("UPDATE invites SET expires_at = now() - interval '1 minute'").execute(app.cp.db()).await.unwrap();
    let message =
        app.post(&bob, &format!("/api/v1/invites/{expired}/accept"), json!({})).await.expect_error(404, "not_found");
    assert!(message.contains("expired"), "{message}");
    let message =
        app.call(Method::GET, &format!("/api/v1/invites/{expired}"), None, None).await.expect_error(404, "not_found");
    assert!(message.contains("expired"), "{message}");

    let revoked = app
        .post(&ada, &format!("/api/v1/teams/{team}/invites"), json!({"email": "bob@example.com", "role": "admin"}))
        .await
        .expect(201);
    let id = revoked["invite"]["id"].as_str().unwrap();
    let secret = revoked["url"].as_str().unwrap().rsplit('/').next().unwrap();
    // Only owners withdraw, and only their team's invites.
    app.delete(&bob, &format!("/api/v1/teams/{team}/invites/{id}")).await.expect_error(404, "not_found");
    let bob_id = member_id(&app, &bob).await;
    app.delete(&ada, &format!("/api/v1/teams/{bob_id}/invites/{id}")).await.expect_error(404, "not_found");
    app.delete(&ada, &format!("/api/v1/teams/{team}/invites/{id}")).await.expect(204);
    app.delete(&ada, &format!("/api/v1/teams/{team}/invites/{id}")).await.expect_error(404, "not_found");
    let message =
        app.post(&bob, &format!("/api/v1/invites/{secret}/accept"), json!({})).await.expect_error(404, "not_found");
    assert!(message.contains("withdrawn"), "{message}");
    assert_eq!(app.get(&bob, "/api/v1/teams").await.expect(200)["teams"].as_array().unwrap().len(), 1);
    assert_eq!(actions(&app, &team).await, ["team.created", "member.invited", "member.invited", "invite.revoked"]);
}

#[sqlx::test(migrations = "../migrations")]
async fn invites_are_checked(db: PgPool) {
    let app = spawn_app(db).await;
    let ada = app.member("ada@example.com").await;
    let bob = app.member("bob@example.com").await;
    let ada_id = member_id(&app, &ada).await;
    let team = team(&app, &ada, "Platform").await;
    let path = format!("/api/v1/teams/{team}/invites");
    let message =
        app.post(&ada, &path, json!({"email": "nope", "role": "viewer"})).await.expect_error(400, "invalid_request");
    assert!(message.starts_with("email"), "{message}");
    let message = app
        .post(&ada, &path, json!({"email": "b@example.com", "role": "boss"}))
        .await
        .expect_error(400, "invalid_request");
    assert!(message.starts_with("role"), "{message}");
    app.post(&ada, &path, json!({"email": "ada@example.com", "role": "viewer"})).await.expect_error(409, "conflict");
    // A personal team is its member's alone.
    app.post(&ada, &format!("/api/v1/teams/{ada_id}/invites"), json!({"email": "b@example.com", "role": "viewer"}))
        .await
        .expect_error(409, "conflict");
    // Not in the team: 404; in it without being owner: 403 naming the role.
    app.post(&bob, &path, json!({"email": "c@example.com", "role": "viewer"})).await.expect_error(404, "not_found");
    app.get(&bob, &path).await.expect_error(404, "not_found");
    app.get(&bob, &format!("/api/v1/teams/{team}/members")).await.expect_error(404, "not_found");
    join(&app, &ada, &team, &bob, "bob@example.com", "admin").await;
    let message =
        app.post(&bob, &path, json!({"email": "c@example.com", "role": "viewer"})).await.expect_error(403, "forbidden");
    assert!(message.contains("owner"), "{message}");
    app.get(&bob, &path).await.expect_error(403, "forbidden");
    app.get(&ada, "/api/v1/teams/not-a-uuid/members").await.expect_error(404, "not_found");
}

#[sqlx::test(migrations = "../migrations")]
async fn roles_change_and_a_team_keeps_an_owner(db: PgPool) {
    let app = spawn_app(db).await;
    let ada = app.member("ada@example.com").await;
    let bob = app.member("bob@example.com").await;
    let (ada_id, bob_id) = (member_id(&app, &ada).await, member_id(&app, &bob).await);
    let team = team(&app, &ada, "Platform").await;
    join(&app, &ada, &team, &bob, "bob@example.com", "viewer").await;
    let member = |id: &str| format!("/api/v1/teams/{team}/members/{id}");

    // The last owner stays one.
    let message = app.patch(&ada, &member(&ada_id), json!({"role": "admin"})).await.expect_error(409, "conflict");
    assert!(message.contains("owner"), "{message}");
    app.delete(&ada, &member(&ada_id)).await.expect_error(409, "conflict");
    // Only owners change roles.
    app.patch(&bob, &member(&bob_id), json!({"role": "owner"})).await.expect_error(403, "forbidden");
    let message = app.patch(&ada, &member(&bob_id), json!({"role": "king"})).await.expect_error(400, "invalid_request");
    assert!(message.starts_with("role"), "{message}");
    app.patch(&ada, &member(&uuid::Uuid::new_v4().to_string()), json!({"role": "admin"}))
        .await
        .expect_error(404, "not_found");

    let promoted = app.patch(&ada, &member(&bob_id), json!({"role": "owner"})).await.expect(200)["member"].clone();
    assert_eq!(promoted["role"], "owner");
    assert_eq!(promoted["email"], "bob@example.com");
    // Two owners: one may step down, then the other is the last.
    assert_eq!(
        app.patch(&bob, &member(&ada_id), json!({"role": "developer"})).await.expect(200)["member"]["role"],
        "developer"
    );
    app.patch(&bob, &member(&bob_id), json!({"role": "admin"})).await.expect_error(409, "conflict");
    let roles = app.get(&ada, &format!("/api/v1/teams/{team}/members")).await.expect(200)["members"].clone();
    assert_eq!(roles[0]["role"], "owner");
    assert_eq!(roles[0]["member_id"], bob_id);
    assert_eq!(roles[1]["role"], "developer");

    // A personal team's owner cannot step down.
    app.patch(&ada, &format!("/api/v1/teams/{ada_id}/members/{ada_id}"), json!({"role": "admin"}))
        .await
        .expect_error(409, "conflict");
    let events: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT action, actor_email, target_id FROM audit_events WHERE team_id = $1::uuid AND action = 'member.role_changed' ORDER BY at, id",
    )
    .bind(&team)
    .fetch_all(app.cp.db())
    .await
    .unwrap();
    assert_eq!(
        events,
        [
            ("member.role_changed".into(), "ada@example.com".into(), bob_id.clone()),
            ("member.role_changed".into(), "bob@example.com".into(), ada_id.clone())
        ]
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn owners_remove_members_and_members_leave(db: PgPool) {
    let app = spawn_app(db).await;
    let ada = app.member("ada@example.com").await;
    let bob = app.member("bob@example.com").await;
    let cy = app.member("cy@example.com").await;
    let (ada_id, bob_id, cy_id) =
        (member_id(&app, &ada).await, member_id(&app, &bob).await, member_id(&app, &cy).await);
    let team = team(&app, &ada, "Platform").await;
    join(&app, &ada, &team, &bob, "bob@example.com", "admin").await;
    join(&app, &ada, &team, &cy, "cy@example.com", "viewer").await;
    let member = |id: &str| format!("/api/v1/teams/{team}/members/{id}");

    // An admin removes no one but themself.
    app.delete(&bob, &member(&cy_id)).await.expect_error(403, "forbidden");
    app.delete(&cy, &member(&cy_id)).await.expect(204);
    app.get(&cy, &format!("/api/v1/teams/{team}/members")).await.expect_error(404, "not_found");
    app.delete(&ada, &member(&cy_id)).await.expect_error(404, "not_found");
    app.delete(&ada, &member(&bob_id)).await.expect(204);
    assert_eq!(app.get(&bob, "/api/v1/teams").await.expect(200)["teams"].as_array().unwrap().len(), 1);
    // The last owner cannot leave; nor can anyone leave their personal team.
    app.delete(&ada, &member(&ada_id)).await.expect_error(409, "conflict");
    app.delete(&ada, &format!("/api/v1/teams/{ada_id}/members/{ada_id}")).await.expect_error(409, "conflict");

    let events: Vec<(String, String)> = sqlx::query_as(
        "SELECT action, target_id FROM audit_events WHERE team_id = $1::uuid AND action LIKE 'member.%' AND action NOT IN ('member.invited', 'member.joined') ORDER BY at, id",
    )
    .bind(&team)
    .fetch_all(app.cp.db())
    .await
    .unwrap();
    assert_eq!(events, [("member.left".into(), cy_id), ("member.removed".into(), bob_id)]);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_member_acts_for_a_team_with_the_team_header(db: PgPool) {
    let app = spawn_app(db).await;
    let ada = app.member("ada@example.com").await;
    let bob = app.member("bob@example.com").await;
    let eve = app.member("eve@example.com").await;
    let team = team(&app, &ada, "Platform").await;
    join(&app, &ada, &team, &bob, "bob@example.com", "viewer").await;

    as_team(&app, Method::POST, &ada, &team, "/api/v1/queues", Some(json!({"name": "shared-jobs"}))).await.expect(201);
    let queues = as_team(&app, Method::GET, &bob, &team, "/api/v1/queues", None).await.expect(200);
    assert_eq!(queues["queues"][0]["slug"], "shared-jobs", "{queues}");
    // Bob's personal team does not hold it.
    assert!(app.get(&bob, "/api/v1/queues").await.expect(200)["queues"].as_array().unwrap().is_empty());
    // A viewer reads, does not create.
    let message = as_team(&app, Method::POST, &bob, &team, "/api/v1/queues", Some(json!({"name": "mine"})))
        .await
        .expect_error(403, "forbidden");
    assert!(message.contains("admin"), "{message}");
    // Not a member: 404, as for a team that does not exist.
    as_team(&app, Method::GET, &eve, &team, "/api/v1/queues", None).await.expect_error(404, "not_found");
    app.get(&eve, &format!("/api/v1/teams/{team}/members")).await.expect_error(404, "not_found");
}

#[sqlx::test(migrations = "../migrations")]
async fn an_owner_deletes_an_empty_team(db: PgPool) {
    let app = spawn_app(db).await;
    let ada = app.member("ada@example.com").await;
    let ada_id = member_id(&app, &ada).await;
    let team = team(&app, &ada, "Platform").await;
    as_team(&app, Method::POST, &ada, &team, "/api/v1/queues", Some(json!({"name": "jobs"}))).await.expect(201);
    app.delete(&ada, &format!("/api/v1/teams/{team}")).await.expect_error(409, "conflict");
    as_team(&app, Method::DELETE, &ada, &team, "/api/v1/queues/jobs", None).await.expect(204);
    app.delete(&ada, &format!("/api/v1/teams/{ada_id}")).await.expect_error(409, "conflict");
    app.delete(&ada, &format!("/api/v1/teams/{team}")).await.expect(204);
    app.get(&ada, &format!("/api/v1/teams/{team}/members")).await.expect_error(404, "not_found");
    assert_eq!(app.get(&ada, "/api/v1/teams").await.expect(200)["teams"].as_array().unwrap().len(), 1);
    assert_eq!(actions(&app, &team).await.last().unwrap(), "team.deleted");
}
