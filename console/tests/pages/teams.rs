//! The console's team pages: the Team page (a new team, the switcher, members and roles, invite
//! links shown once, management keys shown once, leaving, deleting), the invite page behind a
//! link, the Audit page (filters, paging), what each role may post there, and the whole flow in
//! Chromium without JavaScript.

use super::browser::Browser;
use super::support::{Page, TestConsole, Visitor, join_team, member_id, spawn_console};
use aqs_control_plane::keys;
use fantoccini::Locator;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

const OWNER: &str = "olga@example.com";
const MEMBER: &str = "mia@example.com";

/// The value of the `href` of the link whose text starts with `text`.
fn href_before(page: &Page, text: &str) -> String {
    let at = page.body.find(text).unwrap_or_else(|| panic!("no link {text:?}:\n{}", page.body));
    let start = page.body[..at].rfind("href=\"").unwrap() + 6;
    let end = start + page.body[start..].find('"').unwrap();
    page.body[start..end].to_owned()
}

/// The text of the `team-secret` box shown once after an invite or a key.
fn shown_secret(page: &Page) -> Option<String> {
    let at = page.body.find("id=\"team-secret\"")?;
    let start = at + page.body[at..].find('>')? + 1;
    let end = page.body[start..].find("</textarea>")?;
    Some(page.body[start..start + end].to_owned())
}

/// `visitor` creates the team `name` through the Team page; answers its id.
async fn new_team(app: &TestConsole, visitor: &mut Visitor, name: &str) -> Uuid {
    visitor.get("/team").await;
    let created = visitor.post("/team/new", &[("name", name)]).await;
    assert_eq!(created.location(), "/team", "{}", created.body);
    let team: Uuid = visitor.cookie("aqs_team").expect("the new team is chosen").parse().unwrap();
    let page = visitor.follow(created).await;
    page.assert_contains(&format!("Created the team {name}"));
    assert_eq!(page.text_of("team-name").as_deref(), Some(name));
    let stored: String =
        sqlx::query_scalar("SELECT name FROM teams WHERE id = $1").bind(team).fetch_one(app.cp.db()).await.unwrap();
    assert_eq!(stored, name);
    team
}

/// A form's fields.
type Form = Vec<(&'static str, &'static str)>;

async fn events(app: &TestConsole, team: Uuid) -> Vec<String> {
    sqlx::query_scalar("SELECT action FROM audit_events WHERE team_id = $1 ORDER BY at, id")
        .bind(team)
        .fetch_all(app.cp.db())
        .await
        .unwrap()
}

#[sqlx::test(migrations = "../migrations")]
async fn a_new_team_and_the_switcher(db: PgPool) {
    let app = spawn_console(db).await;
    let mut olga = Visitor::new(&app);
    olga.sign_up(OWNER).await;
    olga.create_queue("personal-jobs", "5").await;
    let personal = member_id(&app, OWNER).await;

    // One team: no switcher, the Team page says it is personal.
    let page = olga.get("/team").await;
    assert!(!page.body.contains("id=\"team-switch\""), "{}", page.body);
    assert_eq!(page.text_of("team-name").as_deref(), Some("Your personal team"));
    page.assert_contains("<strong>owner</strong>");
    page.assert_lacks("id=\"invite-form\"");

    // A blank name is shown beside its field and creates nothing.
    olga.get("/team").await;
    let blank = olga.post("/team/new", &[("name", "  ")]).await;
    assert_eq!(blank.status, 422, "{}", blank.body);
    assert!(blank.text_of("team-name-input-error").is_some(), "{}", blank.body);
    let teams: i64 = sqlx::query_scalar("SELECT count(*) FROM teams").fetch_one(app.cp.db()).await.unwrap();
    assert_eq!(teams, 1);

    let acme = new_team(&app, &mut olga, "Acme").await;
    assert_ne!(acme, personal);
    // The console works in Acme: its queue list is empty, a queue made now is Acme's.
    let list = olga.get("/").await;
    list.assert_lacks("personal-jobs");
    list.assert_contains("id=\"team-switch\"");
    list.assert_contains(&format!("<option value=\"{acme}\" selected>Acme</option>"));
    olga.create_queue("acme-jobs", "5").await;
    let owner: Uuid =
        sqlx::query_scalar("SELECT team_id FROM queues WHERE slug = 'acme-jobs'").fetch_one(app.cp.db()).await.unwrap();
    assert_eq!(owner, acme);

    // The header's switcher goes back to the personal team.
    let switched = olga.post("/team/switch", &[("team", &personal.to_string())]).await;
    assert_eq!(switched.location(), "/");
    assert_eq!(olga.cookie("aqs_team"), Some(personal.to_string().as_str()));
    let list = olga.follow(switched).await;
    list.assert_contains("You are now working in your personal team.");
    list.assert_contains("personal-jobs");
    list.assert_lacks("acme-jobs");

    // A team one is not in, or no uuid, is the 404 page and changes nothing.
    for bad in [Uuid::now_v7().to_string(), "acme".to_owned()] {
        let refused = olga.post("/team/switch", &[("team", &bad)]).await;
        assert_eq!(refused.status, 404, "{bad}");
    }
    assert_eq!(olga.cookie("aqs_team"), Some(personal.to_string().as_str()));
    assert_eq!(events(&app, acme).await.first().map(String::as_str), Some("team.created"));
}

#[sqlx::test(migrations = "../migrations")]
async fn an_invite_from_link_to_removal(db: PgPool) {
    let app = spawn_console(db).await;
    let mut olga = Visitor::new(&app);
    olga.sign_up(OWNER).await;
    let mut mia = Visitor::new(&app);
    mia.sign_up(MEMBER).await;
    let acme = new_team(&app, &mut olga, "Acme").await;

    // The invite form's errors land beside their field.
    olga.get("/team").await;
    let bad = olga.post("/team/invites", &[("email", "not-an-email"), ("role", "developer")]).await;
    assert_eq!(bad.status, 422, "{}", bad.body);
    assert!(bad.text_of("invite-email-error").is_some(), "{}", bad.body);

    olga.get("/team").await;
    let made = olga.post("/team/invites", &[("email", MEMBER), ("role", "developer")]).await;
    assert_eq!(made.status, 303, "{}", made.body);
    let shown_at = made.location().to_owned();
    let shown = olga.follow(made).await;
    let link = shown_secret(&shown).expect("the link, once");
    shown.assert_contains(&format!("Invite link for {MEMBER}"));
    let path = link.split_once("/invites/").map(|(_, secret)| format!("/invites/{secret}")).expect("an invite link");
    assert!(path.starts_with("/invites/aqi_"), "{link}");
    // A reload shows it no more; the Team page lists the invite without its link.
    let again = olga.get(&shown_at).await;
    assert!(shown_secret(&again).is_none());
    again.assert_contains("id=\"secret-gone\"");
    let team = olga.get("/team").await;
    team.assert_contains(&format!("data-invite=\"{MEMBER}\""));
    team.assert_lacks(&link);

    // Logged out, the link leads to logging in and back.
    let mut stranger = Visitor::new(&app);
    let login = stranger.get(&path).await;
    assert_eq!(login.status, 303);
    assert!(login.location().starts_with("/login?next=%2Finvites%2Faqi_"), "{}", login.location());

    let invite = mia.get(&path).await;
    assert_eq!(invite.status, 200, "{}", invite.body);
    invite.assert_contains("Join Acme");
    assert_eq!(invite.text_of("invite-role").as_deref(), Some("developer"));
    let joined = mia.post(&path, &[]).await;
    assert_eq!(joined.location(), "/team", "{}", joined.body);
    assert_eq!(mia.cookie("aqs_team"), Some(acme.to_string().as_str()));
    let team = mia.follow(joined).await;
    team.assert_contains("You joined Acme as developer.");
    team.assert_contains("<strong>developer</strong>");
    // A developer sees the members, but neither invites nor keys, and no role forms.
    team.assert_contains(&format!("data-member=\"{OWNER}\""));
    team.assert_lacks("id=\"invite-form\"");
    team.assert_lacks("id=\"key-form\"");
    team.assert_lacks("class=\"role-form\"");
    team.assert_contains("id=\"keys-role\"");

    // The link is spent: a second use is the 404 page saying so, for anyone.
    let mut third = Visitor::new(&app);
    third.sign_up("theo@example.com").await;
    let used = third.get(&path).await;
    assert_eq!(used.status, 404, "{}", used.body);
    assert!(used.text_of("invite-problem").is_some(), "{}", used.body);

    // The owner makes mia a viewer, then removes her after confirming.
    let mia_id = member_id(&app, MEMBER).await;
    olga.get("/team").await;
    let changed = olga.post(&format!("/team/members/{mia_id}/role"), &[("role", "viewer")]).await;
    assert_eq!(changed.location(), "/team", "{}", changed.body);
    olga.follow(changed).await.assert_contains(&format!("{MEMBER} is now a viewer of this team."));
    // The last owner cannot step down.
    let olga_id = member_id(&app, OWNER).await;
    olga.get("/team").await;
    let last = olga.post(&format!("/team/members/{olga_id}/role"), &[("role", "admin")]).await;
    assert_eq!(last.status, 400, "{}", last.body);
    let roles: Vec<(String, String)> = sqlx::query_as(
        "SELECT m.email, tm.role FROM team_members tm JOIN members m ON m.id = tm.member_id
         WHERE tm.team_id = $1 ORDER BY m.email",
    )
    .bind(acme)
    .fetch_all(app.cp.db())
    .await
    .unwrap();
    assert_eq!(roles, [(MEMBER.to_owned(), "viewer".to_owned()), (OWNER.to_owned(), "owner".to_owned())]);

    let team = olga.get("/team").await;
    let remove = href_before(&team, &format!("Remove<span class=\"visually-hidden\"> {MEMBER}"));
    let confirm = olga.get(&remove).await;
    confirm.assert_contains(&format!("Remove {MEMBER} from Acme?"));
    let removed = olga.post(&remove, &[]).await;
    assert_eq!(removed.location(), "/team");
    olga.follow(removed).await.assert_contains(&format!("Removed {MEMBER} from the team."));
    // Mia's console falls back to her personal team.
    let back = mia.get("/team").await;
    assert_eq!(back.text_of("team-name").as_deref(), Some("Your personal team"));

    assert_eq!(
        events(&app, acme).await,
        ["team.created", "member.invited", "member.joined", "member.role_changed", "member.removed"]
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn management_keys_shown_once_and_revoked(db: PgPool) {
    let app = spawn_console(db).await;
    let mut olga = Visitor::new(&app);
    olga.sign_up(OWNER).await;
    let acme = new_team(&app, &mut olga, "Acme").await;

    // Never an owner key.
    olga.get("/team").await;
    let owner_key = olga.post("/team/keys", &[("name", "root"), ("role", "owner")]).await;
    assert_eq!(owner_key.status, 422, "{}", owner_key.body);
    assert!(owner_key.text_of("key-role-error").is_some(), "{}", owner_key.body);

    olga.get("/team").await;
    let made = olga.post("/team/keys", &[("name", "deploy pipeline"), ("role", "developer")]).await;
    assert_eq!(made.status, 303, "{}", made.body);
    let shown = olga.follow(made).await;
    shown.assert_contains("Management key “deploy pipeline” created");
    let secret = shown_secret(&shown).expect("the key, once");
    assert!(secret.starts_with("acm_"), "{secret}");
    let identity = keys::authenticate(&app.cp, &secret).await.expect("the key works");
    assert_eq!(identity.team.as_uuid(), acme);

    let team = olga.get("/team").await;
    team.assert_lacks(&secret);
    team.assert_contains(&format!("acm_…{}", &secret[secret.len() - 4..]));
    let revoke = href_before(&team, "Revoke<span class=\"visually-hidden\"> deploy pipeline");
    olga.get(&revoke).await.assert_contains("Revoke the management key “deploy pipeline”?");
    let revoked = olga.post(&revoke, &[]).await;
    assert_eq!(revoked.location(), "/team");
    olga.follow(revoked).await.assert_contains("class=\"revoked\"");
    assert!(keys::authenticate(&app.cp, &secret).await.is_err(), "a revoked key is refused");
    assert_eq!(events(&app, acme).await, ["team.created", "key.created", "key.revoked"]);
}

#[sqlx::test(migrations = "../migrations")]
async fn team_forms_by_role(db: PgPool) {
    let app = spawn_console(db).await;
    let mut olga = Visitor::new(&app);
    olga.sign_up(OWNER).await;
    let acme = new_team(&app, &mut olga, "Acme").await;
    let olga_id = member_id(&app, OWNER).await;
    let mut mia = Visitor::new(&app);
    mia.sign_up(MEMBER).await;
    join_team(&app, acme, MEMBER, "viewer").await;
    mia.choose_team(acme);

    // What each form needs; `mia` posts each as every role below it and is refused with the 403
    // page naming the role, nothing written.
    let forms: [(&str, Form, &str); 5] = [
        ("/team/invites", vec![("email", "x@example.com"), ("role", "viewer")], "owner"),
        ("/team/keys", vec![("name", "k"), ("role", "viewer")], "admin"),
        ("/team/delete", vec![], "owner"),
        ("/audit", vec![], "admin"),
        ("/team/members/{olga}/role", vec![("role", "viewer")], "owner"),
    ];
    let before = events(&app, acme).await;
    let mut checked = 0;
    for role in ["viewer", "developer", "admin"] {
        sqlx::query("UPDATE team_members SET role = $1 WHERE team_id = $2 AND member_id = $3")
            .bind(role)
            .bind(acme)
            .bind(member_id(&app, MEMBER).await)
            .execute(app.cp.db())
            .await
            .unwrap();
        for (path, fields, needed) in &forms {
            let rank = |r: &str| ["viewer", "developer", "admin", "owner"].iter().position(|x| *x == r).unwrap();
            if rank(role) >= rank(needed) {
                continue;
            }
            let path = path.replace("{olga}", &olga_id.to_string());
            mia.get("/team").await;
            let answer = if path == "/audit" { mia.get(&path).await } else { mia.post(&path, fields).await };
            assert_eq!(answer.status, 403, "{role} on {path}: {}", answer.body);
            answer.assert_contains(&format!("{needed} role"));
            checked += 1;
        }
    }
    assert_eq!(checked, 13, "each form below its role: 5 for a viewer, 5 for a developer, 3 for an admin");
    assert_eq!(events(&app, acme).await, before, "a refused form writes nothing");
    let keys: i64 = sqlx::query_scalar("SELECT count(*) FROM management_keys").fetch_one(app.cp.db()).await.unwrap();
    let invites: i64 = sqlx::query_scalar("SELECT count(*) FROM invites").fetch_one(app.cp.db()).await.unwrap();
    assert_eq!((keys, invites), (0, 0));

    // An admin creates keys but no invites, and reads the audit log.
    let team = mia.get("/team").await;
    team.assert_contains("id=\"key-form\"");
    team.assert_lacks("id=\"invite-form\"");
    team.assert_contains("id=\"audit-link\"");
    assert_eq!(mia.get("/audit").await.status, 200);
    // Any member may leave; the console then works in their personal team.
    let confirm = mia.get("/team/leave").await;
    confirm.assert_contains("Leave Acme?");
    let left = mia.post("/team/leave", &[]).await;
    assert_eq!(left.location(), "/");
    assert_eq!(mia.cookie("aqs_team"), Some(member_id(&app, MEMBER).await.to_string().as_str()));
    assert_eq!(events(&app, acme).await.last().map(String::as_str), Some("member.left"));

    // The owner deletes the empty team after confirming.
    let confirm = olga.get("/team/delete").await;
    confirm.assert_contains("Delete the team Acme?");
    let deleted = olga.post("/team/delete", &[]).await;
    assert_eq!(deleted.location(), "/");
    let gone: bool = sqlx::query_scalar("SELECT deleted_at IS NOT NULL FROM teams WHERE id = $1")
        .bind(acme)
        .fetch_one(app.cp.db())
        .await
        .unwrap();
    assert!(gone);
    assert_eq!(olga.get("/team").await.text_of("team-name").as_deref(), Some("Your personal team"));
}

#[sqlx::test(migrations = "../migrations")]
async fn the_audit_page_filters_and_pages(db: PgPool) {
    let app = spawn_console(db).await;
    let mut olga = Visitor::new(&app);
    olga.sign_up(OWNER).await;
    let acme = new_team(&app, &mut olga, "Acme").await;
    // 60 more events, as older actions of two members would have left them.
    for n in 0..60 {
        let (email, action) = if n % 3 == 0 { ("mia@example.com", "queue.deleted") } else { (OWNER, "queue.created") };
        sqlx::query(
            "INSERT INTO audit_events (id, at, team_id, actor_kind, actor_email, action, target_kind, target_id, ip,
                                       user_agent, request_id)
             VALUES ($1, now() - make_interval(mins => $2), $3, 'member', $4, $5, 'queue', $6, '203.0.113.9',
                     'curl/8', $7)",
        )
        .bind(Uuid::now_v7())
        .bind(n + 1)
        .bind(acme)
        .bind(email)
        .bind(action)
        .bind(format!("q{n}"))
        .bind(format!("req-{n}"))
        .execute(app.cp.db())
        .await
        .unwrap();
    }

    let first = olga.get("/audit").await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.body.matches("<tr data-action=").count(), 50);
    // Newest first: the team's creation, then the event of a minute ago.
    let at = first.body.find("data-action=\"team.created\"").unwrap();
    assert!(at < first.body.find("req-0").unwrap());
    first.assert_contains("203.0.113.9");
    first.assert_contains("curl/8");
    let older = href_before(&first, "Older events");
    let older = older.replace("&amp;", "&");
    let second = olga.get(&older).await;
    assert_eq!(second.body.matches("<tr data-action=").count(), 11);
    assert!(!second.body.contains("id=\"older-events\""));

    let filtered = olga.get("/audit?action=queue.deleted&actor=MIA%40example.com").await;
    assert_eq!(filtered.body.matches("<tr data-action=\"queue.deleted\"").count(), 20, "{}", filtered.body);
    assert_eq!(filtered.body.matches("<tr data-action=").count(), 20);
    let none = olga.get("/audit?action=key.created").await;
    none.assert_contains("No event matches the filter.");
    let bad = olga.get("/audit?action=DROP%20TABLE").await;
    assert_eq!(bad.status, 422);
    assert!(bad.text_of("audit-action-error").is_some(), "{}", bad.body);
}

/// The whole flow in Chromium with JavaScript off: a new team from the Team page, an invite link
/// opened by the member and joined with its button, and the header's switcher.
#[sqlx::test(migrations = "../migrations")]
async fn teams_work_without_javascript(db: PgPool) {
    let app = spawn_console(db).await;
    let mut olga = Visitor::new(&app);
    olga.sign_up(OWNER).await;
    let mut mia = Visitor::new(&app);
    mia.sign_up(MEMBER).await;

    let browser = Browser::open(&app, &olga, false, 1280).await;
    browser.goto(&format!("{}/team", app.base)).await;
    let input = browser.client.find(Locator::Css("#team-name-input")).await.unwrap();
    input.send_keys("Acme").await.unwrap();
    browser.client.find(Locator::Css("#new-team-form button[type=submit]")).await.unwrap().click().await.unwrap();
    browser.until("the new team", "return document.getElementById('team-name')?.textContent === 'Acme';").await;
    let email = browser.client.find(Locator::Css("#invite-email")).await.unwrap();
    email.send_keys(MEMBER).await.unwrap();
    browser.client.find(Locator::Css("#invite-role option[value=admin]")).await.unwrap().click().await.unwrap();
    browser.client.find(Locator::Css("#invite-form button[type=submit]")).await.unwrap().click().await.unwrap();
    browser.until("the link", "return !!document.getElementById('team-secret');").await;
    let link = browser.run("return document.getElementById('team-secret').value;").await;
    let link = link.as_str().unwrap().to_owned();

    // Mia opens the link in her own browser and joins with the button.
    let other = Browser::open(&app, &mia, false, 1280).await;
    let path = &link[link.find("/invites/").unwrap()..];
    other.goto(&format!("{}{path}", app.base)).await;
    assert_eq!(other.run("return document.getElementById('invite-role').textContent;").await, json!("admin"));
    other.client.find(Locator::Css("#invite-accept button[type=submit]")).await.unwrap().click().await.unwrap();
    other
        .until(
            "joined",
            "return location.pathname === '/team' && document.body.textContent.includes('You joined Acme');",
        )
        .await;

    // Back in olga's browser: mia is listed; the header's switcher returns to the personal team.
    browser.goto(&format!("{}/team", app.base)).await;
    let listed = browser.run(&format!("return !!document.querySelector('[data-member=\"{MEMBER}\"]');")).await;
    assert_eq!(listed, json!(true));
    assert_eq!(browser.contrast_failures().await, json!([]));
    browser.screenshot("team").await;
    browser.goto(&format!("{}/audit", app.base)).await;
    assert_eq!(browser.run("return document.querySelectorAll('#events tbody tr').length;").await, json!(3));
    browser.screenshot("audit").await;
    browser.goto(&format!("{}/team", app.base)).await;
    let personal = member_id(&app, OWNER).await;
    browser
        .client
        .find(Locator::Css(&format!("#team-choice option[value='{personal}']")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    browser.client.find(Locator::Css("#team-switch button[type=submit]")).await.unwrap().click().await.unwrap();
    browser
        .until("switched", "return document.body.textContent.includes('You are now working in your personal team.');")
        .await;
    assert_eq!(browser.contrast_failures().await, json!([]));
}
