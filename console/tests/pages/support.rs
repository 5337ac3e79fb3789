//! `spawn_console`: the console router over the test's database and a unique Redis namespace (with
//! `spawn_console_delivering`, also the data plane's background tasks, push dispatchers included),
//! and `Visitor`, a cookie-keeping client that reads the CSRF token off each page like a browser.

use aqs_control_plane::{ControlPlane, Queue, queues};
use aqs_core::config::Config;
use aqs_core::receipt::Receipt;
use aqs_core::redis_conn;
use aqs_core::time::now_ms;
use aqs_data_plane::DataPlane;
use aqs_engine::{ConsumeOutcome, Engine, NewMessage};
use reqwest::header::{HeaderMap, LOCATION, SET_COOKIE};
use sqlx::PgPool;

pub use aqs_testkit::{PASSWORD, redis_url};
/// Signing up with this email makes an operator (`AQS_OPERATOR_EMAILS`).
pub const OPERATOR: &str = "operator@example.com";

pub struct TestConsole {
    pub base: String,
    pub cp: ControlPlane,
    pub engine: Engine,
    /// The data plane over the same engine, its queue API served at `api` (`/queue/v1`).
    pub data: DataPlane,
    pub api: String,
}

pub async fn spawn_console(db: PgPool) -> TestConsole {
    spawn(db, false).await
}

/// With the sweeper, the wake-up subscriber and the push supervisor running, so that a queue with
/// a push target really calls its handler (private addresses are allowed in tests).
pub async fn spawn_console_delivering(db: PgPool) -> TestConsole {
    spawn(db, true).await
}

/// With its DNS checks (domains, custom hosts) asking `dns_servers` (`ip:port`).
pub async fn spawn_console_with_dns(db: PgPool, dns_servers: &str) -> TestConsole {
    let dns_server = dns_servers.parse().expect("ip:port");
    spawn_adjusted(db, false, move |config| config.dns_servers = vec![dns_server]).await
}

/// With settings changed by `adjust` (billing's Stripe settings, say).
pub async fn spawn_console_with(db: PgPool, adjust: impl FnOnce(&mut Config)) -> TestConsole {
    spawn_adjusted(db, false, adjust).await
}

async fn spawn(db: PgPool, background: bool) -> TestConsole {
    spawn_adjusted(db, background, |_| {}).await
}

async fn spawn_adjusted(db: PgPool, background: bool, adjust: impl FnOnce(&mut Config)) -> TestConsole {
    let namespace = aqs_testkit::namespace();
    let mut config = Config::for_tests("", &redis_url(), &namespace);
    config.operator_emails = vec![OPERATOR.into()];
    adjust(&mut config);
    let redis = redis_conn::connect(&config.redis_urls()).await.expect("test Redis");
    // One engine shared by every role, as `aqs serve` builds it.
    let engine = Engine::loaded(redis, &config).await.expect("engine");
    let cp = ControlPlane::new(&config, db, engine.clone()).await.expect("control plane");
    let dp = DataPlane::new(&config, engine.clone());
    if background {
        aqs_data_plane::spawn_background(&dp, tokio_util::sync::CancellationToken::new());
    }
    let app = aqs_console::router(&config, cp.clone(), engine.clone());
    let base = aqs_testkit::serve(app, tokio_util::sync::CancellationToken::new()).await;
    let api = aqs_testkit::serve(aqs_data_plane::router(dp.clone()), tokio_util::sync::CancellationToken::new()).await;
    TestConsole { base, cp, engine, data: dp, api }
}

/// A response, with the body read.
#[derive(Debug)]
pub struct Page {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: String,
}

impl Page {
    pub fn location(&self) -> &str {
        self.headers.get(LOCATION).and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    /// The `Set-Cookie` line for `name`, if the response sets it.
    pub fn set_cookie(&self, name: &str) -> Option<String> {
        self.headers
            .get_all(SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|line| line.starts_with(&format!("{name}=")))
            .map(str::to_owned)
    }

    /// The value of the first `<input>`-style attribute pair `name="{name}" value="…"`.
    pub fn input_value(&self, name: &str) -> Option<String> {
        Self::input_value_in(&self.body, name)
    }

    /// The same, in a part of a page (e.g. after one form's opening tag).
    pub fn input_value_in(html: &str, name: &str) -> Option<String> {
        let marker = format!("name=\"{name}\" value=\"");
        let start = html.find(&marker)? + marker.len();
        let end = html[start..].find('"')?;
        Some(html[start..start + end].to_owned())
    }

    /// The token secret shown once after creating a queue or a token.
    pub fn secret(&self) -> Option<String> {
        let at = self.body.find("id=\"token-secret\"")?;
        let start = at + self.body[at..].find('>')? + 1;
        let end = self.body[start..].find("</textarea>")?;
        Some(self.body[start..start + end].to_owned())
    }

    /// The push signing secret shown once after turning push on or rotating.
    pub fn signing_secret(&self) -> Option<String> {
        let marker = "id=\"signing-secret\" type=\"text\" readonly value=\"";
        let start = self.body.find(marker)? + marker.len();
        let end = self.body[start..].find('"')?;
        Some(self.body[start..start + end].to_owned())
    }

    /// The text of the element with this id (up to the next tag).
    pub fn text_of(&self, id: &str) -> Option<String> {
        let marker = format!("id=\"{id}\"");
        let at = self.body.find(&marker)?;
        let start = at + self.body[at..].find('>')? + 1;
        let end = self.body[start..].find('<')?;
        Some(self.body[start..start + end].trim().to_owned())
    }

    #[track_caller]
    pub fn assert_contains(&self, text: &str) {
        assert!(self.body.contains(text), "the page (status {}) lacks {text:?}:\n{}", self.status, self.body);
    }

    #[track_caller]
    pub fn assert_lacks(&self, text: &str) {
        assert!(!self.body.contains(text), "the page (status {}) has {text:?}:\n{}", self.status, self.body);
    }
}

/// A part of a multipart form: a text field, or a file input (an empty `file_name` and no bytes
/// is how a browser sends one left empty).
#[derive(Clone, Copy)]
pub enum Part<'a> {
    Text(&'a str, &'a str),
    File { name: &'a str, file_name: &'a str, content_type: Option<&'a str>, bytes: &'a [u8] },
}

impl Part<'_> {
    fn name(&self) -> &str {
        match self {
            Part::Text(name, _) | Part::File { name, .. } => name,
        }
    }
}

/// One browser: its cookies and the CSRF token of the last page it saw. A clone sends what this
/// browser would (its session, its tokens) for a request made beside it, such as the second of
/// two clicks; it keeps the cookies it is given from then on to itself.
#[derive(Clone)]
pub struct Visitor {
    base: String,
    http: reqwest::Client,
    cookies: Vec<(String, String)>,
    pub csrf: Option<String>,
    /// The one-time form id of the last page's form, sent with the next POST like a browser would.
    pub form_id: Option<String>,
    /// Extra headers on every request (e.g. `X-Forwarded-Proto`).
    pub headers: HeaderMap,
    /// The email it signed up with.
    pub email: Option<String>,
}

impl Visitor {
    pub fn new(app: &TestConsole) -> Self {
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
        Self {
            base: app.base.clone(),
            http,
            cookies: Vec::new(),
            csrf: None,
            form_id: None,
            headers: HeaderMap::new(),
            email: None,
        }
    }

    pub fn cookie(&self, name: &str) -> Option<&str> {
        self.cookies.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn set_cookie(&mut self, name: &str, value: &str) {
        self.cookies.retain(|(n, _)| n != name);
        self.cookies.push((name.to_owned(), value.to_owned()));
    }

    /// The `Cookie` header's value this browser sends.
    pub fn cookie_line(&self) -> String {
        let pairs: Vec<String> = self.cookies.iter().map(|(n, v)| format!("{n}={v}")).collect();
        pairs.join("; ")
    }

    async fn send(&mut self, request: reqwest::RequestBuilder) -> Page {
        let mut request = request.headers(self.headers.clone());
        if !self.cookies.is_empty() {
            request = request.header("cookie", self.cookie_line());
        }
        let response = request.send().await.expect("request");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        for line in headers.get_all(SET_COOKIE).iter().filter_map(|v| v.to_str().ok()) {
            let pair = line.split(';').next().unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            self.cookies.retain(|(n, _)| n != name);
            if !line.contains("Max-Age=0") {
                self.cookies.push((name.to_owned(), value.to_owned()));
            }
        }
        let body = response.text().await.expect("body");
        let page = Page { status, headers, body };
        if let Some(token) = page.input_value("csrf") {
            self.csrf = Some(token);
        }
        if let Some(id) = page.input_value("form_id") {
            self.form_id = Some(id);
        }
        page
    }

    pub async fn get(&mut self, path: &str) -> Page {
        let request = self.http.get(format!("{}{path}", self.base));
        self.send(request).await
    }

    /// Posts a form with the CSRF token of the last page (unless `fields` has its own).
    pub async fn post(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        let mut pairs: Vec<(String, String)> = fields.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        if !fields.iter().any(|(k, _)| *k == "csrf")
            && let Some(token) = &self.csrf
        {
            pairs.push(("csrf".into(), token.clone()));
        }
        if !fields.iter().any(|(k, _)| *k == "form_id")
            && let Some(id) = &self.form_id
        {
            pairs.push(("form_id".into(), id.clone()));
        }
        let body: String = form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish();
        let request = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        self.send(request).await
    }

    /// Posts a `multipart/form-data` form, as a browser does a form with a file input, with the
    /// CSRF token and form id of the last page (unless `parts` has its own).
    pub async fn post_multipart(&mut self, path: &str, parts: &[Part<'_>]) -> Page {
        const BOUNDARY: &str = "----aqs-test-boundary-5c1e9a";
        let named = |name: &str| parts.iter().any(|p| p.name() == name);
        let mut all: Vec<Part<'_>> = parts.to_vec();
        let csrf = self.csrf.clone().filter(|_| !named("csrf"));
        let form_id = self.form_id.clone().filter(|_| !named("form_id"));
        if let Some(token) = &csrf {
            all.push(Part::Text("csrf", token));
        }
        if let Some(id) = &form_id {
            all.push(Part::Text("form_id", id));
        }
        let mut body = Vec::new();
        for part in &all {
            body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
            match part {
                Part::Text(name, value) => {
                    body.extend_from_slice(
                        format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes(),
                    );
                    body.extend_from_slice(value.as_bytes());
                }
                Part::File { name, file_name, content_type, bytes } => {
                    body.extend_from_slice(
                        format!("Content-Disposition: form-data; name=\"{name}\"; filename=\"{file_name}\"\r\n")
                            .as_bytes(),
                    );
                    if let Some(content_type) = content_type {
                        body.extend_from_slice(format!("Content-Type: {content_type}\r\n").as_bytes());
                    }
                    body.extend_from_slice(b"\r\n");
                    body.extend_from_slice(bytes);
                }
            }
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
        let request = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", format!("multipart/form-data; boundary={BOUNDARY}"))
            .body(body);
        self.send(request).await
    }

    /// Acts on `team` from now on, as the team switcher chooses it (the `aqs_team` cookie).
    pub fn choose_team(&mut self, team: uuid::Uuid) {
        self.set_cookie("aqs_team", &team.to_string());
    }

    /// Follows a redirect with a GET, as a browser does after a 303.
    pub async fn follow(&mut self, page: Page) -> Page {
        assert_eq!(page.status, 303, "expected a redirect, got {}: {}", page.status, page.body);
        let location = page.location().to_owned();
        self.get(&location).await
    }

    /// Signs up through the form and lands on the queue list.
    pub async fn sign_up(&mut self, email: &str) -> Page {
        self.email = Some(email.to_owned());
        self.get("/signup").await;
        let page = self.post("/signup", &[("email", email), ("password", PASSWORD)]).await;
        assert_eq!(page.location(), "/", "{}", page.body);
        self.follow(page).await
    }

    /// Creates a queue through the form and follows its redirect; returns the page that shows
    /// its first token.
    pub async fn create_queue(&mut self, name: &str, attempts: &str) -> Page {
        self.get("/new").await;
        let answer = self
            .post(
                "/new",
                &[
                    ("name", name),
                    ("visibility_timeout_seconds", "30"),
                    ("max_attempts", attempts),
                    ("payload_size", "1048576"),
                    ("intent", "create"),
                ],
            )
            .await;
        assert_eq!(answer.status, 303, "{}", answer.body);
        let page = self.follow(answer).await;
        assert_eq!(page.status, 200, "{}", page.body);
        page
    }
}

/// The id of the member with `email` (and of their personal team: the same).
pub async fn member_id(app: &TestConsole, email: &str) -> uuid::Uuid {
    sqlx::query_scalar("SELECT id FROM members WHERE email = $1").bind(email).fetch_one(app.cp.db()).await.unwrap()
}

/// Puts the member `email` in `team` with `role` ("viewer", "developer", "admin", "owner"), as an
/// accepted invite would.
pub async fn join_team(app: &TestConsole, team: uuid::Uuid, email: &str, role: &str) {
    let member = member_id(app, email).await;
    sqlx::query("INSERT INTO team_members (team_id, member_id, role) VALUES ($1, $2, $3)")
        .bind(team)
        .bind(member)
        .bind(role)
        .execute(app.cp.db())
        .await
        .unwrap();
}

/// The member's queue by slug, through the control plane (for its id).
pub async fn queue_of(app: &TestConsole, email: &str, slug: &str) -> Queue {
    let member = aqs_control_plane::auth::login(
        &app.cp,
        aqs_control_plane::Credentials { email: email.into(), password: PASSWORD.into() },
        aqs_control_plane::client_addr::ClientAddr(None),
    )
    .await
    .expect("login")
    .member;
    queues::get(
        &app.cp,
        aqs_control_plane::TeamId::personal(member.id),
        &aqs_control_plane::slug::Slug::parse(slug).expect("a slug"),
    )
    .await
    .expect("queue")
}

pub async fn publish(app: &TestConsole, queue: &Queue, body: &str, content_type: &str) {
    let message = NewMessage {
        body: body.as_bytes().to_vec(),
        content_type: content_type.into(),
        attributes: String::new(),
        group_id: None,
        idempotency_key: None,
        delay_ms: 0,
    };
    app.engine.publish(queue.id, &[message], now_ms()).await.expect("publish");
}

/// Receives every ready message and returns each with an error: on a queue with one attempt,
/// they all become dead letters with `reason`.
pub async fn fail_all(app: &TestConsole, queue: &Queue, reason: &str) {
    let now = now_ms();
    let receipts = lease(app, queue, 100, now).await;
    app.engine.nack(queue.id, &receipts, 0, reason, now).await.expect("nack");
}

/// Leases up to `max` ready messages at `now` through the engine, answering their receipts.
pub async fn lease(app: &TestConsole, queue: &Queue, max: u32, now: u64) -> Vec<Receipt> {
    let ConsumeOutcome::Delivered { deliveries, .. } = app.engine.consume(queue.id, max, 30_000, now, 0).await.unwrap()
    else {
        panic!("consume did not deliver");
    };
    deliveries.iter().map(|d| d.receipt(queue.id, now + 3_600_000)).collect()
}
