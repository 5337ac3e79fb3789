//! Which name a custom host answers to: the TLS listener serves a host only when the request's
//! `Host` is the name the connection was opened for (SNI), else `421 misdirected_request`; the
//! plain listener answers a custom host's ACME challenges and redirects the rest to https, never
//! serving its queue in cleartext.

use super::{EDGE, World, status_is};
use serde_json::{Value, json};

/// A TLS client trusting pebble's root that reaches `sni` at our TLS listener, and sends it
/// `host` as the `Host` header; redirects are not followed.
async fn ask(world: &World, client: &reqwest::Client, sni: &str, host: &str, path: &str, token: &str) -> (u16, Value) {
    let response = client
        .get(format!("https://{sni}{path}"))
        .header("host", host)
        .bearer_auth(token)
        .send()
        .await
        .unwrap_or_else(|err| panic!("{sni} with Host {host} on :{}: {err}", world.https_port));
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn misdirected(answer: &(u16, Value)) -> bool {
    answer.0 == 421 && answer.1["error"] == "misdirected_request" && answer.1["message"].is_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_host_answers_only_over_tls_and_only_to_the_name_it_was_reached_by() {
    let world = World::start(true, &[]).await;
    let (a_member, a_domain) = world.member().await;
    let (b_member, b_domain) = world.member().await;
    let (a, b) = (format!("queue.{a_domain}"), format!("queue.{b_domain}"));
    let a_id = world.add_host(&a_member, &a).await;
    let b_id = world.add_host(&b_member, &b).await;
    world.check(&a_member, &a_id).await;
    world.check(&b_member, &b_id).await;
    world.wait_host(&a_member, &a_id, "active", status_is("active")).await;
    world.wait_host(&b_member, &b_id, "active", status_is("active")).await;
    let client = world.tls_client(&a).await;
    let platform = format!("127.0.0.1:{}", world.server.port);
    let stats = "/stats";

    // SNI A, Host A (any case, with a port): A's queue.
    let (status, body) = ask(&world, &client, &a, &a, stats, &a_member.token).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = ask(&world, &client, &a, &format!("QUEUE.{a_domain}:443"), stats, &a_member.token).await;
    assert_eq!(status, 200);

    // SNI A, Host B: not B's queue, with either member's token.
    for token in [&a_member.token, &b_member.token] {
        let answer = ask(&world, &client, &a, &b, stats, token).await;
        assert!(misdirected(&answer), "{answer:?}");
    }

    // SNI A, Host of the service's own names: no management API, no console, no health.
    let shared_stats = format!("/queue/v1/{}/stats", a_member.slug);
    for host in [EDGE, platform.as_str(), "localhost"] {
        for path in ["/api/v1/domains", "/", "/queue/v1/health", shared_stats.as_str()] {
            let answer = ask(&world, &client, &a, host, path, &a_member.session).await;
            assert!(misdirected(&answer), "Host {host} {path}: {answer:?}");
        }
    }

    // No SNI: no certificate is served, so no handshake and no answer.
    let anonymous = reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .tls_sni(false)
        .resolve(&a, ([127, 0, 0, 1], world.https_port).into())
        .build()
        .unwrap();
    let refused = anonymous.get(format!("https://{a}{stats}")).bearer_auth(&a_member.token).send().await;
    assert!(refused.is_err(), "a handshake without SNI must fail: {refused:?}");

    // Plain listener, Host A: a queue route is redirected to https, never served in cleartext.
    let plain = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    for host in [a.clone(), format!("{}:{}", a.to_uppercase(), world.server.port)] {
        let response = plain
            .post(format!("{}/messages?x=1", world.server.base()))
            .header("host", host.as_str())
            .bearer_auth(&a_member.token)
            .json(&json!({"body": "cleartext"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 308, "Host {host}");
        let location = response.headers()["location"].to_str().unwrap().to_owned();
        assert_eq!(location, format!("https://{a}/messages?x=1"));
    }
    let (_, stats) = ask(&world, &client, &a, &a, stats, &a_member.token).await;
    assert_eq!(stats["published_today"], 0, "nothing was published in cleartext: {stats}");

    // Plain listener, Host A, the ACME path: the challenge answer, and nothing else.
    let keys = aqs_core::keys::Keys::new(&world.namespace);
    let mut redis = redis::Client::open(world.redis.url()).unwrap().get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("SET")
        .arg(keys.acme_challenge("tok-1"))
        .arg("tok-1.thumbprint")
        .query_async(&mut redis)
        .await
        .unwrap();
    let challenge = |token: &str| {
        plain
            .get(format!("{}/.well-known/acme-challenge/{token}", world.server.base()))
            .header("host", a.as_str())
            .send()
    };
    let answer = challenge("tok-1").await.unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.text().await.unwrap(), "tok-1.thumbprint");
    let unknown = challenge("tok-2").await.unwrap();
    assert_eq!(unknown.status(), 404);
    assert_eq!(unknown.json::<Value>().await.unwrap()["error"], "not_found");

    // The service's own name on the plain listener is untouched.
    let health = plain.get(format!("{}/queue/v1/health", world.server.base())).send().await.unwrap();
    assert_eq!(health.status(), 200);
}
