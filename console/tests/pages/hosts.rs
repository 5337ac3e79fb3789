//! The Hosts page: adding a domain shows the TXT record to create, verifying before it exists says
//! so, verifying after proves it; adding a host shows the CNAME to create and to keep DNS-only,
//! its live status, the queue page lists it, a second claim of the hostname is refused beside the
//! form, removing it leaves the queue. The DNS is a real `pebble-challtestsrv` the test starts.

use super::support::{OPERATOR, Visitor, spawn_console_with_dns};
use aqs_testkit::dns::TestDns;
use sqlx::PgPool;

/// The text between `start` and the next `end` after it.
fn between<'a>(body: &'a str, start: &str, end: &str) -> &'a str {
    let from = body.find(start).unwrap_or_else(|| panic!("{start} in {body}")) + start.len();
    &body[from..from + body[from..].find(end).unwrap()]
}

#[sqlx::test(migrations = "../migrations")]
async fn add_and_verify_a_domain_then_add_check_and_remove_a_host(db: PgPool) {
    let dns = TestDns::start().await;
    let app = spawn_console_with_dns(db, &format!("127.0.0.1:{}", dns.port)).await;
    let mut ada = Visitor::new(&app);
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "5").await;

    let empty = ada.get("/hosts").await;
    assert_eq!(empty.status, 200);
    empty.assert_contains("id=\"no-domains\"");
    let bad = ada.post("/hosts/domains", &[("name", "nodot")]).await;
    assert_eq!(bad.status, 422);
    bad.assert_contains("id=\"domain-name-error\"");

    let added = ada.post("/hosts/domains", &[("name", "Example.test")]).await;
    let page = ada.follow(added).await;
    page.assert_contains(
        "Added example.test. Create the TXT record _aqs-challenge.example.test with the value aqs-verify=",
    );
    let value = between(&page.body, "<code class=\"txt-value\">", "</code>").to_owned();
    let id = between(&page.body, "action=\"/hosts/domains/", "/verify\"").to_owned();

    let early = ada.post(&format!("/hosts/domains/{id}/verify"), &[]).await;
    ada.follow(early)
        .await
        .assert_contains("example.test is not verified yet: no TXT record at _aqs-challenge.example.test");
    let early_host = ada.post("/hosts", &[("hostname", "queue.example.test"), ("queue", "jobs")]).await;
    assert_eq!(early_host.status, 422);
    early_host.assert_contains("id=\"hostname-error\"");

    dns.set_txt("_aqs-challenge.example.test", &value).await;
    let verified = ada.post(&format!("/hosts/domains/{id}/verify"), &[]).await;
    ada.follow(verified).await.assert_contains("example.test is verified");

    let host = ada.post("/hosts", &[("hostname", "queue.example.test"), ("queue", "jobs")]).await;
    let page = ada.follow(host).await;
    page.assert_contains("Create the DNS-only CNAME record queue.example.test → edge.aqs.localhost");
    page.assert_contains("Keep it DNS-only");
    page.assert_contains("Setting up: waiting for DNS");
    let overview = ada.get("/queues/jobs").await;
    overview.assert_contains("<code>queue.example.test</code>: Setting up");

    // A domain is verified for one member at a time: Bea, with her own value beside Ada's, is told
    // why not.
    let mut bea = Visitor::new(&app);
    bea.sign_up("bea@example.com").await;
    bea.create_queue("theirs", "5").await;
    bea.get("/hosts").await;
    let added = bea.post("/hosts/domains", &[("name", "example.test")]).await;
    let page = bea.follow(added).await;
    let value = between(&page.body, "<code class=\"txt-value\">", "</code>").to_owned();
    let theirs = between(&page.body, "action=\"/hosts/domains/", "/verify\"").to_owned();
    dns.set_txt("_aqs-challenge.example.test", &value).await;
    let refused = bea.post(&format!("/hosts/domains/{theirs}/verify"), &[]).await;
    bea.follow(refused).await.assert_contains("Not verified: example.test is verified by another member");

    // The hostname belongs to one member: Bea proves a subdomain and adds a host under it; Ada's
    // claim of the same name (under her root) is refused.
    let added = bea.post("/hosts/domains", &[("name", "sub.example.test")]).await;
    let page = bea.follow(added).await;
    let sub_row = &page.body[page.body.find("data-domain=\"sub.example.test\"").unwrap()..];
    let value = between(sub_row, "<code class=\"txt-value\">", "</code>").to_owned();
    let sub = between(sub_row, "action=\"/hosts/domains/", "/verify\"").to_owned();
    dns.set_txt("_aqs-challenge.sub.example.test", &value).await;
    let verified = bea.post(&format!("/hosts/domains/{sub}/verify"), &[]).await;
    bea.follow(verified).await.assert_contains("sub.example.test is verified");
    let host = bea.post("/hosts", &[("hostname", "q.sub.example.test"), ("queue", "theirs")]).await;
    bea.follow(host).await.assert_contains("Added q.sub.example.test");
    let claim = ada.post("/hosts", &[("hostname", "q.sub.example.test"), ("queue", "jobs")]).await;
    assert_eq!(claim.status, 422);
    claim.assert_contains("This hostname is already in use");
    assert_eq!(bea.get("/admin/hosts").await.status, 404);

    // Ada's record removed: the next check takes the domain from her, and the page says since when.
    dns.clear_txt("_aqs-challenge.example.test").await;
    let lost = ada.post(&format!("/hosts/domains/{id}/verify"), &[]).await;
    ada.follow(lost).await.assert_contains("example.test is not verified yet: example.test is no longer verified");
    let page = ada.get("/hosts").await;
    page.assert_contains("Not verified");
    page.assert_contains("Verification lost <time datetime=");

    // Operators see it, with a re-check button.
    let mut op = Visitor::new(&app);
    op.sign_up(OPERATOR).await;
    let all = op.get("/admin/hosts").await;
    all.assert_contains("queue.example.test");
    all.assert_contains("ada@example.com");

    let page = ada.get("/hosts").await;
    let check_at = page.body.find("/check\"").expect("a check button");
    let host_id = &page.body[page.body[..check_at].rfind("/hosts/").unwrap() + 7..check_at];
    let checked = ada.post(&format!("/hosts/{host_id}/check"), &[]).await;
    ada.follow(checked).await.assert_contains("Checking queue.example.test now");
    // Remove is a link to a confirmation page; only its form removes.
    page.assert_contains(&format!("href=\"/hosts/{host_id}/remove\""));
    page.assert_lacks(&format!("action=\"/hosts/{host_id}/remove\""));
    let confirm = ada.get(&format!("/hosts/{host_id}/remove")).await;
    assert_eq!(confirm.status, 200, "{}", confirm.body);
    confirm.assert_contains("Remove the host queue.example.test?");
    confirm.assert_contains(&format!("action=\"/hosts/{host_id}/remove\""));
    ada.get("/hosts").await.assert_contains("queue.example.test");
    let form_id = confirm.input_value("form_id").unwrap();
    let removed = ada.post(&format!("/hosts/{host_id}/remove"), &[("form_id", &form_id)]).await;
    let page = ada.follow(removed).await;
    page.assert_contains("Removed queue.example.test");
    page.assert_contains("id=\"no-hosts\"");
    assert_eq!(ada.get("/queues/jobs").await.status, 200, "the queue stays");
}
