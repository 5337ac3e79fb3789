//! The operator page `/admin/callback-urls`: the 404 page for members and logged-out visitors;
//! for an operator, finding a member, authorising prefixes (with the control plane's rules beside
//! the field) and withdrawing one after a confirmation, which names the queues whose push stopped.

use super::push::target;
use super::support::{OPERATOR, Visitor, spawn_console};
use sqlx::PgPool;

#[sqlx::test(migrations = "../migrations")]
async fn the_operator_page_is_a_404_page_for_everyone_else(db: PgPool) {
    let app = spawn_console(db).await;
    let mut guest = Visitor::new(&app);
    let page = guest.get("/admin/callback-urls").await;
    assert_eq!(page.status, 404, "not even a redirect to log in");
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    for path in ["/admin/callback-urls", "/admin/callback-urls?email=ada@example.com", "/admin/callback-urls/remove"] {
        let page = ada.get(path).await;
        assert_eq!(page.status, 404, "GET {path}");
        page.assert_contains("There is nothing here");
    }
    ada.get("/").await;
    let page =
        ada.post("/admin/callback-urls", &[("email", "ada@example.com"), ("prefix", "https://a.example/")]).await;
    assert_eq!(page.status, 404);
    let page = ada.post("/admin/callback-urls/remove", &[("email", "ada@example.com"), ("id", "x")]).await;
    assert_eq!(page.status, 404);
    let mut operator = Visitor::new(&app);
    operator.sign_up(OPERATOR).await;
    operator.get("/admin/callback-urls?email=ada@example.com").await.assert_contains("id=\"no-prefixes\"");
}

#[sqlx::test(migrations = "../migrations")]
async fn an_operator_authorises_and_withdraws_callback_urls(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;
    let mut operator = Visitor::new(&app);
    let home = operator.sign_up(OPERATOR).await;
    home.assert_contains("<a href=\"/admin/callback-urls\">Callback URLs</a>");

    let page = operator.get("/admin/callback-urls").await;
    assert_eq!(page.status, 200);
    page.assert_contains("<h1>Callback URLs</h1>");
    page.assert_lacks("Authorise a prefix");
    let page = operator.get("/admin/callback-urls?email=nobody@example.com").await;
    page.assert_contains("id=\"member-email-error\">No member with this email.");
    let page = operator.get("/admin/callback-urls?email=ADA@example.com").await;
    page.assert_contains("Authorised for ada@example.com");
    page.assert_contains("None yet: this member cannot turn on push.");

    // The prefix rules, beside the field.
    for (prefix, rule) in [
        ("https://app.example.com/q?x=1", "A ?query is not allowed in a callback URL prefix."),
        ("ftp://app.example.com/", "The scheme must be http or https"),
        ("https://u:p@app.example.com/", "Credentials"),
    ] {
        let page = operator.post("/admin/callback-urls", &[("email", "ada@example.com"), ("prefix", prefix)]).await;
        assert_eq!(page.status, 422, "{prefix}");
        assert!(page.text_of("prefix-error").unwrap_or_default().contains(rule), "{prefix}: {}", page.body);
        page.assert_contains(&format!("value=\"{}\"", prefix.replace('&', "&amp;")));
    }

    let added = operator
        .post("/admin/callback-urls", &[("email", "ada@example.com"), ("prefix", "http://localhost:9/ada")])
        .await;
    assert_eq!(added.location(), "/admin/callback-urls?email=ada%40example.com");
    let page = operator.follow(added).await;
    page.assert_contains("Authorised http://localhost:9/ada for ada@example.com.");
    page.assert_contains("<th scope=\"row\" data-label=\"Prefix\"><code>http://localhost:9/ada</code></th>");
    let again = operator
        .post("/admin/callback-urls", &[("email", "ada@example.com"), ("prefix", "http://localhost:9/ada")])
        .await;
    assert_eq!(again.status, 422);
    again.assert_contains("class=\"error-summary\" role=\"alert\">This callback URL prefix is already authorised");
    operator
        .post("/admin/callback-urls", &[("email", "ada@example.com"), ("prefix", "http://localhost:9/other")])
        .await;

    // The member sees it as help beside the URL field, and turns push on under it.
    let push = ada.get("/queues/jobs/push").await;
    push.assert_contains("<li><code>http://localhost:9/ada</code></li>");
    assert_eq!(ada.post("/queues/jobs/push", &target("http://localhost:9/ada/jobs", "30")).await.status, 303);

    // Withdrawing a prefix that covers nothing stops nothing.
    let page = operator.get("/admin/callback-urls?email=ada@example.com").await;
    let marker = "\">Withdraw<span class=\"visually-hidden\"> http://localhost:9/other";
    let at = page.body.find(marker).expect("a withdraw link");
    let start = page.body[..at].rfind("href=\"").unwrap() + 6;
    let link = page.body[start..at].replace("&amp;", "&");
    let confirm = operator.get(&link).await;
    assert_eq!(confirm.status, 200);
    confirm.assert_contains("Withdraw <code>http://localhost:9/other</code> from ada@example.com?");
    let id = confirm.input_value("id").unwrap();
    let done = operator.post("/admin/callback-urls/remove", &[("email", "ada@example.com"), ("id", &id)]).await;
    let page = operator.follow(done).await;
    page.assert_contains("Withdrew http://localhost:9/other from ada@example.com. No queue&#39;s push was affected.");

    // Withdrawing the one under which push runs stops it, and says where.
    let marker = "\">Withdraw<span class=\"visually-hidden\"> http://localhost:9/ada";
    let at = page.body.find(marker).expect("a withdraw link");
    let start = page.body[..at].rfind("href=\"").unwrap() + 6;
    let confirm = operator.get(&page.body[start..at].replace("&amp;", "&")).await;
    let id = confirm.input_value("id").unwrap();
    let done = operator.post("/admin/callback-urls/remove", &[("email", "ada@example.com"), ("id", &id)]).await;
    let page = operator.follow(done).await;
    page.assert_contains("Push stopped on: jobs.");
    page.assert_contains("None yet: this member cannot turn on push.");
    ada.get("/queues/jobs/push").await.assert_contains("Push is off.");
    let gone = operator.post("/admin/callback-urls/remove", &[("email", "ada@example.com"), ("id", &id)]).await;
    assert_eq!(gone.status, 404);
}
