//! Custom hosts end to end: the real binary, pebble issuing real certificates after real HTTP-01
//! validation against our plain listener, challtestsrv answering pebble's and our DNS lookups,
//! and a real TLS client that checks the served chain against pebble's root for the hostname.

mod account;
mod names;
mod proof;

use crate::harness::{Redis, Server, Tenant, free_port, fresh_database, sign_up, unique};
use crate::pebble::{Dns, Pebble, PebbleTls};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const EDGE: &str = "edge.aqs.test";
const OPERATOR: &str = "hosts-operator@example.com";
const KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

/// One test's world: DNS, a (maybe not yet started) pebble, and `aqs serve` with a TLS listener.
struct World {
    dns: Dns,
    tls: PebbleTls,
    pebble: Pebble,
    server: Server,
    https_port: u16,
    database: String,
    namespace: String,
    redis: Redis,
}

impl World {
    async fn start(start_pebble: bool, extra: &[(&str, &str)]) -> Self {
        let redis = Redis::start("everysec");
        let database = fresh_database().await;
        let dns = Dns::start().await;
        dns.add_a(EDGE, "127.0.0.1").await;
        let tls = PebbleTls::make();
        let http_port = free_port();
        let mut pebble = Pebble::configure(&tls, http_port, &dns);
        if start_pebble {
            pebble.start(&tls).await;
        }
        let https_port = free_port();
        let (https, directory, ca, servers) =
            (format!("127.0.0.1:{https_port}"), pebble.directory_url(), tls.ca_file(), dns.server());
        let mut env = vec![
            ("AQS_HTTPS_ADDR", https.as_str()),
            ("AQS_EDGE_HOSTNAME", EDGE),
            ("AQS_ACME_DIRECTORY_URL", directory.as_str()),
            ("AQS_ACME_CA_FILE", ca.as_str()),
            ("AQS_DNS_SERVERS", servers.as_str()),
            ("AQS_CERT_ENCRYPTION_KEY", KEY),
        ];
        env.extend_from_slice(extra);
        env.push(("AQS_OPERATOR_EMAILS", OPERATOR));
        let namespace = aqs_testkit::namespace();
        let server = Server::start_on(http_port, &database, &redis.url(), &namespace, &env).await;
        Self { dns, tls, pebble, server, https_port, database, namespace, redis }
    }

    /// A member with a queue and a verified domain `<random>.test`.
    async fn member(&self) -> (Tenant, String) {
        let tenant = Tenant::sign_up(&self.server, json!({"name": "jobs"})).await;
        let domain = format!("{}.test", unique("d"));
        let (status, created) = self.api(&tenant, "POST", "/api/v1/domains", json!({"name": domain})).await;
        assert_eq!(status, 201, "{created}");
        let id = created["domain"]["id"].as_str().unwrap().to_owned();
        self.dns
            .set_txt(&format!("_aqs-challenge.{domain}"), created["domain"]["verification"]["value"].as_str().unwrap())
            .await;
        let (status, verified) = self.api(&tenant, "POST", &format!("/api/v1/domains/{id}/verify"), Value::Null).await;
        assert_eq!((status, verified["domain"]["status"].as_str()), (200, Some("verified")), "{verified}");
        (tenant, domain)
    }

    async fn api(&self, tenant: &Tenant, method: &str, path: &str, body: Value) -> (u16, Value) {
        let url = format!("{}{path}", self.server.base());
        let request = match method {
            "POST" => tenant.http.post(url).json(&body),
            "DELETE" => tenant.http.delete(url),
            _ => tenant.http.get(url),
        };
        let response = request.bearer_auth(&tenant.session).send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// Adds `hostname` for the tenant's queue with its CNAME in place; returns the host id.
    async fn add_host(&self, tenant: &Tenant, hostname: &str) -> String {
        self.dns.set_cname(hostname, EDGE).await;
        self.create_host(tenant, hostname).await
    }

    async fn create_host(&self, tenant: &Tenant, hostname: &str) -> String {
        let (status, created) =
            self.api(tenant, "POST", "/api/v1/hosts", json!({"hostname": hostname, "queue": tenant.slug})).await;
        assert_eq!(status, 201, "{created}");
        created["host"]["id"].as_str().unwrap().to_owned()
    }

    /// How many certificate orders were placed for `hostname`, as the database counts them.
    async fn orders(&self, hostname: &str) -> i32 {
        let database = sqlx::PgPool::connect(&self.database).await.unwrap();
        sqlx::query_scalar("SELECT orders FROM hosts WHERE hostname = $1")
            .bind(hostname)
            .fetch_one(&database)
            .await
            .unwrap()
    }

    /// Polls the host until `done` holds of it (asking for a check each time), or panics.
    async fn wait_host(&self, tenant: &Tenant, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let (_, host) = self.api(tenant, "GET", &format!("/api/v1/hosts/{id}"), Value::Null).await;
            if done(&host["host"]) {
                return host["host"].clone();
            }
            assert!(Instant::now() < deadline, "the host never became {what}: {host}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn check(&self, tenant: &Tenant, id: &str) {
        let (status, body) = self.api(tenant, "POST", &format!("/api/v1/hosts/{id}/check"), Value::Null).await;
        assert_eq!(status, 200, "{body}");
    }

    /// A TLS client that trusts pebble's root only and reaches `hostname` at our TLS listener.
    async fn tls_client(&self, hostname: &str) -> reqwest::Client {
        reqwest::Client::builder()
            .tls_built_in_root_certs(false)
            .add_root_certificate(self.pebble.issuing_root(&self.tls).await)
            .resolve(hostname, ([127, 0, 0, 1], self.https_port).into())
            .tls_info(true)
            .build()
            .unwrap()
    }
}

fn status_is(status: &'static str) -> impl Fn(&Value) -> bool {
    move |host| host["status"] == status
}

/// Calls a slug-less route over TLS: (status, Cache-Control, body).
async fn call(client: &reqwest::Client, token: &str, method: &str, url: String, body: Value) -> (u16, String, Value) {
    let request = if method == "GET" { client.get(url) } else { client.post(url).json(&body) };
    let response = request.bearer_auth(token).send().await.unwrap();
    let status = response.status().as_u16();
    let cache = response.headers().get("cache-control").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    (status, cache, response.json().await.unwrap_or(Value::Null))
}

/// The DER of the certificate the TLS listener presents for `hostname` on a new connection.
async fn served_certificate(world: &World, hostname: &str, token: &str) -> Vec<u8> {
    let client = world.tls_client(hostname).await;
    try_served_certificate(&client, hostname, token).await.unwrap()
}

/// The same, once the listener serves `hostname` at all. The API says `active` when PostgreSQL
/// records the certificate; the data plane loads it from the Redis projection a moment later (on
/// the announcement), so the first handshake right after may still be refused.
async fn first_served_certificate(world: &World, hostname: &str, token: &str) -> Vec<u8> {
    let client = world.tls_client(hostname).await;
    aqs_testkit::eventually_some(&format!("the TLS listener serves {hostname}"), || async {
        try_served_certificate(&client, hostname, token).await.ok()
    })
    .await
}

/// One request to `hostname` through `client`: the certificate its TLS listener presented, or why
/// there was none.
async fn try_served_certificate(client: &reqwest::Client, hostname: &str, token: &str) -> Result<Vec<u8>, String> {
    let response = client
        .get(format!("https://{hostname}/stats"))
        .bearer_auth(token)
        .send()
        .await
        .map_err(|e| format!("{e:?}"))?;
    let info = response.extensions().get::<reqwest::tls::TlsInfo>().ok_or("no TLS info")?;
    Ok(info.peer_certificate().ok_or("no peer certificate")?.to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_goes_active_and_serves_every_slug_less_route_over_tls() {
    let world = World::start(true, &[]).await;
    let (tenant, domain) = world.member().await;
    let hostname = format!("queue.{domain}");

    let started = Instant::now();
    let (status, created) =
        world.api(&tenant, "POST", "/api/v1/hosts", json!({"hostname": hostname, "queue": tenant.slug})).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["host"]["status"], "setting_up");
    assert_eq!(created["host"]["dns"], json!({"type": "CNAME", "name": hostname, "value": EDGE}));
    let id = created["host"]["id"].as_str().unwrap().to_owned();
    world.dns.set_cname(&hostname, EDGE).await;
    world.check(&tenant, &id).await;
    let active = world.wait_host(&tenant, &id, "active", status_is("active")).await;
    eprintln!("custom host active {} ms after it was added", started.elapsed().as_millis());
    assert!(active["certificate"]["not_after"].is_string(), "{active}");

    // Every slug-less route, through a client that verifies the chain against pebble's root.
    let tls = world.tls_client(&hostname).await;
    let base = format!("https://{hostname}");
    let token = &tenant.token;
    let (status, cache, published) =
        call(&tls, token, "POST", format!("{base}/messages"), json!({"body": "one"})).await;
    assert_eq!((status, cache.as_str()), (201, "no-store"), "{published}");
    let batch = json!({"messages": [{"body": "two"}, {"body": "three"}]});
    assert_eq!(call(&tls, token, "POST", format!("{base}/messages/batch"), batch).await.0, 201);
    let (status, _, peeked) = call(&tls, token, "GET", format!("{base}/messages/peek"), Value::Null).await;
    assert_eq!(status, 200, "{peeked}");
    let consume = json!({"max_messages": 3, "max_wait_seconds": 1, "visibility_seconds": 30});
    let (status, _, consumed) = call(&tls, token, "POST", format!("{base}/consume"), consume).await;
    assert_eq!(status, 200, "{consumed}");
    let receipts: Vec<String> =
        consumed["messages"].as_array().unwrap().iter().map(|m| m["receipt"].as_str().unwrap().to_owned()).collect();
    assert_eq!(receipts.len(), 3, "{consumed}");
    let (status, _, acked) = call(&tls, token, "POST", format!("{base}/ack"), json!({"receipts": [receipts[0]]})).await;
    assert_eq!(status, 200, "{acked}");
    let (status, _, nacked) =
        call(&tls, token, "POST", format!("{base}/nack"), json!({"receipts": [receipts[1]]})).await;
    assert_eq!(status, 200, "{nacked}");
    let (status, _, stats) = call(&tls, token, "GET", format!("{base}/stats"), Value::Null).await;
    assert_eq!(status, 200, "{stats}");
    for (method, route, body) in [
        ("GET", "dead-letters", Value::Null),
        ("POST", "dead-letters/replay", json!({"all": true})),
        ("POST", "dead-letters/purge", json!({"all": true})),
        ("POST", "purge", json!({})),
    ] {
        let (status, cache, answer) = call(&tls, token, method, format!("{base}/{route}"), body).await;
        assert_eq!((status, cache.as_str()), (200, "no-store"), "{route}: {answer}");
    }
    // A long poll through the custom host is woken by a publish at the shared address.
    let waiting = {
        let (tls, base, token) = (tls.clone(), base.clone(), token.clone());
        let consume = json!({"max_messages": 1, "max_wait_seconds": 20, "visibility_seconds": 30});
        tokio::spawn(async move { call(&tls, &token, "POST", format!("{base}/consume"), consume).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(tenant.publish("woken").await.0, 201);
    let (status, _, woken) = waiting.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(woken["messages"].as_array().map(Vec::len), Some(1), "{woken}");

    // The shared paths are not served on a custom host; another queue's token is 404.
    let (status, _, _) = call(&tls, token, "GET", format!("{base}/queue/v1/{}/stats", tenant.slug), Value::Null).await;
    assert_eq!(status, 404);
    let other = Tenant::sign_up(&world.server, json!({"name": "other"})).await;
    let (status, _, body) = call(&tls, &other.token, "GET", format!("{base}/stats"), Value::Null).await;
    assert_eq!((status, body["error"].as_str()), (404, Some("not_found")));

    // The plain listener never serves the host's queue: it redirects to https.
    let plain = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let response = plain
        .get(format!("{}/stats", world.server.base()))
        .header("host", format!("Queue.{domain}:{}", world.server.port))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 308);

    // A paused queue's host answers 409 on every route, stats included; resumed, it serves again.
    let (status, _) = world.api(&tenant, "POST", &format!("/api/v1/queues/{}/pause", tenant.slug), Value::Null).await;
    assert_eq!(status, 200);
    let paused = wait_for_status(&tls, token, &format!("{base}/stats"), 409).await;
    assert_eq!(paused["error"], "queue_paused");
    assert_eq!(call(&tls, token, "POST", format!("{base}/messages"), json!({"body": "x"})).await.0, 409);
    world.api(&tenant, "POST", &format!("/api/v1/queues/{}/resume", tenant.slug), Value::Null).await;
    wait_for_status(&tls, token, &format!("{base}/stats"), 200).await;

    // A CNAME that disappears is an error with a reason, and the certificate keeps serving.
    world.dns.clear_cname(&hostname).await;
    world.check(&tenant, &id).await;
    let broken = world.wait_host(&tenant, &id, "an error", status_is("error")).await;
    assert!(broken["reason"].as_str().unwrap().contains("keeps serving"), "{broken}");
    assert_eq!(call(&tls, token, "GET", format!("{base}/stats"), Value::Null).await.0, 200);

    // Removed: 404 (as soon as the announcement reaches the data plane, within milliseconds),
    // while the queue, its messages and its token stay at the shared address.
    let (status, _) = world.api(&tenant, "DELETE", &format!("/api/v1/hosts/{id}"), Value::Null).await;
    assert_eq!(status, 204);
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let removed = plain
            .get(format!("{}/stats", world.server.base()))
            .header("host", hostname.as_str())
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        if removed.status() == 404 {
            break;
        }
        assert!(Instant::now() < deadline, "the removed host still answers {}", removed.status());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, stats) = tenant.post("consume", json!({"max_messages": 10, "visibility_seconds": 30})).await;
    assert_eq!(status, 200, "{stats}");
}

/// Polls a GET until it answers `status`; the projection reaches the data plane asynchronously.
async fn wait_for_status(client: &reqwest::Client, token: &str, url: &str, status: u16) -> Value {
    aqs_testkit::eventually_some(&format!("{url} answers {status}"), || async move {
        let (got, _, body) = call(client, token, "GET", url.to_owned(), Value::Null).await;
        (got == status).then_some(body)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn domains_and_dns_problems_answer_with_reasons_a_person_can_act_on() {
    let world = World::start(false, &[]).await;
    let tenant = Tenant::sign_up(&world.server, json!({"name": "jobs"})).await;
    let domain = format!("{}.test", unique("d"));
    let (_, created) = world.api(&tenant, "POST", "/api/v1/domains", json!({"name": domain})).await;
    assert_eq!(created["domain"]["status"], "pending");
    assert_eq!(created["domain"]["verification"]["type"], "TXT");
    assert_eq!(created["domain"]["verification"]["name"], format!("_aqs-challenge.{domain}"));
    let value = created["domain"]["verification"]["value"].as_str().unwrap().to_owned();
    assert!(value.starts_with("aqs-verify="), "{value}");
    let id = created["domain"]["id"].as_str().unwrap();

    // No TXT yet: 200, still pending, with the reason; no host may be added under it.
    let (status, pending) = world.api(&tenant, "POST", &format!("/api/v1/domains/{id}/verify"), Value::Null).await;
    assert_eq!((status, pending["domain"]["status"].as_str()), (200, Some("pending")));
    assert!(pending["domain"]["reason"].as_str().unwrap().contains("no TXT record"), "{pending}");
    let early = json!({"hostname": format!("q.{domain}"), "queue": tenant.slug});
    assert_eq!(world.api(&tenant, "POST", "/api/v1/hosts", early).await.0, 400);
    assert_eq!(world.api(&tenant, "POST", "/api/v1/domains", json!({"name": "nodot"})).await.0, 400);

    world.dns.set_txt(&format!("_aqs-challenge.{domain}"), &value).await;
    let (_, verified) = world.api(&tenant, "POST", &format!("/api/v1/domains/{id}/verify"), Value::Null).await;
    assert_eq!(verified["domain"]["status"], "verified", "{verified}");

    // A CNAME to the wrong target, and A records where the CNAME should be.
    let wrong = format!("wrong.{domain}");
    world.dns.set_cname(&wrong, "x.example.net").await;
    let wrong_id = world.create_host(&tenant, &wrong).await;
    world.check(&tenant, &wrong_id).await;
    let host = world.wait_host(&tenant, &wrong_id, "an error", status_is("error")).await;
    assert!(host["reason"].as_str().unwrap().contains("points to x.example.net, not edge.aqs.test"), "{host}");
    let proxied = format!("proxied.{domain}");
    let proxied_id = world.create_host(&tenant, &proxied).await;
    world.dns.add_a(&proxied, "203.0.113.7").await;
    world.check(&tenant, &proxied_id).await;
    let host = world.wait_host(&tenant, &proxied_id, "an error", status_is("error")).await;
    assert!(host["reason"].as_str().unwrap().contains("make it DNS-only"), "{host}");

    // A domain is verified for one member at a time: a second member may add it, but verifying
    // it is 409 while the first member's record stays, and no host can be added under it.
    let second = Tenant::sign_up(&world.server, json!({"name": "theirs"})).await;
    let (_, theirs) = world.api(&second, "POST", "/api/v1/domains", json!({"name": domain})).await;
    let their_id = theirs["domain"]["id"].as_str().unwrap();
    world
        .dns
        .set_txt(&format!("_aqs-challenge.{domain}"), theirs["domain"]["verification"]["value"].as_str().unwrap())
        .await;
    let (status, refused) =
        world.api(&second, "POST", &format!("/api/v1/domains/{their_id}/verify"), Value::Null).await;
    assert_eq!((status, refused["error"].as_str()), (409, Some("conflict")), "{refused}");
    assert!(refused["message"].as_str().unwrap().contains("verified by another member"), "{refused}");
    let (_, still) = world.api(&second, "GET", &format!("/api/v1/domains/{their_id}"), Value::Null).await;
    assert_eq!(still["domain"]["status"], "pending", "{still}");
    let claim = json!({"hostname": wrong, "queue": second.slug});
    let (status, body) = world.api(&second, "POST", "/api/v1/hosts", claim).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_request")), "{body}");

    // A hostname belongs to one member: the second member proves a subdomain of their own and
    // adds a host under it; the first member's claim of the same name (under their root) is 409.
    let sub = format!("sub.{domain}");
    let (_, theirs) = world.api(&second, "POST", "/api/v1/domains", json!({"name": sub})).await;
    let sub_id = theirs["domain"]["id"].as_str().unwrap();
    world
        .dns
        .set_txt(&format!("_aqs-challenge.{sub}"), theirs["domain"]["verification"]["value"].as_str().unwrap())
        .await;
    let (_, verified) = world.api(&second, "POST", &format!("/api/v1/domains/{sub_id}/verify"), Value::Null).await;
    assert_eq!(verified["domain"]["status"], "verified", "{verified}");
    let shared = format!("q.{sub}");
    world.create_host(&second, &shared).await;
    let claim = json!({"hostname": shared, "queue": tenant.slug});
    let (status, body) = world.api(&tenant, "POST", "/api/v1/hosts", claim).await;
    assert_eq!((status, body["error"].as_str()), (409, Some("conflict")), "{body}");

    // A domain with hosts cannot be removed; another member's host is 404.
    assert_eq!(world.api(&tenant, "DELETE", &format!("/api/v1/domains/{id}"), Value::Null).await.0, 409);
    assert_eq!(world.api(&second, "GET", &format!("/api/v1/hosts/{wrong_id}"), Value::Null).await.0, 404);

    // Operators see every member's hosts with their reasons.
    let operator = sign_up(&tenant.http, &world.server.base(), OPERATOR).await;
    let session = operator["session"].as_str().unwrap();
    let listed: Value = tenant
        .http
        .get(format!("{}/api/v1/admin/hosts?status=error", world.server.base()))
        .bearer_auth(session)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["hosts"].as_array().map(Vec::len), Some(2), "{listed}");
    assert!(listed["hosts"].as_array().unwrap().iter().all(|h| h["reason"].is_string()));
    let not_operator =
        tenant.http.get(format!("{}/api/v1/admin/hosts", world.server.base())).bearer_auth(&tenant.session);
    assert_eq!(not_operator.send().await.unwrap().status(), 404);

    // Once the A record is gone, the next check no longer blames it. (Only now: the listing above
    // counts this host among the errors, and a background check may run at any time.)
    world.dns.clear_a(&proxied).await;
    world.check(&tenant, &proxied_id).await;
    let no_address = |host: &Value| !host["reason"].as_str().unwrap_or_default().contains("DNS-only");
    world.wait_host(&tenant, &proxied_id, "free of its A record", no_address).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acme_outage_is_an_error_with_a_reason_and_the_host_recovers_once_it_is_back() {
    let mut world = World::start(false, &[]).await;
    let (tenant, domain) = world.member().await;
    let hostname = format!("queue.{domain}");
    let id = world.add_host(&tenant, &hostname).await;
    world.check(&tenant, &id).await;
    let down = world.wait_host(&tenant, &id, "an error", status_is("error")).await;
    assert!(down["reason"].as_str().unwrap().contains("could not be reached"), "{down}");

    world.pebble.start(&world.tls).await;
    world.check(&tenant, &id).await;
    world.wait_host(&tenant, &id, "active", status_is("active")).await;
    let tls = world.tls_client(&hostname).await;
    let (status, _, _) = call(&tls, &tenant.token, "GET", format!("https://{hostname}/stats"), Value::Null).await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_forced_by_the_setting_is_served_without_a_restart() {
    let world = World::start(true, &[("AQS_CERT_RENEW_FRACTION", "1")]).await;
    let (tenant, domain) = world.member().await;
    let hostname = format!("queue.{domain}");
    let id = world.add_host(&tenant, &hostname).await;
    world.check(&tenant, &id).await;
    let first = world.wait_host(&tenant, &id, "active", status_is("active")).await;
    let served = first_served_certificate(&world, &hostname, &tenant.token).await;
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (_, now) = world.api(&tenant, "GET", &format!("/api/v1/hosts/{id}"), Value::Null).await;
        if now["host"]["certificate"] != first["certificate"]
            && served_certificate(&world, &hostname, &tenant.token).await != served
        {
            assert_eq!(now["host"]["status"], "active");
            break;
        }
        assert!(Instant::now() < deadline, "the certificate was never renewed: {now}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_racing_reconcilers_place_one_order() {
    let world = World::start(true, &[]).await;
    let env = [
        ("AQS_EDGE_HOSTNAME", EDGE),
        ("AQS_ACME_DIRECTORY_URL", &world.pebble.directory_url()),
        ("AQS_ACME_CA_FILE", &world.tls.ca_file()),
        ("AQS_DNS_SERVERS", &world.dns.server()),
        ("AQS_CERT_ENCRYPTION_KEY", KEY),
    ];
    let (tenant, domain) = world.member().await;
    // The second replica shares the first one's stores (database, Redis, namespace).
    let second = Server::start_with_env(&world.database, &world.redis.url(), &world.namespace, &env).await;
    let hostname = format!("queue.{domain}");
    let id = world.add_host(&tenant, &hostname).await;
    let ask = |base: String| {
        let (http, session, id) = (tenant.http.clone(), tenant.session.clone(), id.clone());
        async move { http.post(format!("{base}/api/v1/hosts/{id}/check")).bearer_auth(session).send().await.unwrap() }
    };
    let (a, b) = tokio::join!(ask(world.server.base()), ask(second.base()));
    assert_eq!((a.status().as_u16(), b.status().as_u16()), (200, 200));
    world.wait_host(&tenant, &id, "active", status_is("active")).await;
    assert_eq!(world.orders(&hostname).await, 1);
}
