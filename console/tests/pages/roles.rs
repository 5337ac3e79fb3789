//! Team roles and suspension on the console's forms: a role × form matrix (a member of another
//! member's team, as viewer, developer, admin and owner, posts each of the 35 state-changing forms
//! of that team: allowed, or the 403 page naming the role needed with nothing changed), what a viewer
//! reads (no message bodies, no buttons of what they cannot do), and a suspended team (the banner
//! with the operator's reason, every form refused, logging out still works).

use super::support::{
    OPERATOR, Page, Part, TestConsole, Visitor, fail_all, join_team, member_id, publish, queue_of, spawn_console,
};
use aqs_control_plane::{TeamId, TeamRole, tokens};
use aqs_core::time::now_ms;
use sqlx::PgPool;
use uuid::Uuid;

const OWNER: &str = "olga@example.com";
const MEMBER: &str = "mia@example.com";

/// The team's state a refused form must leave as it was: its rows (queues, tokens, push, domains,
/// hosts, billing) and the `jobs` queue's messages by state.
async fn snapshot(t: &Team) -> String {
    let mut out = String::new();
    for table in [
        "queues",
        "tokens",
        "push_targets",
        "domains",
        "hosts",
        "billing_accounts",
        "queue_add_ons",
        "teams",
        "team_members",
        "invites",
        "management_keys",
    ] {
        let rows: Option<String> = sqlx::query_scalar(&format!(
            "SELECT string_agg(to_jsonb(t)::text, E'\\n' ORDER BY to_jsonb(t)::text) FROM {table} t"
        ))
        .fetch_one(t.app.cp.db())
        .await
        .unwrap();
        out.push_str(&format!("{table}:\n{}\n", rows.unwrap_or_default()));
    }
    let stats = t.app.engine.stats(t.jobs, now_ms()).await.unwrap();
    let counts = stats.map(|s| (s.ready, s.in_flight, s.delayed, s.total));
    let dead = t.app.engine.count_dead_letters(t.jobs, "").await.unwrap();
    out.push_str(&format!("jobs: {counts:?}, {dead} dead"));
    out
}

/// The owner's team, ready for every form: a queue `jobs` (one attempt) with a dead letter and three
/// waiting messages, a `send` token beside its first (all scopes), a queue `hooks` that pushes, and
/// a domain; and the member `mia` in it with `role`, acting on it.
struct Team {
    app: TestConsole,
    team: Uuid,
    jobs: aqs_core::ids::QueueId,
    mia: Visitor,
    role: TeamRole,
    domain: Uuid,
    /// Form posts checked.
    checked: usize,
}

async fn team(db: PgPool, role: TeamRole) -> Team {
    let app = spawn_console(db).await;
    let mut operator = Visitor::new(&app);
    operator.sign_up(OPERATOR).await;
    let mut olga = Visitor::new(&app);
    olga.sign_up(OWNER).await;
    super::push::authorise(&mut operator, OWNER, "http://localhost:9/olga").await;
    olga.create_queue("jobs", "1").await;
    olga.create_queue("hooks", "5").await;
    olga.get("/queues/hooks/push").await;
    let set = olga.post("/queues/hooks/push", &super::push::target("http://localhost:9/olga/hooks", "30")).await;
    assert_eq!(set.status, 303, "{}", set.body);
    olga.get("/queues/jobs/tokens").await;
    let minted = olga.post("/queues/jobs/tokens", &[("name", "olga-send"), ("scopes", "send")]).await;
    assert_eq!(minted.status, 303, "{}", minted.body);
    olga.get("/hosts").await;
    let added = olga.post("/hosts/domains", &[("name", "olga.example")]).await;
    assert_eq!(added.status, 303, "{}", added.body);
    let domain =
        sqlx::query_scalar("SELECT id FROM domains WHERE name = 'olga.example'").fetch_one(app.cp.db()).await.unwrap();

    let jobs = queue_of(&app, OWNER, "jobs").await;
    publish(&app, &jobs, "payload-dead", "text/plain").await;
    fail_all(&app, &jobs, "it broke").await;
    for body in ["payload-a", "payload-b", "payload-c"] {
        publish(&app, &jobs, body, "text/plain").await;
    }

    let team = member_id(&app, OWNER).await;
    let mut mia = Visitor::new(&app);
    mia.sign_up(MEMBER).await;
    join_team(&app, team, MEMBER, role.as_str()).await;
    mia.choose_team(team);
    let home = mia.get("/").await;
    home.assert_contains("href=\"/queues/jobs\"");
    Team { app, team, jobs: jobs.id, mia, role, domain, checked: 0 }
}

/// A fresh one-time form id, as each rendered form has.
fn fresh() -> String {
    Uuid::new_v4().simple().to_string()
}

impl Team {
    /// Posts `fields` to `path` as the member; `needs` is the least role the form takes.
    /// Allowed: answered with `allowed` (the form's own answer). Refused: the 403 page naming the
    /// role needed, and nothing changed. Returns the answer.
    async fn post(&mut self, path: &str, fields: &[(&str, &str)], needs: TeamRole, allowed: u16) -> Page {
        let id = fresh();
        let mut fields = fields.to_vec();
        fields.push(("form_id", &id));
        let before = snapshot(self).await;
        let page = self.mia.post(path, &fields).await;
        self.judge(path, needs, allowed, &page, &before).await;
        page
    }

    async fn post_multipart(&mut self, path: &str, parts: &[Part<'_>], needs: TeamRole, allowed: u16) -> Page {
        let id = fresh();
        let mut parts = parts.to_vec();
        parts.push(Part::Text("form_id", &id));
        let before = snapshot(self).await;
        let page = self.mia.post_multipart(path, &parts).await;
        self.judge(path, needs, allowed, &page, &before).await;
        page
    }

    async fn judge(&mut self, path: &str, needs: TeamRole, allowed: u16, page: &Page, before: &str) {
        self.checked += 1;
        if self.role >= needs {
            assert_eq!(page.status, allowed, "{} may POST {path}: {}", self.role, page.body);
            return;
        }
        assert_eq!(page.status, 403, "{} may not POST {path}: {}", self.role, page.body);
        page.assert_contains(&format!("This needs the {needs} role or higher in the team; yours is {}.", self.role));
        page.assert_contains("Your role does not allow this");
        assert_eq!(snapshot(self).await, before, "{} POST {path} was refused but changed something", self.role);
    }

    async fn token_id(&self, name: &str) -> String {
        let slug = aqs_control_plane::slug::Slug::parse("jobs").unwrap();
        let list = tokens::list(&self.app.cp, TeamId::personal(olga_id(self).await), &slug).await.unwrap();
        list.into_iter().find(|t| t.name == name).expect("the token").id.to_string()
    }
}

async fn olga_id(t: &Team) -> aqs_control_plane::MemberId {
    let member = aqs_control_plane::auth::login(
        &t.app.cp,
        aqs_control_plane::Credentials { email: OWNER.into(), password: super::support::PASSWORD.into() },
        aqs_control_plane::client_addr::ClientAddr(None),
    )
    .await
    .expect("login")
    .member;
    member.id
}

/// Every state-changing form of the team, in an order where each still has something to act on.
async fn every_form(mut t: Team) -> usize {
    use TeamRole::{Admin, Developer, Owner};
    // Queues and their settings.
    t.post("/new", &[("name", "extra"), ("intent", "create")], Admin, 303).await;
    let settings = [
        ("name", "jobs"),
        ("visibility_timeout_seconds", "45"),
        ("max_attempts", "1"),
        ("payload_size", "1048576"),
        ("storage_limit_mib", "256"),
    ];
    t.post("/queues/jobs/settings", &settings, Admin, 303).await;
    t.post("/queues/jobs/pause", &[], Admin, 303).await;
    t.post("/queues/jobs/resume", &[], Admin, 303).await;

    // Tokens: a developer's without `manage`, an admin's with it.
    t.post("/queues/jobs/tokens", &[("name", "mia-send"), ("scopes", "send")], Developer, 303).await;
    t.post("/queues/jobs/tokens", &[("name", "mia-manage"), ("scopes", "manage")], Admin, 303).await;
    let send = t.token_id("olga-send").await;
    t.post(&format!("/queues/jobs/tokens/{send}/revoke"), &[], Developer, 303).await;
    let all = t.token_id("default").await;
    t.post(&format!("/queues/jobs/tokens/{all}/revoke"), &[], Admin, 303).await;

    // Push.
    t.post("/queues/hooks/push", &super::push::target("http://localhost:9/olga/hooks2", "30"), Admin, 303).await;
    t.post("/queues/hooks/push/rotate-secret", &[], Admin, 303).await;
    t.post("/queues/hooks/push/stop", &[], Admin, 303).await;

    // Messages: send, receive and settle (developer); delete one and purge (admin).
    let parts = [Part::Text("body", "from mia"), Part::Text("content_type", "text/plain")];
    t.post_multipart("/queues/jobs/messages/send", &parts, Developer, 303).await;
    let received = t.post("/queues/jobs/messages/receive", &[("visibility_seconds", "30")], Developer, 303).await;
    let held = match received.status {
        303 => received.location().rsplit('/').next().unwrap().to_owned(),
        _ => "0".repeat(32),
    };
    t.post(&format!("/queues/jobs/messages/received/{held}/ack"), &[], Developer, 303).await;
    let list = t.mia.get("/queues/jobs/messages").await;
    assert_eq!(list.status, 200, "every role reads the list");
    let at = list.body.find("messages/view?entry=").expect("a waiting message") + "messages/view?entry=".len();
    let entry = list.body[at..].split('"').next().unwrap().to_owned();
    t.post(&format!("/queues/jobs/messages/delete?entry={entry}"), &[], Admin, 303).await;
    t.post("/queues/jobs/messages/purge", &[], Admin, 303).await;

    // Dead letters.
    t.post("/queues/jobs/dead-letters/replay", &[("all", "true")], Admin, 303).await;
    t.post("/queues/jobs/dead-letters/purge", &[("all", "true")], Admin, 303).await;

    // Hosts and domains (an unknown id is the 404 page to the roles that pass).
    t.post("/hosts/domains", &[("name", "mia.example")], Admin, 303).await;
    let unknown = Uuid::new_v4();
    t.post(&format!("/hosts/domains/{unknown}/verify"), &[], Admin, 404).await;
    let domain = t.domain;
    t.post(&format!("/hosts/domains/{domain}/remove"), &[], Admin, 303).await;
    t.post("/hosts", &[("hostname", "q.mia.example"), ("queue", "jobs")], Admin, 422).await;
    t.post(&format!("/hosts/{unknown}/check"), &[], Admin, 404).await;
    t.post(&format!("/hosts/{unknown}/remove"), &[], Admin, 404).await;

    // Billing (off in tests: setup and portal say so, as a 400 page, to the owner).
    t.post("/billing/budget", &[("monthly_limit_dollars", "20"), ("alert_percent", "80")], Owner, 303).await;
    t.post("/billing/setup", &[], Owner, 400).await;
    t.post("/billing/portal", &[], Owner, 400).await;

    // The Team page: keys (admin); invites, roles, removal and deleting the team (owner). The team is
    // the owner's personal one, so what its rules refuse (no invites, its owner stays, it is not
    // deleted on its own) is refused to an owner too, after the role check (422 form, 400 page);
    // unknown ids are the 404 page.
    t.post("/team/keys", &[("name", "mia-key"), ("role", "viewer")], Admin, 303).await;
    t.post(&format!("/team/keys/{unknown}/revoke"), &[], Admin, 404).await;
    t.post("/team/invites", &[("email", "x@example.com"), ("role", "viewer")], Owner, 422).await;
    t.post(&format!("/team/invites/{unknown}/revoke"), &[], Owner, 404).await;
    let olga = olga_id(&t).await.as_uuid();
    t.post(&format!("/team/members/{olga}/role"), &[("role", "owner")], Owner, 303).await;
    t.post(&format!("/team/members/{olga}/remove"), &[], Owner, 400).await;
    t.post("/team/delete", &[], Owner, 400).await;

    // Last: deleting the queue.
    t.post("/queues/jobs/delete", &[("confirm_name", "jobs")], Admin, 303).await;
    let gone = queue_exists(&t, "jobs").await;
    assert_eq!(gone, t.role < Admin, "{}: the queue is deleted only by an admin or owner", t.role);
    t.checked
}

async fn queue_exists(t: &Team, slug: &str) -> bool {
    sqlx::query_scalar("SELECT count(*) > 0 FROM queues WHERE slug = $1 AND deleted_at IS NULL")
        .bind(slug)
        .fetch_one(t.app.cp.db())
        .await
        .unwrap()
}

#[sqlx::test(migrations = "../migrations")]
async fn a_viewer_is_refused_every_form(db: PgPool) {
    let checked = every_form(team(db, TeamRole::Viewer).await).await;
    assert_eq!(checked, 35);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_developer_sends_receives_and_mints_tokens_without_manage(db: PgPool) {
    let checked = every_form(team(db, TeamRole::Developer).await).await;
    assert_eq!(checked, 35);
}

#[sqlx::test(migrations = "../migrations")]
async fn an_admin_may_do_everything_but_billing(db: PgPool) {
    let checked = every_form(team(db, TeamRole::Admin).await).await;
    assert_eq!(checked, 35);
}

#[sqlx::test(migrations = "../migrations")]
async fn an_owner_may_do_everything(db: PgPool) {
    let checked = every_form(team(db, TeamRole::Owner).await).await;
    assert_eq!(checked, 35);
}

#[sqlx::test(migrations = "../migrations")]
async fn a_viewer_reads_every_page_but_no_body_and_sees_no_button_it_cannot_use(db: PgPool) {
    let mut t = team(db, TeamRole::Viewer).await;
    let list = t.mia.get("/queues/jobs/messages").await;
    assert_eq!(list.status, 200);
    list.assert_contains("Message bodies are not shown: the viewer role cannot read them.");
    list.assert_lacks("payload-a");
    list.assert_lacks("Send a message…");
    list.assert_lacks("Purge waiting…");
    list.assert_lacks("/messages/receive");
    let at = list.body.find("messages/view?entry=").unwrap();
    let href = list.body[at..].split('"').next().unwrap().to_owned();
    let view = t.mia.get(&format!("/queues/jobs/{href}")).await;
    assert_eq!(view.status, 200, "{}", view.body);
    view.assert_contains("Not shown: the viewer role cannot read message bodies.");
    view.assert_contains("id=\"message-meta\"");
    view.assert_lacks("payload-");
    view.assert_lacks("id=\"delete-message\"");
    let dead = t.mia.get("/queues/jobs/dead-letters").await;
    assert_eq!(dead.status, 200);
    dead.assert_contains("it broke");
    dead.assert_lacks("payload-dead");
    dead.assert_lacks("Replay all…");
    let settings = t.mia.get("/queues/jobs/settings").await;
    assert_eq!(settings.status, 200);
    settings.assert_contains("This needs the admin role or higher in this team.");
    settings.assert_lacks("Delete this queue");
    settings.assert_lacks("Pause queue");
    let tokens = t.mia.get("/queues/jobs/tokens").await;
    assert_eq!(tokens.status, 200);
    tokens.assert_contains("olga-send");
    tokens.assert_lacks("Create token");
    tokens.assert_lacks("/revoke");
    let home = t.mia.get("/").await;
    home.assert_lacks("href=\"/new\"");
    for path in
        ["/queues/jobs", "/queues/jobs/activity", "/queues/jobs/consumers", "/queues/hooks/push", "/hosts", "/billing"]
    {
        let page = t.mia.get(path).await;
        assert_eq!(page.status, 200, "{path}: {}", page.body);
    }
    let push = t.mia.get("/queues/hooks/push").await;
    push.assert_contains("http://localhost:9/olga/hooks");
    push.assert_lacks("Rotate the secret…");
    push.assert_lacks("Stop push…");
    // The confirmation pages of what a viewer cannot do are refused as their forms are.
    let confirm = t.mia.get("/queues/jobs/dead-letters/purge").await;
    assert_eq!(confirm.status, 403);
    confirm.assert_contains("This needs the admin role or higher in the team; yours is viewer.");
    // A developer reads the bodies.
    sqlx::query("UPDATE team_members SET role = 'developer' WHERE team_id = $1 AND member_id <> team_id")
        .bind(t.team)
        .execute(t.app.cp.db())
        .await
        .unwrap();
    let list = t.mia.get("/queues/jobs/messages").await;
    list.assert_contains("payload-a");
    list.assert_contains("Send a message…");
    list.assert_lacks("Purge waiting…");
}

#[sqlx::test(migrations = "../migrations")]
async fn a_suspended_team_is_read_only_with_the_reason(db: PgPool) {
    let app = spawn_console(db).await;
    let mut olga = Visitor::new(&app);
    olga.sign_up(OWNER).await;
    olga.create_queue("jobs", "5").await;
    let jobs = queue_of(&app, OWNER, "jobs").await;
    publish(&app, &jobs, "payload-a", "text/plain").await;
    let team = member_id(&app, OWNER).await;
    sqlx::query("UPDATE teams SET suspended_at = now(), suspended_reason = 'unpaid invoices' WHERE id = $1")
        .bind(team)
        .execute(app.cp.db())
        .await
        .unwrap();

    let banner = "This team is suspended: unpaid invoices. Its pages are read-only.";
    for path in ["/", "/queues/jobs", "/queues/jobs/messages", "/queues/jobs/settings", "/hosts", "/billing"] {
        let page = olga.get(path).await;
        assert_eq!(page.status, 200, "{path}: {}", page.body);
        page.assert_contains(banner);
    }
    let settings = olga.get("/queues/jobs/settings").await;
    settings.assert_lacks("Delete this queue");
    settings.assert_contains("The team is suspended: nothing here can be changed.");
    // The owner still reads the bodies: reading is not a change.
    olga.get("/queues/jobs/messages").await.assert_contains("payload-a");

    let id = fresh();
    let refused = olga.post("/queues/jobs/pause", &[("form_id", &id)]).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    refused.assert_contains("This team is suspended");
    refused.assert_contains("An operator suspended this team: unpaid invoices.");
    let deleted = olga.post("/queues/jobs/delete", &[("confirm_name", "jobs")]).await;
    assert_eq!(deleted.status, 403, "{}", deleted.body);
    let created = olga.post("/new", &[("name", "more"), ("intent", "create"), ("form_id", &fresh())]).await;
    assert_eq!(created.status, 403, "{}", created.body);
    let paused: bool = sqlx::query_scalar("SELECT paused FROM queues WHERE slug = 'jobs' AND deleted_at IS NULL")
        .fetch_one(app.cp.db())
        .await
        .unwrap();
    assert!(!paused, "nothing changed");
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM queues WHERE deleted_at IS NULL")
        .fetch_one(app.cp.db())
        .await
        .unwrap();
    assert_eq!(count, 1);

    // Logging out is the member's own, not the team's.
    let out = olga.post("/logout", &[]).await;
    assert_eq!(out.status, 303, "{}", out.body);
    assert_eq!(out.location(), "/login");
    assert_eq!(olga.get("/").await.status, 303, "logged out");
}
