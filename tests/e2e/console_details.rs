//! The console's smaller pages in a real browser (headless Chromium, `console_journey::Browser`),
//! with and without JavaScript: the token secret shown whole and the curl snippet kept on its lines
//! at a laptop's and a phone's width, a body's NUL and CR shown as markers, deleting a message from
//! its page after confirming, the warnings at create, the Consumers tab listing a real consumer,
//! the Connect tab and the device of each session.

use crate::console_journey::Browser;
use crate::harness::{Redis, Server, fresh_database};
use aqs_testkit::PASSWORD;
use serde_json::{Value, json};
use std::time::Duration;

/// What a browser needs to show of the secret and the curl snippet at one width: (the secret's
/// length as typed in the field, whether the field shows all of it, the snippet's rendered lines,
/// whether it scrolls inside its own box, the page's width).
const MEASURE: &str = "const field = document.getElementById('token-secret');
    const code = document.querySelector('#snippet-curl code');
    const pre = document.getElementById('snippet-curl');
    const line = parseFloat(getComputedStyle(code).lineHeight);
    return [field.value.length, field.scrollHeight <= field.clientHeight + 1 && field.scrollWidth <= field.clientWidth + 1,
            Math.round(code.getBoundingClientRect().height / line), pre.scrollWidth >= pre.clientWidth,
            document.documentElement.scrollWidth];";

async fn sign_up_and_create(browser: &Browser, base: &str, email: &str, name: &str, javascript: bool) {
    browser.goto(&format!("{base}/signup")).await;
    browser.fill("#email", email).await;
    browser.fill("#password", PASSWORD).await;
    browser.click("form button[type=submit]").await;
    browser.wait_for_text("main", Duration::from_secs(10), |t| t.contains("No queues yet")).await;
    create(browser, base, name, javascript).await;
}

async fn create(browser: &Browser, base: &str, name: &str, javascript: bool) {
    browser.goto(&format!("{base}/new")).await;
    browser.fill("#name", name).await;
    if javascript {
        // As a member would: the address previewed as typed lengthens the form above the button,
        // and a click aimed at the button before it arrived lands beside it.
        browser.wait_for_text("#slug-preview", Duration::from_secs(10), |t| t.contains("/queue/v1/")).await;
    }
    browser.click("button[name=intent][value=create]").await;
    browser.css("#token-secret").await;
}

fn http_publish(base: &str, slug: &str, token: &str, body: Value) -> u16 {
    let output = std::process::Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST"])
        .arg(format!("{base}/queue/v1/{slug}/messages"))
        .args(["-H", &format!("Authorization: Bearer {token}"), "-H", "Content-Type: application/json"])
        .args(["-d", &body.to_string()])
        .output()
        .expect("curl");
    String::from_utf8_lossy(&output.stdout).parse().unwrap_or(0)
}

async fn run(javascript: bool) {
    let redis = Redis::start("everysec");
    let database = fresh_database().await;
    let server = Server::start_with_env(&database, &redis.url(), &aqs_testkit::namespace(), &[]).await;
    let base = server.base();
    let browser = if javascript { Browser::start().await } else { Browser::start_without_javascript().await };
    let tag = if javascript { "js" } else { "nojs" };
    let email = format!("details-{tag}-{}@example.com", &uuid::Uuid::new_v4().simple().to_string()[..8]);

    // The token and the curl snippet, at a laptop's width and a phone's.
    for (width, name) in [(1366, "Wide jobs"), (390, "Narrow jobs")] {
        browser.client.set_window_size(width, 900).await.unwrap();
        if width == 1366 {
            sign_up_and_create(&browser, &base, &email, name, javascript).await;
        } else {
            create(&browser, &base, name, javascript).await;
        }
        let measured = browser.client.execute(MEASURE, vec![]).await.unwrap();
        let m = measured.as_array().unwrap();
        assert_eq!(m[0].as_u64(), Some(42), "the whole secret is in the field at {width}px: {m:?}");
        assert_eq!(m[1].as_bool(), Some(true), "the field shows the whole secret at {width}px: {m:?}");
        assert_eq!(m[2].as_u64(), Some(4), "the curl snippet keeps its 4 lines (no URL broken) at {width}px: {m:?}");
        assert_eq!(m[3].as_bool(), Some(true));
        assert!(m[4].as_u64().unwrap() <= u64::from(width), "the page does not scroll sideways at {width}px: {m:?}");
        browser.screenshot(&format!("details-created-{width}-{tag}")).await;
    }
    browser.client.set_window_size(1280, 1100).await.unwrap();
    let token = browser.css("#token-secret").await.prop("value").await.unwrap().unwrap();

    // A second "Wide jobs": the preview (typed, or the button without a script) warns; created anyway.
    browser.goto(&format!("{base}/new")).await;
    browser.fill("#name", "Wide jobs").await;
    if !javascript {
        browser.click("button[name=intent][value=preview]").await;
    }
    browser.wait_for_text("#slug-preview", Duration::from_secs(10), |t| t.contains("is taken")).await;
    let preview = browser.text("#slug-preview").await;
    assert!(preview.contains("You already have a queue named “Wide jobs”"), "{preview}");
    browser.click("button[name=intent][value=create]").await;
    assert!(browser.text("#same-name").await.contains("You have other queues named “Wide jobs”."));

    // NUL and CR in a body are visible markers.
    let slug = "narrow-jobs"; // the token read above is its own
    let body = json!({"body": "a\u{0}b\r\nc", "content_type": "text/plain"});
    assert_eq!(http_publish(&base, slug, &token, body), 201);
    browser.goto(&format!("{base}/queues/{slug}/messages")).await;
    browser.click("#message-list a[href*='/messages/view?entry=']").await;
    let markers = browser
        .client
        .execute("return [...document.querySelectorAll('#message-body .ctl')].map((e) => [e.textContent, e.title, getComputedStyle(e).color]);", vec![])
        .await
        .unwrap();
    let markers = markers.as_array().unwrap();
    assert_eq!(markers.len(), 2, "{markers:?}");
    assert_eq!((markers[0][0].as_str(), markers[1][0].as_str()), (Some("\\0"), Some("\\r")));
    assert_ne!(markers[0][2], json!("rgb(230, 237, 246)"), "a colour of their own");
    assert_eq!(browser.text("#message-body").await, "a\\0b\\r\nc", "the text copies as shown");
    browser.screenshot(&format!("details-control-bytes-{tag}")).await;

    // Delete it after confirming.
    browser.click("#delete-message").await;
    assert!(browser.text("main h2").await.starts_with("Delete message "));
    browser.click("#confirm-form button[type=submit]").await;
    browser.wait_for_text(".flash", Duration::from_secs(10), |t| t.starts_with("Deleted message ")).await;
    browser.screenshot(&format!("details-deleted-{tag}")).await;

    // A consumer through the API shows on the Consumers tab (written within a few seconds).
    assert_eq!(http_publish(&base, slug, &token, json!({"body": "x"})), 201);
    let consumed = std::process::Command::new("curl")
        .args(["-sS", "-A", "resize-worker/1.0", "-X", "POST"])
        .arg(format!("{base}/queue/v1/{slug}/consume"))
        .args(["-H", &format!("Authorization: Bearer {token}"), "-H", "Content-Type: application/json", "-d", "{}"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&consumed.stdout).contains("receipt"));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        browser.goto(&format!("{base}/queues/{slug}/consumers")).await;
        if browser.body().await.contains("resize-worker/1.0") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the consumer is listed within seconds");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(browser.text("#leases-held").await, "1");
    assert!(browser.text("#consumer-list").await.contains("default"));
    browser.screenshot(&format!("details-consumers-{tag}")).await;

    // Connect: the snippets name this queue.
    browser.click(&format!("nav.tabs a[href='/queues/{slug}/connect']")).await;
    assert!(browser.text("#snippet-typescript").await.contains(&format!("queue: \"{slug}\"")));
    browser.screenshot(&format!("details-connect-{tag}")).await;
    // At a phone's width the long lines scroll inside their own boxes, never the page.
    browser.client.set_window_size(390, 900).await.unwrap();
    let widths = browser
        .client
        .execute(
            "return [document.documentElement.scrollWidth,
                     ...[...document.querySelectorAll('pre.code')].map((p) => p.getBoundingClientRect().right <= window.innerWidth)];",
            vec![],
        )
        .await
        .unwrap();
    let widths = widths.as_array().unwrap();
    assert!(widths[0].as_u64().unwrap() <= 390, "the Connect tab is {}px wide at 390px", widths[0]);
    assert!(widths[1..].iter().all(|fits| fits.as_bool() == Some(true)), "a snippet overflows the page: {widths:?}");
    browser.screenshot(&format!("details-connect-phone-{tag}")).await;
    browser.client.set_window_size(1280, 1100).await.unwrap();

    // The Account page names this browser's device.
    browser.goto(&format!("{base}/account")).await;
    let sessions = browser.text("#sessions").await;
    assert!(sessions.contains("Headless Chrome on Linux") || sessions.contains("Chrome on Linux"), "{sessions}");
    browser.screenshot(&format!("details-sessions-{tag}")).await;

    if let Err(err) = browser.client.clone().close().await {
        eprintln!("closing the browser session: {err}");
    }
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_smaller_pages_work_in_a_browser() {
    run(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_smaller_pages_work_in_a_browser_without_javascript() {
    run(false).await;
}
