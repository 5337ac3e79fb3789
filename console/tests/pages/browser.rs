//! Headless Chromium over WebDriver (chromedriver) against the test console, for what only a real
//! browser shows: computed colours and contrast (light and dark, through Chromium's emulated
//! `prefers-color-scheme`), layout at phone width, and the script's behaviour under a real pointer.
//! It logs in as a `Visitor` that signed up, so a test sets up its data the quick way and looks at
//! it in the browser (the browser itself: `aqs_testkit::browser`).

use super::support::{TestConsole, Visitor};
use aqs_testkit::browser::Chromium;
use axum::http::Method;
use fantoccini::Client;
use fantoccini::wd::WebDriverCompatibleCommand;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

pub struct Browser {
    pub client: Client,
    /// Holds chromedriver and the browser open; both end when it drops.
    _chromium: Chromium,
}

/// A Chrome DevTools command through chromedriver's `goog/cdp/execute`.
#[derive(Debug)]
struct Cdp(Value);

impl WebDriverCompatibleCommand for Cdp {
    fn endpoint(&self, base: &url::Url, session: Option<&str>) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/goog/cdp/execute", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (Method, Option<String>) {
        (Method::POST, Some(self.0.to_string()))
    }
}

impl Browser {
    /// A browser logged in as `visitor` (whose password is `PASSWORD`), on `app`, `javascript` on or off, at `width` × 900.
    pub async fn open(app: &TestConsole, visitor: &Visitor, javascript: bool, width: u32) -> Self {
        let chromium = Chromium::launch(javascript, width, 900).await;
        let browser = Self { client: chromium.client.clone(), _chromium: chromium };
        // The visitor's account, logged in through the form as a member would.
        browser.client.goto(&format!("{}/login", app.base)).await.expect("goto");
        let email = visitor.email.clone().expect("the visitor signed up");
        for (field, value) in [("#email", email.as_str()), ("#password", super::support::PASSWORD)] {
            let input = browser.client.find(fantoccini::Locator::Css(field)).await.expect(field);
            input.send_keys(value).await.expect("type");
        }
        browser.client.find(fantoccini::Locator::Css("form button[type=submit]")).await.unwrap().click().await.unwrap();
        browser.until("logged in", "return location.pathname === '/';").await;
        browser
    }

    /// Chromium's emulated `prefers-color-scheme` for this tab, from now on.
    pub async fn color_scheme(&self, scheme: &str) {
        let params = json!({ "features": [{ "name": "prefers-color-scheme", "value": scheme }] });
        self.client
            .issue_cmd(Cdp(json!({ "cmd": "Emulation.setEmulatedMedia", "params": params })))
            .await
            .expect("emulate the color scheme");
        let query = format!("return matchMedia('(prefers-color-scheme: {scheme})').matches;");
        assert_eq!(self.run(&query).await, json!(true), "Chromium emulates {scheme}");
    }

    /// Saves the page as `$AQS_TEST_OUTPUT/screenshots/console-{name}.png`, for review.
    pub async fn screenshot(&self, name: &str) {
        let folder = Chromium::screenshots();
        // The whole page: the window as tall as the page for the shot.
        let (width, height) = self.client.get_window_size().await.expect("window size");
        let page = self.run("return document.documentElement.scrollHeight;").await.as_u64().unwrap_or(900);
        self.client.set_window_size(width as u32, page.clamp(900, 4000) as u32 + 140).await.expect("resize");
        let png = self.client.screenshot().await.expect("screenshot");
        self.client.set_window_size(width as u32, height as u32).await.expect("resize");
        std::fs::write(folder.join(format!("console-{name}.png")), png).expect("write the screenshot");
    }

    /// The page's contrast failures (`CONTRAST_FAILURES`), after checking that the check sees a
    /// grey text on the page's own panel (so an empty answer means something).
    pub async fn contrast_failures(&self) -> Value {
        let probe = "const p = document.createElement('p'); p.id = 'contrast-probe'; p.textContent = 'probe';
                     p.style.color = getComputedStyle(document.body).backgroundColor; p.style.opacity = '1';
                     document.querySelector('main').append(p);";
        self.run(probe).await;
        let seen = self.run(CONTRAST_FAILURES).await;
        assert!(
            seen.to_string().contains("probe"),
            "the contrast check misses a text as light as its background: {seen}"
        );
        self.run("document.getElementById('contrast-probe').remove();").await;
        self.run(CONTRAST_FAILURES).await
    }

    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.expect("goto");
    }

    /// Runs `script` (a function body) in the page and answers what it returns.
    pub async fn run(&self, script: &str) -> Value {
        self.client.execute(script, vec![]).await.unwrap_or_else(|err| panic!("{err}: {script}"))
    }

    /// Waits until `script` returns `true`.
    pub async fn until(&self, what: &str, script: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.run(script).await != json!(true) {
            assert!(Instant::now() < deadline, "{what}: still not true after 10 s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Moves the pointer onto the element `selector` finds (the real pointer, as a mouse would).
    pub async fn point_at(&self, selector: &str) {
        use fantoccini::actions::{InputSource, MouseActions, PointerAction};
        let element = self.client.find(fantoccini::Locator::Css(selector)).await.expect(selector);
        let actions = MouseActions::new("mouse".into()).then(PointerAction::MoveToElement {
            element,
            duration: None,
            x: 0.0,
            y: 0.0,
        });
        self.client.perform_actions(actions).await.expect("move the pointer");
    }

    /// Moves the pointer to the page's top left corner, off every chart.
    pub async fn point_away(&self) {
        use fantoccini::actions::{InputSource, MouseActions, PointerAction};
        let actions = MouseActions::new("mouse".into()).then(PointerAction::MoveTo { duration: None, x: 1.0, y: 1.0 });
        self.client.perform_actions(actions).await.expect("move the pointer");
    }
}

/// Every visible text on the page whose contrast against its background is below WCAG AA (4.5:1,
/// 3:1 for large text), and every chart line below 3:1 against its panel: `[]` when all is well,
/// else one description per failure.
pub const CONTRAST_FAILURES: &str = r#"
const parse = (c) => {
  const m = /rgba?\(([^)]+)\)/.exec(c || "");
  if (!m) return null;
  const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
  return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
};
const channel = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
const lum = (c) => 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b);
const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
const background = (el) => {
  for (let e = el; e; e = e.parentElement) {
    if (e instanceof SVGElement) continue;
    const c = parse(getComputedStyle(e).backgroundColor);
    if (c && c.a > 0.5) return c;
  }
  return { r: 255, g: 255, b: 255 };
};
const failures = [];
const hidden = (el) => el.closest(".visually-hidden, title, desc, script, style, noscript, option, [disabled], fieldset:disabled")
  || !el.checkVisibility({ visibilityProperty: true, opacityProperty: true })
  || el.getClientRects().length === 0;
for (const el of document.querySelectorAll("body *")) {
  const text = [...el.childNodes].some((n) => n.nodeType === Node.TEXT_NODE && n.nodeValue.trim() !== "");
  if (!text || hidden(el)) continue;
  const style = getComputedStyle(el);
  const ink = parse(el instanceof SVGElement ? style.fill : style.color);
  if (!ink) continue;
  const size = parseFloat(style.fontSize), bold = Number(style.fontWeight) >= 700;
  const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
  const got = ratio(ink, background(el));
  if (got < need) failures.push(`${el.tagName.toLowerCase()}.${el.getAttribute("class") || ""} "${el.textContent.trim().slice(0, 40)}": ${got.toFixed(2)} < ${need}`);
}
for (const line of document.querySelectorAll(".chart .line, .chart .bar")) {
  if (line.closest("svg.key") || hidden(line)) continue;
  const style = getComputedStyle(line);
  const ink = parse(line.tagName === "rect" ? style.fill : style.stroke);
  const got = ratio(ink, background(line.ownerSVGElement));
  if (got < 3) failures.push(`${line.tagName} ${line.getAttribute("class")}: ${got.toFixed(2)} < 3`);
}
return failures;
"#;
