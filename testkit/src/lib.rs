//! The test kit every crate's integration tests share (a dev-dependency only): where the test
//! stores are, a fresh Redis namespace per test, serving a router with the production HTTP server
//! (`aqs_http::serve_http`, so tests exercise what runs in production), and waiting on a
//! condition instead of sleeping for a fixed time; holding an OpenAPI document against the routes
//! a router serves ([`openapi`]); a DNS server the test controls ([`dns`]); with the `browser`
//! feature, headless Chromium ([`browser`]).

#[cfg(feature = "browser")]
pub mod browser;
pub mod dns;
pub mod openapi;

use axum::Router;
use std::future::Future;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The password every test member signs up with.
pub const PASSWORD: &str = "correct horse battery";

/// The shared test Redis (`AQS_TEST_REDIS_URL`). Tests never flush it: each uses its own namespace.
pub fn redis_url() -> String {
    std::env::var("AQS_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// The test PostgreSQL server (`AQS_TEST_DATABASE_URL`), for tests that make their own database.
pub fn database_url() -> String {
    std::env::var("AQS_TEST_DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// A Redis namespace no other test uses.
pub fn namespace() -> String {
    format!("t{:016x}", rand::random::<u64>())
}

/// A port nothing listens on (it was free a moment ago): a store that is down.
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local address").port()
}

/// Serves `app` on 127.0.0.1:0 with the production HTTP server until `shutdown` is cancelled;
/// returns its base URL.
pub async fn serve(app: Router, shutdown: CancellationToken) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let base = format!("http://{}", listener.local_addr().expect("local address"));
    tokio::spawn(aqs_http::serve_http(listener, app, shutdown.cancelled_owned(), CancellationToken::new()));
    base
}

/// How long [`eventually`] waits before it fails the test: far beyond what any condition takes.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Waits until `check` holds, looking every few milliseconds; fails the test, naming `what`,
/// if it does not within [`PATIENCE`]. Not a timing assertion: only a bound on a hang.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + PATIENCE;
    while !check().await {
        assert!(Instant::now() < deadline, "still not true after {PATIENCE:?}: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until `check` answers `Some`, and returns what it answered; fails the test, naming
/// `what`, if it does not within [`PATIENCE`]. [`eventually`] for a wait that yields a value (the
/// answer that finally came, the process's state once it changed).
pub async fn eventually_some<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < deadline, "still not true after {PATIENCE:?}: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A name no other test uses: `prefix` and 32 random hex characters, for databases, folders and
/// emails (lower case, so it is a valid PostgreSQL name as it is).
pub fn unique(prefix: &str) -> String {
    format!("{prefix}{:032x}", rand::random::<u128>())
}

/// Signs a member up at `base` (any process serving `/api/v1`) with [`PASSWORD`] and returns the
/// answer, `{member, session}`; fails the test unless it is a 201.
pub async fn sign_up(http: &reqwest::Client, base: &str, email: &str) -> serde_json::Value {
    let response = http
        .post(format!("{base}/api/v1/auth/signup"))
        .json(&serde_json::json!({"email": email, "password": PASSWORD}))
        .send()
        .await
        .expect("POST /api/v1/auth/signup");
    assert_eq!(response.status(), 201, "sign-up of {email}");
    response.json().await.expect("the sign-up answers JSON")
}
