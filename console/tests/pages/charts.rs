//! The Overview's charts in a real browser (headless Chromium, `browser.rs`) with and without
//! JavaScript, and every page's contrast in light and dark mode: the last hour's lines told apart
//! by colour and dash, the zero axis never painted over, a label every 10 minutes, a legend without
//! bullets that names a pointed minute's values, the age and latency graphs, no sideways overflow
//! at phone width.

use super::browser::Browser;
use super::support::{TestConsole, Visitor, queue_of, spawn_console};
use aqs_core::time::now_ms;
use aqs_engine::NewMessage;
use serde_json::{Value, json};
use sqlx::PgPool;

fn message(body: &str, delay_ms: u64) -> NewMessage {
    NewMessage { delay_ms, ..NewMessage::text(body) }
}

/// A queue "jobs" (one attempt) with a known last hour, all in the current minute but one publish:
/// 6 published, delivered, 4 acknowledged about 2 s after their publish, 2 dead-lettered; and one
/// message published 10 minutes ago (a delay that ended), which waits: the oldest, 10 minutes old,
/// sampled by a sweep. Answers the busy minute's label ("12:34"): by the time the page is drawn,
/// a later minute may be the current one.
async fn busy_queue(app: &TestConsole, ada: &mut Visitor) -> String {
    ada.sign_up("ada@example.com").await;
    ada.create_queue("jobs", "1").await;
    let queue = queue_of(app, "ada@example.com", "jobs").await;
    // Everything below lands in one minute: not within its last 10 seconds.
    let into_minute = now_ms() % 60_000;
    if into_minute > 50_000 {
        tokio::time::sleep(std::time::Duration::from_millis(60_500 - into_minute)).await;
    }
    let engine = &app.engine;
    let now = now_ms();
    let batch: Vec<NewMessage> = (0..6).map(|i| message(&format!("job {i}"), 0)).collect();
    engine.publish(queue.id, &batch, now).await.unwrap();
    let receipts = super::support::lease(app, &queue, 10, now).await;
    assert_eq!(engine.ack(queue.id, &receipts[..4], now + 2_000).await.unwrap(), vec![true; 4]);
    engine.nack(queue.id, &receipts[4..], 0, "no", now).await.unwrap();
    engine.publish(queue.id, &[message("old", 1)], now - 600_000).await.unwrap();
    engine.sweep(queue.id, now, false).await.unwrap().expect("the queue exists");
    let minute_of_day = now / 60_000 % 1440;
    format!("{:02}:{:02}", minute_of_day / 60, minute_of_day % 60)
}

/// `script`'s answer as a list of strings.
fn strings(value: &Value) -> Vec<String> {
    value.as_array().unwrap().iter().map(|v| v.as_str().unwrap_or_default().to_owned()).collect()
}

#[sqlx::test(migrations = "../migrations")]
async fn the_last_hour_reads_truthfully_in_chromium(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    let busy = busy_queue(&app, &mut ada).await;
    let browser = Browser::open(&app, &ada, true, 1280).await;
    browser.goto(&format!("{}/queues/jobs", app.base)).await;

    // The legend: the hour's totals, one key per series, no list bullets.
    let text = |id: &str| format!("return document.getElementById('{id}').textContent;");
    assert_eq!(browser.run(&text("minutes-when")).await, json!("Last hour"));
    for (id, total) in [("published", "7"), ("delivered", "6"), ("acked", "4"), ("dead", "2")] {
        assert_eq!(browser.run(&text(&format!("minutes-{id}"))).await, json!(total), "{id}");
    }
    let bullets = browser
        .run(
            "return [...document.querySelectorAll('.legend li')]
               .filter((li) => getComputedStyle(li).display === 'list-item' && getComputedStyle(li).listStyleType !== 'none')
               .length;",
        )
        .await;
    assert_eq!(bullets, json!(0), "a legend item shows a bullet");

    // Four lines, each with its own colour and its own dash pattern.
    let styles = browser
        .run(
            "return [...document.querySelectorAll('svg[data-chart=minutes] path.line')]
               .map((p) => { const s = getComputedStyle(p); return [s.stroke, s.strokeDasharray]; });",
        )
        .await;
    let styles = styles.as_array().unwrap();
    assert_eq!(styles.len(), 4);
    for (i, a) in styles.iter().enumerate() {
        for b in &styles[i + 1..] {
            assert!(a[0] != b[0] && a[1] != b[1], "two series look alike: {a} and {b}");
        }
    }

    // Where every series is at zero (20 minutes ago), what is painted on the zero line is the axis.
    let on_axis = browser
        .run(
            "const svg = document.querySelector('svg[data-chart=minutes]');
             svg.scrollIntoView({ block: 'center' });
             const axis = svg.querySelector('line.baseline').getBoundingClientRect();
             const column = svg.querySelectorAll('.hit')[40].getBoundingClientRect();
             const hits = document.elementsFromPoint(column.left + column.width / 2, axis.top + axis.height / 2)
               .filter((e) => !e.classList.contains('hit'));
             return hits[0] === svg.querySelector('line.baseline');",
        )
        .await;
    assert_eq!(on_axis, json!(true), "a line is painted over the zero axis");

    // A time label every 10 minutes.
    let ticks = strings(&browser.run("return [...document.querySelectorAll('svg[data-chart=minutes] text.axis.x')].map((t) => t.textContent);").await);
    assert!(ticks.len() >= 5 && ticks.iter().all(|t| t.len() == 5 && t.ends_with('0')), "{ticks:?}");

    // The pointer on the busy minute: the legend names it and its values; off the chart, the
    // totals come back.
    browser.point_at(&format!("svg[data-chart=minutes] .hit[data-label='{busy}']")).await;
    let named = format!("return document.getElementById('minutes-when').textContent === '{busy}';");
    browser.until("the legend names the minute", &named).await;
    assert_eq!(browser.run(&text("minutes-published")).await, json!("6"));
    assert_eq!(browser.run(&text("minutes-acked")).await, json!("4"));
    browser.point_away().await;
    let totals = "return document.getElementById('minutes-when').textContent === 'Last hour';";
    browser.until("the totals are back", totals).await;
    assert_eq!(browser.run(&text("minutes-published")).await, json!("7"));

    // From the keyboard: the chart focused, End steps onto the last minute, the left arrow to the
    // one before, each shown with its values; Escape puts the totals back.
    let scroll = browser.client.find(fantoccini::Locator::Css("#minutes-chart .chart-scroll")).await.unwrap();
    let key = |k: fantoccini::key::Key| char::from(k).to_string();
    let shows = |from_end: usize| {
        format!(
            "const h = document.querySelectorAll('svg[data-chart=minutes] .hit'); const c = h[h.length - {from_end}];
             return document.getElementById('minutes-when').textContent === c.dataset.label
               && document.getElementById('minutes-published').textContent === c.dataset.values.split('|')[0];"
        )
    };
    scroll.send_keys(&key(fantoccini::key::Key::End)).await.unwrap();
    browser.until("End shows the last minute", &shows(1)).await;
    scroll.send_keys(&key(fantoccini::key::Key::Left)).await.unwrap();
    browser.until("the left arrow steps back", &shows(2)).await;
    scroll.send_keys(&key(fantoccini::key::Key::Escape)).await.unwrap();
    browser.until("Escape puts the totals back", totals).await;

    // Age and latency: the oldest message's 10 minutes, the acks' 2 s (an estimate).
    let age = browser.run(&text("timing-minutes-age")).await;
    assert!(age.as_str().unwrap().starts_with("max 10 min"), "{age}");
    for id in ["timing-minutes-p50", "timing-minutes-p99", "timing-days-p50"] {
        let p = browser.run(&text(id)).await;
        assert!(p.as_str().unwrap().ends_with(" s"), "{id}: {p}");
    }
    let age_line = browser
        .run("return document.querySelector('svg[data-chart=timing-minutes] path.line.age').getAttribute('d');")
        .await;
    assert!(age_line.as_str().unwrap().contains('L'), "the age is drawn: {age_line}");

    browser.screenshot("overview-charts").await;
    let light = browser.contrast_failures().await;
    assert_eq!(light, json!([]), "contrast in light mode");

    // At a phone's width the page does not scroll sideways, and every chart keeps its y-axis in view.
    browser.client.set_window_size(390, 900).await.unwrap();
    browser.goto(&format!("{}/queues/jobs", app.base)).await;
    let layout = browser
        .run(
            "return [document.documentElement.scrollWidth,
                     ...[...document.querySelectorAll('.chart-frame > .y-axis')].map((a) => {
                       const r = a.getBoundingClientRect();
                       return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth;
                     })];",
        )
        .await;
    browser.screenshot("overview-phone").await;
    let layout = layout.as_array().unwrap();
    assert!(layout[0].as_u64().unwrap() <= 390, "the Overview is {}px wide at 390px", layout[0]);
    assert_eq!(layout.len(), 5, "four charts, each with its y-axis: {layout:?}");
    assert!(layout[1..].iter().all(|v| v.as_bool() == Some(true)), "a y-axis is off-screen: {layout:?}");
}

#[sqlx::test(migrations = "../migrations")]
async fn without_javascript_the_legend_has_the_totals_and_the_table_the_minutes(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    let busy = busy_queue(&app, &mut ada).await;
    let browser = Browser::open(&app, &ada, false, 1280).await;
    browser.goto(&format!("{}/queues/jobs", app.base)).await;
    assert_eq!(browser.run("return document.getElementById('minutes-published').textContent;").await, json!("7"));
    // The browser's own tooltip names each value of the minute.
    let title = browser
        .run(&format!(
            "return document.querySelector(\"svg[data-chart=minutes] .hit[data-label='{busy}'] title\").textContent;"
        ))
        .await;
    let title = title.as_str().unwrap();
    assert!(title.contains("Published 6, Delivered 6, Acknowledged 4, Dead-lettered 2"), "{title}");
    // The numbers per minute, once their disclosure is opened.
    browser
        .client
        .find(fantoccini::Locator::Css("#minutes-chart + details summary"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let rows = browser.run("const t = document.getElementById('minutes-table'); return [t.checkVisibility(), t.tBodies[0].rows.length];").await;
    assert_eq!(rows, json!([true, 2]), "the current minute and 10 minutes ago");
    assert_eq!(browser.contrast_failures().await, json!([]));
}

#[sqlx::test(migrations = "../migrations")]
async fn every_page_is_readable_in_light_and_dark(db: PgPool) {
    let app = spawn_console(db).await;
    let mut ada = Visitor::new(&app);
    busy_queue(&app, &mut ada).await;
    let browser = Browser::open(&app, &ada, true, 1280).await;
    let pages = [
        "/",
        "/queues/jobs",
        "/queues/jobs/activity",
        "/queues/jobs/messages",
        "/queues/jobs/dead-letters",
        "/queues/jobs/tokens",
        "/queues/jobs/push",
        "/queues/jobs/settings",
        "/new",
        "/hosts",
        "/billing",
        "/account",
    ];
    for scheme in ["light", "dark"] {
        browser.color_scheme(scheme).await;
        for page in pages {
            browser.goto(&format!("{}{page}", app.base)).await;
            let background = browser.run("return getComputedStyle(document.body).backgroundColor;").await;
            let dark = background.as_str() == Some("rgb(15, 20, 27)");
            assert_eq!(dark, scheme == "dark", "{page} in {scheme}: the page's background is {background}");
            if page == "/queues/jobs" {
                browser.screenshot(&format!("overview-{scheme}")).await;
            }
            let failures = browser.contrast_failures().await;
            assert_eq!(failures, json!([]), "{page} in {scheme}");
        }
    }
    // Logged out too.
    browser.client.delete_all_cookies().await.unwrap();
    for scheme in ["light", "dark"] {
        browser.color_scheme(scheme).await;
        for page in ["/login", "/signup"] {
            browser.goto(&format!("{}{page}", app.base)).await;
            assert_eq!(browser.contrast_failures().await, json!([]), "{page} in {scheme}");
        }
    }
}
