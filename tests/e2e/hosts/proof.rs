//! A domain is verified for one member at a time and only while its TXT record stays: checked
//! again periodically and before every certificate order, against challtestsrv's real DNS.

use super::{World, call, status_is};
use crate::harness::{Tenant, unique};
use serde_json::{Value, json};

/// Adds `domain` for `tenant` and puts its value in the TXT record (beside any value already
/// there); returns the domain's id.
async fn add_domain(world: &World, tenant: &Tenant, domain: &str) -> String {
    let (status, created) = world.api(tenant, "POST", "/api/v1/domains", json!({"name": domain})).await;
    assert_eq!(status, 201, "{created}");
    let value = created["domain"]["verification"]["value"].as_str().unwrap();
    world.dns.set_txt(&format!("_aqs-challenge.{domain}"), value).await;
    created["domain"]["id"].as_str().unwrap().to_owned()
}

async fn domain_id(world: &World, tenant: &Tenant, domain: &str) -> String {
    let (_, listed) = world.api(tenant, "GET", "/api/v1/domains", Value::Null).await;
    let found = listed["domains"].as_array().unwrap().iter().find(|d| d["name"] == domain).cloned();
    found.unwrap_or_else(|| panic!("{domain} is not listed: {listed}"))["id"].as_str().unwrap().to_owned()
}

async fn verify(world: &World, tenant: &Tenant, id: &str) -> (u16, Value) {
    world.api(tenant, "POST", &format!("/api/v1/domains/{id}/verify"), Value::Null).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verified_domain_is_one_members_until_its_record_is_gone_then_another_can_take_it() {
    let world = World::start(true, &[("AQS_DOMAIN_RECHECK_SECONDS", "1")]).await;
    let (first, domain) = world.member().await;
    let first_domain = domain_id(&world, &first, &domain).await;
    let hostname = format!("queue.{domain}");
    let host = world.add_host(&first, &hostname).await;
    world.check(&first, &host).await;
    world.wait_host(&first, &host, "active", status_is("active")).await;

    // A second member may add the domain, but not verify it while the first one's record stays.
    let second = Tenant::sign_up(&world.server, json!({"name": "theirs"})).await;
    let second_domain = add_domain(&world, &second, &domain).await;
    let (status, refused) = verify(&world, &second, &second_domain).await;
    assert_eq!((status, refused["error"].as_str()), (409, Some("conflict")), "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("verified by another member"), "{refused}");
    let taken = json!({"hostname": format!("other.{domain}"), "queue": second.slug});
    assert_eq!(world.api(&second, "POST", "/api/v1/hosts", taken.clone()).await.0, 400);

    // Every value removed: the periodic re-check takes the domain from the first member.
    world.dns.clear_txt(&format!("_aqs-challenge.{domain}")).await;
    let url = format!("/api/v1/domains/{first_domain}");
    let (w, member, url) = (&world, &first, url.as_str());
    let lost = aqs_testkit::eventually_some("the first member's domain is lost", move || async move {
        let (_, got) = w.api(member, "GET", url, Value::Null).await;
        (got["domain"]["status"] == "pending").then_some(got["domain"].clone())
    })
    .await;
    assert!(lost["lost_at"].is_string(), "{lost}");
    assert!(lost["reason"].as_str().unwrap().contains("no longer verified"), "{lost}");
    // Its host: no new certificate, an error saying why; the current certificate keeps serving.
    world.check(&first, &host).await;
    let unproven = world.wait_host(&first, &host, "an error", status_is("error")).await;
    let reason = unproven["reason"].as_str().unwrap();
    assert!(reason.contains("not verified") && reason.contains("keeps serving"), "{unproven}");
    let tls = world.tls_client(&hostname).await;
    let (status, _, _) = call(&tls, &first.token, "GET", format!("https://{hostname}/stats"), Value::Null).await;
    assert_eq!(status, 200);
    let more = json!({"hostname": format!("more.{domain}"), "queue": first.slug});
    assert_eq!(world.api(&first, "POST", "/api/v1/hosts", more).await.0, 400);

    // The second member proves it now; the first cannot take it back while that record stays.
    let (_, second_row) = world.api(&second, "GET", &format!("/api/v1/domains/{second_domain}"), Value::Null).await;
    let second_value = second_row["domain"]["verification"]["value"].as_str().unwrap();
    world.dns.set_txt(&format!("_aqs-challenge.{domain}"), second_value).await;
    let (status, verified) = verify(&world, &second, &second_domain).await;
    assert_eq!((status, verified["domain"]["status"].as_str()), (200, Some("verified")), "{verified}");
    assert!(verified["domain"]["lost_at"].is_null(), "{verified}");
    world.dns.set_txt(&format!("_aqs-challenge.{domain}"), lost["verification"]["value"].as_str().unwrap()).await;
    assert_eq!(verify(&world, &first, &first_domain).await.0, 409);

    // The hostname the first member kept goes to the member now holding the domain.
    let claim = json!({"hostname": hostname, "queue": second.slug});
    let (status, created) = world.api(&second, "POST", "/api/v1/hosts", claim).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(world.api(&first, "GET", &format!("/api/v1/hosts/{host}"), Value::Null).await.0, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_certificate_is_ordered_once_the_domain_record_is_gone() {
    // The periodic re-check is an hour away: only the check before the order can notice.
    let world = World::start(true, &[]).await;
    let (tenant, domain) = world.member().await;
    world.dns.clear_txt(&format!("_aqs-challenge.{domain}")).await;
    let hostname = format!("{}.{domain}", unique("q"));
    let id = world.add_host(&tenant, &hostname).await;
    world.check(&tenant, &id).await;
    let refused = world.wait_host(&tenant, &id, "an error", status_is("error")).await;
    assert!(refused["reason"].as_str().unwrap().contains("not verified"), "{refused}");
    assert!(refused["certificate"].is_null(), "{refused}");
    assert_eq!(world.orders(&hostname).await, 0);
    let (_, listed) = world.api(&tenant, "GET", "/api/v1/domains", Value::Null).await;
    let row = &listed["domains"][0];
    assert_eq!((row["status"].as_str(), row["lost_at"].is_string()), (Some("pending"), true), "{listed}");
}
