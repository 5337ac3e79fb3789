//! The console in a real browser: headless Chromium driven over WebDriver (chromedriver) against
//! the real `aqs` binary. A member signs up, creates a queue and reads its token off the page,
//! publishes with the real `curl`, watches the depth change on the Overview (refreshed in place),
//! consumes through the API, sees a failed message reach the dead letters and replays it, mints and
//! revokes a token, has an operator authorise a callback URL on the operator page, turns push on
//! (a handler on loopback) and watches its deliveries, and logs out and in again. Every page is
//! saved as a screenshot under `$AQS_TEST_OUTPUT/screenshots/` for review.

use crate::harness::{Redis, Server, fresh_database};
use aqs_testkit::PASSWORD;
use aqs_testkit::browser::Chromium;
use fantoccini::{Client, Locator};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

const OPERATOR: &str = "console-operator@example.com";

/// Chromium over chromedriver (`aqs_testkit::browser`), saving screenshots for review.
pub(crate) struct Browser {
    pub(crate) client: Client,
    /// Holds chromedriver and the browser open; both end when it drops.
    _chromium: Chromium,
    screenshots: PathBuf,
}

impl Browser {
    pub(crate) async fn start() -> Self {
        Self::launch(true).await
    }

    /// A browser with JavaScript turned off, as some members browse.
    pub(crate) async fn start_without_javascript() -> Self {
        Self::launch(false).await
    }

    async fn launch(javascript: bool) -> Self {
        let chromium = Chromium::launch(javascript, 1280, 1100).await;
        Self { client: chromium.client.clone(), _chromium: chromium, screenshots: Chromium::screenshots() }
    }

    pub(crate) async fn screenshot(&self, page: &str) {
        let png = self.client.screenshot().await.expect("screenshot");
        std::fs::write(self.screenshots.join(format!("{page}.png")), png).expect("write screenshot");
    }

    pub(crate) async fn goto(&self, url: &str) {
        self.client.goto(url).await.expect("goto");
    }

    pub(crate) async fn css(&self, selector: &str) -> fantoccini::elements::Element {
        match self.client.wait().at_most(Duration::from_secs(10)).for_element(Locator::Css(selector)).await {
            Ok(element) => element,
            Err(err) => {
                // Where the browser was instead, and what it showed.
                let url = self.client.current_url().await.map(|u| u.to_string()).unwrap_or_default();
                let text = match self.client.find(Locator::Css("body")).await {
                    Ok(body) => body.text().await.unwrap_or_default(),
                    Err(_) => String::new(),
                };
                let text: String = text.chars().take(600).collect();
                panic!("no element {selector}: {err}; the browser is at {url}, showing: {text}")
            }
        }
    }

    /// The element's text. The Overview replaces its figures in place every few seconds, so an
    /// element found a moment ago can be gone (stale) when read: find it again and retry.
    pub(crate) async fn text(&self, selector: &str) -> String {
        let mut last_error = None;
        for _ in 0..5 {
            match self.css(selector).await.text().await {
                Ok(text) => return text,
                Err(err) => last_error = Some(err),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("text of {selector}: {last_error:?}")
    }

    pub(crate) async fn fill(&self, selector: &str, value: &str) {
        let input = self.css(selector).await;
        input.clear().await.expect("clear");
        input.send_keys(value).await.expect("type");
    }

    /// Clicks the element, finding it again if a refresh replaced it in between (see `text`).
    pub(crate) async fn click(&self, selector: &str) {
        let mut last_error = None;
        for _ in 0..5 {
            match self.css(selector).await.click().await {
                Ok(_) => return,
                Err(err) => last_error = Some(err),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("click {selector}: {last_error:?}")
    }

    pub(crate) async fn body(&self) -> String {
        self.text("body").await
    }

    pub(crate) async fn path(&self) -> String {
        self.client.current_url().await.expect("url").path().to_owned()
    }

    /// Waits until `selector`'s text satisfies `ok`, without navigating: for content that changes
    /// in place.
    pub(crate) async fn wait_for_text(&self, selector: &str, timeout: Duration, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let text = self.text(selector).await;
            if ok(&text) {
                return text;
            }
            assert!(Instant::now() < deadline, "{selector} still reads {text:?}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

/// Runs the real `curl`: (HTTP status, JSON body).
fn curl(method: &str, url: &str, token: &str, body: &Value) -> (u16, Value) {
    let output = Command::new("curl")
        .args(["-sS", "-X", method, url, "-H", &format!("Authorization: Bearer {token}")])
        .args(["-H", "Content-Type: application/json", "-d", &body.to_string(), "-w", "\n%{http_code}"])
        .output()
        .expect("curl must be installed (infra/test installs it)");
    assert!(output.status.success(), "curl failed: {}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    let (json, status) = text.rsplit_once('\n').unwrap();
    (status.trim().parse().unwrap(), serde_json::from_str(json).unwrap_or(Value::Null))
}

/// A push handler on loopback: 422 to a body that contains "reject", 200 to any other.
async fn push_handler() -> String {
    let app = axum::Router::new().fallback(|body: String| async move {
        if body.contains("reject") {
            (axum::http::StatusCode::UNPROCESSABLE_ENTITY, "unknown job type")
        } else {
            (axum::http::StatusCode::OK, "done")
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://localhost:{}/", listener.local_addr().unwrap().port());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

impl Browser {
    pub(crate) async fn log_in(&self, email: &str) {
        self.fill("#email", email).await;
        self.fill("#password", PASSWORD).await;
        self.click("form button[type=submit]").await;
        self.wait_for_text("main", Duration::from_secs(10), |t| t.contains("Your queues")).await;
    }

    pub(crate) async fn log_out(&self) {
        self.click("form[action='/logout'] button").await;
        self.wait_for_text(".flash", Duration::from_secs(10), |t| t == "You are logged out.").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_runs_a_queue_from_the_console() {
    let redis = Redis::start("everysec");
    let database = fresh_database().await;
    let env = [("AQS_PUSH_ALLOW_PRIVATE_NETWORKS", "true"), ("AQS_OPERATOR_EMAILS", OPERATOR)];
    let server = Server::start_with_env(&database, &redis.url(), &aqs_testkit::namespace(), &env).await;
    let base = server.base();
    let browser = Browser::start().await;
    let email = format!("ada-{}@example.com", &uuid::Uuid::new_v4().simple().to_string()[..8]);

    // Logged out, the console sends us to log in; from there, sign up.
    browser.goto(&base).await;
    assert_eq!(browser.path().await, "/login");
    browser.click("a[href='/signup']").await;
    browser.fill("#email", &email).await;
    browser.fill("#password", PASSWORD).await;
    browser.screenshot("signup").await;
    browser.click("form button[type=submit]").await;
    browser.wait_for_text("main", Duration::from_secs(10), |t| t.contains("No queues yet")).await;
    assert!(browser.body().await.contains("Welcome to AQS."));
    browser.screenshot("queues-empty").await;

    // Create a queue: one attempt, so a failed message goes straight to the dead letters.
    browser.click("main a.button.primary[href='/new']").await;
    browser.fill("#name", "Image jobs").await;
    let preview =
        browser.wait_for_text("#slug-preview", Duration::from_secs(10), |t| t.ends_with("/queue/v1/image-jobs")).await;
    assert_eq!(preview, format!("{base}/queue/v1/image-jobs"));
    browser.fill("#attempts", "1").await;
    browser.screenshot("create-queue").await;
    browser.click("button[name=intent][value=create]").await;
    let secret = browser.css("#token-secret").await.prop("value").await.unwrap().expect("the secret");
    assert!(secret.starts_with("acq_"), "{secret}");
    let page = browser.body().await;
    assert!(page.contains(
        "Treat it as a privileged token and keep it server-side: never put it in browser code or source control."
    ));
    let copy = browser.css("button[data-copy=token-secret]").await;
    assert!(copy.is_displayed().await.unwrap(), "the script shows the copy button");
    copy.click().await.unwrap();
    browser.wait_for_text(".copy-status", Duration::from_secs(5), |t| !t.is_empty()).await;
    browser.screenshot("queue-created").await;

    // Publish three messages with curl; the Overview shows them.
    let address = format!("{base}/queue/v1/image-jobs");
    for n in 1..=3 {
        let body = json!({"body": format!("{{\"type\":\"resize\",\"key\":\"avatars/{n}.png\"}}"), "content_type": "application/json"});
        let (status, answer) = curl("POST", &format!("{address}/messages"), &secret, &body);
        assert_eq!(status, 201, "{answer}");
    }
    browser.click("a[href='/queues/image-jobs']").await;
    assert_eq!(browser.text("#depth-ready").await, "3");
    assert_eq!(browser.text("#published-today").await, "3");
    browser.screenshot("overview").await;

    // A fourth publish shows up without reloading: the script refreshes the figures in place,
    // and a reader's keyboard focus inside them stays where it was.
    browser.client.execute("window.__sameDocument = true;", vec![]).await.unwrap();
    let focus = "window.__focused = document.querySelector(\"#live a[href$='/dead-letters']\"); \
                 window.__focused.focus(); return document.activeElement === window.__focused;";
    assert_eq!(browser.client.execute(focus, vec![]).await.unwrap(), json!(true));
    let body = json!({"body": "plain text", "content_type": "text/plain"});
    assert_eq!(curl("POST", &format!("{address}/messages"), &secret, &body).0, 201);
    browser.wait_for_text("#depth-ready", Duration::from_secs(15), |t| t == "4").await;
    let same = browser.client.execute("return window.__sameDocument === true;", vec![]).await.unwrap();
    assert_eq!(same, json!(true), "updated in place, not by reloading the page");
    let kept = "return document.activeElement === window.__focused && window.__focused.isConnected;";
    assert_eq!(browser.client.execute(kept, vec![]).await.unwrap(), json!(true), "focus kept across the refresh");
    // The chart beside the cards is refreshed with them, so the two agree.
    let desc = browser.client.execute("return document.getElementById('chart-desc').textContent;", vec![]).await;
    assert!(desc.unwrap().as_str().unwrap().starts_with("4 published"), "the chart counts the fourth publish");
    // With scripts, times read relative, the exact UTC time kept as the hover title.
    let updated = browser.css(".updated time").await;
    let title = updated.attr("title").await.unwrap().unwrap_or_default();
    assert!(title.ends_with(" UTC"), "{title}");
    let shown = updated.text().await.unwrap();
    assert!(!shown.ends_with(" UTC"), "{shown}");

    browser.click("nav.tabs a[href='/queues/image-jobs/messages']").await;
    let messages = browser.body().await;
    assert!(messages.contains("{\"type\":\"resize\",\"key\":\"avatars/1.png\"}"), "the body as sent: {messages}");
    browser.screenshot("messages").await;

    // Consume through the API: acknowledge three, fail one with an error.
    let (status, batch) = curl(
        "POST",
        &format!("{address}/consume"),
        &secret,
        &json!({"max_messages": 10, "max_wait_seconds": 1, "visibility_seconds": 30}),
    );
    assert_eq!(status, 200, "{batch}");
    let receipts: Vec<String> =
        batch["messages"].as_array().unwrap().iter().map(|m| m["receipt"].as_str().unwrap().to_owned()).collect();
    assert_eq!(receipts.len(), 4);
    let (status, acked) = curl("POST", &format!("{address}/ack"), &secret, &json!({"receipts": receipts[..3]}));
    assert_eq!(status, 200, "{acked}");
    let failed = json!({"receipts": [receipts[3]], "error": "resize failed: image too large"});
    let (status, nacked) = curl("POST", &format!("{address}/nack"), &secret, &failed);
    assert_eq!(status, 200, "{nacked}");

    browser.click("nav.tabs a[href='/queues/image-jobs']").await;
    assert_eq!(browser.text("#depth-total").await, "0");
    assert_eq!(browser.text("#delivered-today").await, "4");
    assert_eq!(browser.text("#dead-letters").await, "1");
    browser.screenshot("overview-after-consume").await;

    // The dead letter, its reason and attempts; replay it after confirming.
    browser.click("nav.tabs a[href='/queues/image-jobs/dead-letters']").await;
    let letters = browser.text("main").await;
    assert!(letters.contains("resize failed: image too large"), "{letters}");
    browser.screenshot("dead-letters").await;
    browser.click("#dead-letter-list a[href*='/dead-letters/replay?id=']").await;
    assert!(browser.text("main h2").await.starts_with("Replay dead letter "));
    browser.screenshot("dead-letter-replay").await;
    browser.click("main form button[type=submit]").await;
    browser.wait_for_text(".flash", Duration::from_secs(10), |t| t == "Replayed 1 dead letter.").await;
    assert!(browser.body().await.contains("No dead letters."));
    browser.click("nav.tabs a[href='/queues/image-jobs']").await;
    assert_eq!(browser.text("#depth-ready").await, "1");
    assert_eq!(browser.text("#dead-letters").await, "0");

    // Tokens: mint one (shown once, and it works), then revoke it after confirming.
    browser.click("nav.tabs a[href='/queues/image-jobs/tokens']").await;
    browser.fill("#token-name", "resize worker").await;
    browser.click("form[action$='/tokens'] button[type=submit]").await;
    let worker = browser.css("#token-secret").await.prop("value").await.unwrap().expect("the new secret");
    browser.screenshot("token-created").await;
    let hello = json!({"body": "hello"});
    assert_eq!(curl("POST", &format!("{address}/messages"), &worker, &hello).0, 201);
    browser.click("a[href='/queues/image-jobs/tokens']").await;
    browser.screenshot("tokens").await;
    browser.click("tbody tr:last-child a.danger-link").await;
    assert!(browser.text("main h2").await.contains("resize worker"));
    browser.screenshot("token-revoke").await;
    browser.click("main form button.danger").await;
    browser.wait_for_text(".flash", Duration::from_secs(10), |t| t.contains("revoked")).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while curl("POST", &format!("{address}/messages"), &worker, &hello).0 != 401 {
        assert!(Instant::now() < deadline, "a revoked token is refused within a second or so");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // An operator authorises the member's callback URL on the operator page.
    let handler_url = push_handler().await;
    crate::harness::sign_up(&reqwest::Client::new(), &base, OPERATOR).await;
    browser.goto(&base).await;
    browser.log_out().await;
    browser.log_in(OPERATOR).await;
    browser.click("nav.account a[href='/admin/callback-urls']").await;
    browser.fill("#member-email", &email).await;
    browser.click("form[action='/admin/callback-urls'][method=get] button").await;
    browser.wait_for_text("main", Duration::from_secs(10), |t| t.contains("None yet")).await;
    browser.fill("#prefix", &handler_url).await;
    browser.click("form[action='/admin/callback-urls'][method=post] button").await;
    browser.wait_for_text(".flash", Duration::from_secs(10), |t| t.starts_with("Authorised ")).await;
    browser.screenshot("admin-callback-urls").await;
    browser.log_out().await;
    browser.log_in(&email).await;

    // Push: the server's rule beside the field, then the handler on loopback, its secret once.
    browser.goto(&format!("{base}/queues/image-jobs/push")).await;
    assert!(browser.body().await.contains("Push is off."));
    assert!(browser.text("#callback-prefixes").await.contains(&handler_url));
    browser.fill("#handler-url", "https://elsewhere.example.com/hook").await;
    browser.click("form[action$='/push'] button[type=submit]").await;
    let error = browser.text("#handler-url-error").await;
    assert!(error.starts_with("Not among the callback URLs authorised for your account"), "{error}");
    browser.screenshot("push-error").await;
    browser.fill("#handler-url", &format!("{handler_url}image-jobs")).await;
    browser.click("form[action$='/push'] button[type=submit]").await;
    let signing = browser.css("#signing-secret").await.prop("value").await.unwrap().expect("the signing secret");
    assert!(signing.starts_with("whsec_"), "{signing}");
    browser.screenshot("push-secret").await;
    browser.click("main a.button.primary[href='/queues/image-jobs/push']").await;
    assert!(!browser.client.source().await.unwrap().contains(&signing), "shown once");

    // The two waiting messages are pushed and acknowledged; one the handler refuses is dead-lettered.
    let reject = json!({"body": "{\"type\":\"reject\"}", "content_type": "application/json"});
    assert_eq!(curl("POST", &format!("{address}/messages"), &secret, &reject).0, 201);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        browser.goto(&format!("{base}/queues/image-jobs/push")).await;
        let rows = browser.client.find_all(Locator::Css("table.deliveries tbody tr")).await.unwrap().len();
        if rows >= 3 {
            break;
        }
        assert!(Instant::now() < deadline, "{rows} deliveries listed");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let log = browser.text("table.deliveries").await;
    assert!(log.contains("Acknowledged") && log.contains("Dead-lettered") && log.contains("unknown job type"), "{log}");
    browser.screenshot("push").await;
    browser.click("a[href='/queues/image-jobs/push/rotate-secret']").await;
    assert!(browser.body().await.contains("The old secret keeps working for 24 hours"));
    browser.screenshot("push-rotate").await;
    browser.click("main form button[type=submit]").await;
    let rotated = browser.css("#signing-secret").await.prop("value").await.unwrap().expect("a new secret");
    assert_ne!(rotated, signing);

    // Settings: a wrong name does not delete the queue.
    browser.click("nav.tabs a[href='/queues/image-jobs/settings']").await;
    browser.screenshot("settings").await;
    browser.fill("#confirm-name", "image-jobs").await;
    browser.click("form[action$='/delete'] button").await;
    assert!(browser.text("#confirm-name-error").await.contains("type Image jobs exactly"));
    browser
        .client
        .execute("document.getElementById('confirm-name').scrollIntoView({block: 'center'});", vec![])
        .await
        .unwrap();
    browser.screenshot("settings-delete-error").await;

    // At a laptop's width the Messages table keeps each id and content type on one line: the id
    // shortened (whole in its text and title), and times read as sentences once made relative.
    // (Delayed: push, now on, would deliver a ready one at once.)
    let body = json!({"body": "{\"n\":1}", "content_type": "application/json", "delay_seconds": 600});
    assert_eq!(curl("POST", &format!("{address}/messages"), &secret, &body).0, 201);
    browser.client.set_window_size(1366, 900).await.unwrap();
    browser.goto(&format!("{base}/queues/image-jobs/messages")).await;
    browser.css("#message-list").await;
    let lines = browser
        .client
        .execute(
            "const id = document.querySelector('#message-list .short-id');
             const type = document.querySelector('#message-list code.nowrap');
             const line = parseFloat(getComputedStyle(id).lineHeight) || 20;
             return [id.getBoundingClientRect().height / line, type.getClientRects().length,
                     id.textContent.length, document.querySelector('#message-list td[data-label=Time]').innerText];",
            vec![],
        )
        .await
        .unwrap();
    assert!(lines[0].as_f64().unwrap() < 1.5, "the id spans {} lines", lines[0]);
    assert_eq!(lines[1].as_u64(), Some(1), "the content type breaks");
    assert_eq!(lines[2].as_u64(), Some(32), "the whole id is in the text");
    let time = lines[3].as_str().unwrap();
    assert!(
        !["at in", "since in", "until in", "at just", "since just"].iter().any(|bad| time.contains(bad)),
        "the time reads {time:?}"
    );
    browser.screenshot("messages-laptop").await;

    // At phone width the pages still read well.
    browser.client.set_window_size(390, 900).await.unwrap();
    browser.goto(&base).await;
    browser.screenshot("queues-phone").await;
    browser.goto(&format!("{base}/queues/image-jobs")).await;
    browser.screenshot("overview-phone").await;
    // The chart's labels keep a legible size at phone width (the chart scrolls instead of shrinking).
    let smallest = browser
        .client
        .execute(
            "return Math.min(...[...document.querySelectorAll('.chart text.axis')]
               .map((t) => parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a));",
            vec![],
        )
        .await
        .unwrap();
    let smallest = smallest.as_f64().unwrap();
    let detail = browser
        .client
        .execute(
            "return [...document.querySelectorAll('.chart text.axis')].map((t) => [t.textContent, t.ownerSVGElement.getAttribute('class'), getComputedStyle(t).fontSize, t.getScreenCTM().a, t.ownerSVGElement.getBoundingClientRect().width, getComputedStyle(t.ownerSVGElement).width]);",
            vec![],
        )
        .await
        .unwrap();
    assert!(smallest >= 11.0, "chart labels render at {smallest}px at 390px wide: {detail}");
    // Nothing overflows the page sideways (the charts scroll inside their frame), and each chart's
    // y-axis is in view while the chart opens at today.
    let layout = browser
        .client
        .execute(
            "return [document.documentElement.scrollWidth,
                     ...[...document.querySelectorAll('.chart-frame > .y-axis')].map((a) => {
                       const r = a.getBoundingClientRect();
                       return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth;
                     })];",
            vec![],
        )
        .await
        .unwrap();
    let layout = layout.as_array().unwrap();
    assert!(layout[0].as_u64().unwrap() <= 390, "the Overview is {}px wide at 390px", layout[0]);
    assert_eq!(layout.len(), 5, "four charts, each with its y-axis: {layout:?}");
    assert!(layout[1..].iter().all(|v| v.as_bool() == Some(true)), "a y-axis is off-screen: {layout:?}");
    browser.goto(&format!("{base}/queues/image-jobs/push")).await;
    browser.screenshot("push-phone").await;
    browser.client.set_window_size(1280, 1100).await.unwrap();

    // Log out, then back in.
    browser.goto(&base).await;
    browser.screenshot("queues").await;
    browser.click("form[action='/logout'] button").await;
    browser.wait_for_text(".flash", Duration::from_secs(10), |t| t == "You are logged out.").await;
    assert_eq!(browser.path().await, "/login");
    browser.screenshot("login").await;
    browser.fill("#email", &email).await;
    browser.fill("#password", "not my password").await;
    browser.click("form button[type=submit]").await;
    browser.wait_for_text(".error-summary", Duration::from_secs(10), |t| t == "Wrong email or password.").await;
    browser.screenshot("login-error").await;
    browser.fill("#password", PASSWORD).await;
    browser.click("form button[type=submit]").await;
    browser.wait_for_text("main", Duration::from_secs(10), |t| t.contains("Image jobs")).await;
    assert_eq!(browser.path().await, "/");

    if let Err(err) = browser.client.clone().close().await {
        eprintln!("closing the browser session: {err}");
    }
    drop(server);
}

/// Without JavaScript nothing can copy, so the copy button beside a shown-once secret must not be
/// displayed (`.button` once overrode `hidden`); the secret itself stays readable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_javascript_the_copy_button_is_not_displayed() {
    let redis = Redis::start("everysec");
    let database = fresh_database().await;
    let server = Server::start_with_env(&database, &redis.url(), &aqs_testkit::namespace(), &[]).await;
    let base = server.base();
    let browser = Browser::start_without_javascript().await;
    let email = format!("nojs-{}@example.com", &uuid::Uuid::new_v4().simple().to_string()[..8]);

    browser.goto(&format!("{base}/signup")).await;
    browser.fill("#email", &email).await;
    browser.fill("#password", PASSWORD).await;
    browser.click("form button[type=submit]").await;
    browser.wait_for_text("main", Duration::from_secs(10), |t| t.contains("No queues yet")).await;
    browser.goto(&format!("{base}/new")).await;
    browser.fill("#name", "No script").await;
    browser.click("button[name=intent][value=create]").await;
    let secret = browser.css("#token-secret").await.prop("value").await.unwrap().expect("the secret");
    assert!(secret.starts_with("acq_"), "{secret}");
    let copy = browser.css("button[data-copy=token-secret]").await;
    assert!(!copy.is_displayed().await.unwrap(), "no script, no copy button");
    let display = copy.css_value("display").await.unwrap();
    assert_eq!(display, "none");
    browser.screenshot("queue-created-without-javascript").await;

    if let Err(err) = browser.client.clone().close().await {
        eprintln!("closing the browser session: {err}");
    }
    drop(server);
}
