//! `GET /metrics` on `AQS_METRICS_ADDR`: real traffic through the real binary moves the series by
//! what it implies (requests by route template and status, script calls, per-queue depth), and
//! the API's own listener does not serve the scrape.

use crate::harness::{Redis, Server, Tenant, free_port, fresh_database};
use serde_json::json;
use std::collections::HashMap;

const PUBLISH: &str = "/queue/v1/{slug}/messages";

/// One scrape: every sample line as (name, labels) → value.
struct Scrape(Vec<(String, HashMap<String, String>, f64)>);

impl Scrape {
    async fn of(url: &str) -> Self {
        let response = reqwest::get(url).await.expect("the metrics listener answers");
        assert_eq!(response.status(), 200);
        let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
        assert!(content_type.starts_with("text/plain"), "{content_type}");
        Self(response.text().await.unwrap().lines().filter_map(parse_sample).collect())
    }

    /// The sum of the samples of `name` whose labels include `labels` (0 when there is none).
    fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.matching(name, labels).sum()
    }

    fn has(&self, name: &str, labels: &[(&str, &str)]) -> bool {
        self.matching(name, labels).next().is_some()
    }

    fn matching<'a>(&'a self, name: &'a str, labels: &'a [(&str, &str)]) -> impl Iterator<Item = f64> + 'a {
        self.0
            .iter()
            .filter(move |(n, l, _)| n == name && labels.iter().all(|(k, v)| l.get(*k).is_some_and(|x| x == v)))
            .map(|(_, _, value)| *value)
    }
}

/// `name{k="v",...} value` or `name value`; comments and blank lines are skipped.
fn parse_sample(line: &str) -> Option<(String, HashMap<String, String>, f64)> {
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (series, value) = line.rsplit_once(' ')?;
    let value = value.parse().ok()?;
    let Some((name, labels)) = series.split_once('{') else {
        return Some((series.to_owned(), HashMap::new(), value));
    };
    let labels = labels.strip_suffix('}')?;
    let mut map = HashMap::new();
    // Label values here (routes, slugs, numbers) hold no quotes or commas.
    for pair in labels.split(',').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=')?;
        map.insert(k.to_owned(), v.trim_matches('"').to_owned());
    }
    Some((name.to_owned(), map, value))
}

/// Scrapes until `check` holds (the per-queue series follow the sweeper, about once a second).
async fn until(url: &str, what: &str, check: impl Fn(&Scrape) -> bool) {
    let check = &check;
    aqs_testkit::eventually(what, || async move { check(&Scrape::of(url).await) }).await;
}

/// The real binary with its metrics listener on a free port: (its Redis, the server, the
/// scrape URL). The Redis is returned so it lives as long as the test.
async fn start_metered() -> (Redis, Server, String) {
    let redis = Redis::start("everysec");
    let metrics_addr = format!("127.0.0.1:{}", free_port());
    let namespace = aqs_testkit::namespace();
    let server = Server::start_with_env(
        &fresh_database().await,
        &redis.url(),
        &namespace,
        &[("AQS_METRICS_ADDR", metrics_addr.as_str())],
    )
    .await;
    let url = format!("http://{metrics_addr}/metrics");
    (redis, server, url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traffic_shows_in_the_scrape_by_route_status_and_script() {
    let (_redis, server, url) = start_metered().await;
    let before = Scrape::of(&url).await;
    // Series that alerts read exist at zero before their first event.
    for (mode, outcome) in [("message", "acked"), ("message", "dead_lettered"), ("batch", "partial")] {
        let labels = [("mode", mode), ("outcome", outcome)];
        assert!(before.has("aqs_push_deliveries_total", &labels), "{mode} {outcome} at zero");
    }
    assert!(before.has("aqs_redis_script_errors_total", &[("script", "publish_one")]));
    assert_eq!(before.sum("aqs_redis_script_errors_total", &[]), 0.0);

    let tenant = Tenant::sign_up(&server, json!({"name": "metered"})).await;
    for i in 0..5 {
        assert_eq!(tenant.publish(&format!("{{\"n\":{i}}}")).await.0, 201);
    }
    let mut receipts = Vec::new();
    while receipts.len() < 5 {
        let got = tenant.consume(10, 1, 60).await;
        assert!(!got.is_empty(), "published messages are delivered");
        receipts.extend(got.into_iter().map(|(_, _, receipt, _)| receipt));
    }
    tenant.ack(&receipts).await;
    // A 4xx on a known route (no such queue), one on no route at all, and a console page.
    let http = reqwest::Client::new();
    let missing = http
        .post(format!("{}/queue/v1/no-such-queue/messages", server.base()))
        .bearer_auth(&tenant.token)
        .json(&json!({"body": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    assert_eq!(http.get(format!("{}/no/such/route", server.base())).send().await.unwrap().status(), 404);
    assert_eq!(http.get(format!("{}/login", server.base())).send().await.unwrap().status(), 200);
    // The scrape is not on the API's listener.
    assert_eq!(http.get(format!("{}/metrics", server.base())).send().await.unwrap().status(), 404);

    let after = Scrape::of(&url).await;
    let rose = |name: &str, labels: &[(&str, &str)]| after.sum(name, labels) - before.sum(name, labels);
    let requests = "aqs_http_requests_total";
    assert_eq!(rose(requests, &[("route", PUBLISH), ("method", "POST"), ("status", "201")]), 5.0);
    assert_eq!(rose(requests, &[("route", PUBLISH), ("method", "POST"), ("status", "404")]), 1.0);
    assert_eq!(
        rose("aqs_http_request_duration_seconds_count", &[("route", PUBLISH), ("method", "POST")]),
        6.0,
        "the latency histogram counts every publish, whatever its answer"
    );
    assert!(rose(requests, &[("route", "/queue/v1/{slug}/consume"), ("status", "200")]) >= 1.0);
    assert_eq!(rose(requests, &[("route", "/queue/v1/{slug}/ack"), ("status", "200")]), 1.0);
    assert_eq!(
        rose(requests, &[("route", "unmatched"), ("method", "GET"), ("status", "404")]),
        2.0,
        "two paths no route serves: /no/such/route and the API's /metrics"
    );
    assert_eq!(rose(requests, &[("route", "/api/v1/auth/signup"), ("status", "201")]), 1.0, "the management API");
    assert_eq!(rose(requests, &[("route", "/api/v1/queues"), ("method", "POST"), ("status", "201")]), 1.0);
    assert_eq!(rose(requests, &[("route", "/login"), ("method", "GET"), ("status", "200")]), 1.0, "the console");
    assert!(
        !after.0.iter().any(|(_, labels, _)| labels.get("route").is_some_and(|r| r.contains(&tenant.slug))),
        "routes are labelled by template, never by the path a client sent"
    );

    let scripts = "aqs_redis_script_duration_seconds_count";
    let published = rose(scripts, &[("script", "publish_one")]) + rose(scripts, &[("script", "publish")]);
    assert_eq!(published, 5.0, "one publish script per publish");
    assert!(rose(scripts, &[("script", "consume")]) >= 1.0);
    assert_eq!(rose(scripts, &[("script", "ack")]), 1.0);
    assert!(after.has("aqs_redis_script_duration_seconds_bucket", &[("script", "ack"), ("le", "+Inf")]));
    assert_eq!(after.sum("aqs_redis_script_errors_total", &[]), 0.0);

    assert_eq!(after.sum("aqs_build_info", &[("version", env!("CARGO_PKG_VERSION"))]), 1.0);
    assert_eq!(after.sum("aqs_long_polls_held", &[]), 0.0, "no poll is waiting now");
    assert!(after.has("aqs_sweeper_lag_seconds", &[]));
    assert!(after.has("aqs_ledger_flush_lag_seconds", &[]));
    assert!(after.sum("aqs_projection_resyncs_total", &[("outcome", "ok")]) >= 1.0, "the start-up re-sync");

    // Per-queue depth, as the sweeper sees it: three waiting, then none.
    for i in 0..3 {
        assert_eq!(tenant.publish(&format!("{{\"later\":{i}}}")).await.0, 201);
    }
    let slug = tenant.slug.clone();
    until(&url, "the queue's depth reads 3", |s| s.sum("aqs_queue_depth", &[("queue", &slug)]) == 3.0).await;
    let receipts: Vec<String> = tenant.consume(10, 1, 60).await.into_iter().map(|(_, _, r, _)| r).collect();
    assert_eq!(receipts.len(), 3);
    tenant.ack(&receipts).await;
    until(&url, "the emptied queue's depth reads 0", |s| {
        s.has("aqs_queue_depth", &[("queue", &slug)]) && s.sum("aqs_queue_depth", &[("queue", &slug)]) == 0.0
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_long_poll_shows_in_the_gauge() {
    let (_redis, server, url) = start_metered().await;
    let tenant = Tenant::sign_up(&server, json!({"name": "polled"})).await;
    let poll = tokio::spawn({
        let queue = tenant.queue.clone();
        async move {
            let request =
                aqs_client::ConsumeRequest { max_messages: 1, max_wait_seconds: 20, visibility_seconds: Some(30) };
            queue.consume(&request).await.unwrap()
        }
    });
    until(&url, "one long poll held", |s| s.sum("aqs_long_polls_held", &[]) == 1.0).await;
    assert_eq!(tenant.publish("{\"wake\":true}").await.0, 201);
    assert_eq!(poll.await.unwrap().len(), 1, "the publish answered the poll");
    until(&url, "no long poll held", |s| s.sum("aqs_long_polls_held", &[]) == 0.0).await;
}
