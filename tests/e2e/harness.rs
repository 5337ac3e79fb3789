//! The end-to-end harness: real `aqs` processes, a real Redis process the test owns (so it can be
//! killed and restarted) and a fresh PostgreSQL database per test on the server the test command
//! started (`AQS_TEST_DATABASE_URL`).

use aqs_client::{ConsumeRequest, NewMessage};
use base64::Engine;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port nothing listens on, for a process to bind.
pub use aqs_testkit::closed_port as free_port;
pub use aqs_testkit::{sign_up, unique};

/// A Redis server owned by one test.
pub struct Redis {
    pub port: u16,
    dir: PathBuf,
    appendfsync: &'static str,
    extra: Vec<String>,
    child: Option<Child>,
}

impl Redis {
    /// A durable Redis: AOF with the given fsync policy, noeviction.
    pub fn start(appendfsync: &'static str) -> Self {
        Self::start_with(appendfsync, &[])
    }

    pub fn start_with(appendfsync: &'static str, extra: &[&str]) -> Self {
        // A port found free can be taken before redis-server binds it (ephemeral ports of outgoing
        // connections come from the same range): it then exits at once, and another is tried.
        Self::start_on_first_free(appendfsync, extra, std::iter::repeat_with(free_port).take(4))
    }

    /// Starts on the first of `ports` that redis-server manages to bind.
    pub fn start_on_first_free(
        appendfsync: &'static str,
        extra: &[&str],
        ports: impl IntoIterator<Item = u16>,
    ) -> Self {
        let dir = std::env::temp_dir().join(unique("aqs-e2e-redis-"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut redis =
            Self { port: 0, dir, appendfsync, extra: extra.iter().map(|s| s.to_string()).collect(), child: None };
        for port in ports {
            redis.port = port;
            // Another process may have taken the port and answered the connection check while
            // this redis-server was failing to bind it: then it has exited, and the next is tried.
            if redis.try_spawn(&[]) && redis.wait_ready() {
                return redis;
            }
        }
        panic!("redis-server exited at start on every port");
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Spawns the server with its settings plus `extra`, and waits until it accepts connections.
    fn spawn(&mut self, extra: &[&str]) {
        assert!(self.try_spawn(extra), "redis-server exited at start (port {})", self.port);
    }

    /// [`Redis::spawn`], answering false when the server exited before it accepted connections.
    fn try_spawn(&mut self, extra: &[&str]) -> bool {
        let mut cmd = Command::new("redis-server");
        cmd.args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .arg("--dir")
            .arg(&self.dir)
            .args(["--appendonly", "yes", "--appendfsync", self.appendfsync])
            .args(["--maxmemory-policy", "noeviction", "--save", ""])
            .args(&self.extra)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = self.child.insert(cmd.spawn().expect("redis-server must be installed (infra/test installs it)"));
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(_)) = child.try_wait() {
                self.child = None;
                return false;
            }
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return true;
            }
            assert!(Instant::now() < deadline, "redis did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn restart(&mut self) {
        self.spawn(&[]);
        assert!(self.wait_ready(), "redis-server exited after its restart (port {})", self.port);
    }

    /// Waits until the AOF is loaded and the server answers; false when it exited first, or another
    /// server answers on its port.
    fn wait_ready(&mut self) -> bool {
        let client = redis::Client::open(self.url()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            // PING answers LOADING until the AOF is loaded; INFO would answer at once.
            if let Ok(mut conn) = client.get_connection()
                && redis::cmd("PING").query::<String>(&mut conn).is_ok()
                && let Ok(info) = redis::cmd("INFO").arg("server").query::<String>(&mut conn)
            {
                // The server that answers is this one only if its process id says so.
                let ours = self.child.as_ref().map(|child| format!("process_id:{}\r", child.id()));
                if ours.is_some_and(|line| info.contains(&line)) {
                    return true;
                }
                if let Some(mut child) = self.child.take() {
                    child.kill().ok();
                    child.wait().ok();
                }
                return false;
            }
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(_)) = child.try_wait()
            {
                self.child = None;
                return false;
            }
            assert!(Instant::now() < deadline, "redis did not answer PING (port {})", self.port);
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    /// Starts the server again with `extra` settings for this start only, returning as soon as it
    /// accepts connections: while it loads its AOF it answers LOADING to every command.
    pub fn restart_loading(&mut self, extra: &[&str]) {
        self.spawn(extra);
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill9();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `aqs serve` on `port` with exactly these settings (nothing inherited from the `AQS_…`
/// environment), its standard output going to `stdout`.
pub fn serve_alone<K: AsRef<std::ffi::OsStr>, V: AsRef<std::ffi::OsStr>>(
    port: u16,
    envs: impl IntoIterator<Item = (K, V)>,
    stdout: Stdio,
) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_aqs"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("AQS_")) {
        cmd.env_remove(key);
    }
    cmd.arg("serve").env("AQS_HTTP_ADDR", format!("127.0.0.1:{port}")).env("AQS_LOG", "warn");
    cmd.envs(envs).stdin(Stdio::null()).stdout(stdout).spawn().unwrap()
}

/// Waits until `child` answers `request` with a status `accepted` takes (`Ok`), or exits (`Err`,
/// how). Each request is bounded: whatever holds the port may accept and never answer.
pub async fn answered_or_exited(
    child: &mut Child,
    what: &str,
    request: impl Fn() -> reqwest::RequestBuilder,
    accepted: impl Fn(reqwest::StatusCode) -> bool,
) -> Result<(), std::process::ExitStatus> {
    let accepted = &accepted;
    aqs_testkit::eventually_some(what, || {
        let exited = child.try_wait().ok().flatten();
        let sent = exited.is_none().then(|| request().timeout(Duration::from_secs(2)).send());
        async move {
            match (exited, sent) {
                (Some(status), _) => Some(Err(status)),
                (None, Some(sent)) => sent.await.is_ok_and(|response| accepted(response.status())).then_some(Ok(())),
                (None, None) => None,
            }
        }
    })
    .await
}

/// A fresh database on the test PostgreSQL server, migrated by `aqs migrate`.
pub async fn fresh_database() -> String {
    let base = aqs_testkit::database_url();
    let name = unique("aqs_e2e_");
    let pool = sqlx::PgPool::connect(&base).await.expect("AQS_TEST_DATABASE_URL must reach PostgreSQL");
    sqlx::query(&format!("CREATE DATABASE {name}")).execute(&pool).await.unwrap();
    pool.close().await;
    let (server, _) = base.rsplit_once('/').unwrap();
    format!("{server}/{name}")
}

/// One `aqs serve` process.
pub struct Server {
    pub port: u16,
    env: Vec<(String, String)>,
    child: Option<Child>,
}

impl Server {
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The process id of the running `aqs serve`.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the server is running").id()
    }

    pub async fn start(database_url: &str, redis_url: &str, namespace: &str) -> Self {
        Self::start_with_env(database_url, redis_url, namespace, &[]).await
    }

    /// `start` with further `AQS_…` settings (they override the defaults of `migrated`, and are kept for
    /// `restart`), e.g. `AQS_PUSH_ALLOW_PRIVATE_NETWORKS=true` for handlers on loopback.
    pub async fn start_with_env(database_url: &str, redis_url: &str, namespace: &str, extra: &[(&str, &str)]) -> Self {
        // A port found free can be taken before `aqs serve` binds it (by any process's outgoing
        // connection: ephemeral ports come from the same range), and then it exits at once: such
        // a start is tried again on another port.
        let ports = std::iter::repeat_with(free_port).take(4);
        Self::start_on_first_free(ports, database_url, redis_url, namespace, extra).await
    }

    /// Starts on the first of `ports` that `aqs serve` manages to bind.
    pub async fn start_on_first_free(
        ports: impl IntoIterator<Item = u16>,
        database_url: &str,
        redis_url: &str,
        namespace: &str,
        extra: &[(&str, &str)],
    ) -> Self {
        let mut tried = Vec::new();
        for port in ports {
            let mut server = Self::migrated(port, database_url, redis_url, namespace, extra);
            match server.try_restart().await {
                Ok(()) => return server,
                Err(status) => tried.push((port, status)),
            }
        }
        panic!("aqs serve exited early on every port: {tried:?}");
    }

    /// `start_with_env` on a given port (a test ACME server must know it before the server starts).
    pub async fn start_on(
        port: u16,
        database_url: &str,
        redis_url: &str,
        namespace: &str,
        extra: &[(&str, &str)],
    ) -> Self {
        let mut server = Self::migrated(port, database_url, redis_url, namespace, extra);
        server.restart().await;
        server
    }

    /// The settings of a server on `port`, its database migrated, not started yet.
    fn migrated(port: u16, database_url: &str, redis_url: &str, namespace: &str, extra: &[(&str, &str)]) -> Self {
        let mut env = vec![
            ("AQS_HTTP_ADDR".to_owned(), format!("127.0.0.1:{port}")),
            ("AQS_DATABASE_URL".to_owned(), database_url.to_owned()),
            ("AQS_REDIS_URL".to_owned(), redis_url.to_owned()),
            ("AQS_REDIS_NAMESPACE".to_owned(), namespace.to_owned()),
            ("AQS_SESSION_SECRET".to_owned(), "e2e-session-secret-0123456789abcdefgh".to_owned()),
            ("AQS_RECEIPT_SECRET".to_owned(), "e2e-receipt-secret-0123456789abcdefgh".to_owned()),
            ("AQS_LOG".to_owned(), "warn".to_owned()),
        ];
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let status = Command::new(env!("CARGO_BIN_EXE_aqs")).arg("migrate").envs(env.iter().cloned()).status().unwrap();
        assert!(status.success(), "aqs migrate failed");
        Self { port, env, child: None }
    }

    /// Runs `aqs serve` with this server's settings and waits until it is healthy.
    pub async fn restart(&mut self) {
        if let Err(status) = self.try_restart().await {
            panic!("aqs serve exited early: {status}");
        }
    }

    /// [`Server::restart`], answering how `aqs serve` exited when it stopped before it was healthy.
    async fn try_restart(&mut self) -> Result<(), std::process::ExitStatus> {
        let child =
            Command::new(env!("CARGO_BIN_EXE_aqs")).arg("serve").envs(self.env.iter().cloned()).spawn().unwrap();
        let http = reqwest::Client::new();
        let health = format!("{}/queue/v1/health", self.base());
        // Kept in `self` while it is waited for: a test that fails here still kills it on drop.
        let child = self.child.insert(child);
        let started =
            answered_or_exited(child, "aqs serve answers /queue/v1/health", || http.get(&health), |s| s.is_success())
                .await;
        if started.is_err() {
            self.child = None;
        }
        started
    }

    /// Starts `aqs serve` expecting it to refuse to run; returns its stderr.
    pub fn start_expecting_failure(database_url: &str, redis_url: &str) -> String {
        let output = Command::new(env!("CARGO_BIN_EXE_aqs"))
            .arg("serve")
            .env("AQS_HTTP_ADDR", format!("127.0.0.1:{}", free_port()))
            .env("AQS_DATABASE_URL", database_url)
            .env("AQS_REDIS_URL", redis_url)
            .env("AQS_REDIS_NAMESPACE", aqs_testkit::namespace())
            .env("AQS_SESSION_SECRET", "e2e-session-secret-0123456789abcdefgh")
            .env("AQS_RECEIPT_SECRET", "e2e-receipt-secret-0123456789abcdefgh")
            .output()
            .unwrap();
        assert!(!output.status.success(), "aqs serve should have refused to start");
        String::from_utf8_lossy(&output.stderr).into_owned() + &String::from_utf8_lossy(&output.stdout)
    }

    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    /// Waits for the process to exit by itself (after a signal) and returns how it ended.
    pub fn wait_for_exit(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + timeout;
        let child = self.child.as_mut().expect("the server is running");
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                self.child = None;
                return status;
            }
            assert!(Instant::now() < deadline, "aqs serve did not exit within {timeout:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Changes one setting for the next `restart`.
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_owned(), value.to_owned()));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// GETs `url` with a bearer credential (a session or a queue token) and returns the JSON answer.
pub async fn get_json(http: &reqwest::Client, url: &str, bearer: &str) -> Value {
    http.get(url).bearer_auth(bearer).send().await.unwrap().json().await.unwrap()
}

/// A member with one queue, talking HTTP to a server.
pub struct Tenant {
    pub http: reqwest::Client,
    pub base: String,
    pub session: String,
    pub slug: String,
    /// The queue's id (its Redis keys carry `{q:<id>}`).
    pub id: String,
    pub token: String,
    /// The queue through `aqs-client`, without retries: tests see every answer as the server gave it.
    pub queue: aqs_client::Queue,
}

impl Tenant {
    pub async fn sign_up(server: &Server, queue: Value) -> Self {
        let http = reqwest::Client::new();
        let base = server.base();
        let signup = sign_up(&http, &base, &format!("{}@example.com", unique("m"))).await;
        let session = signup["session"].as_str().expect("signup returns a session").to_owned();
        // A 503 (a replica that did not confirm in time, on a loaded machine) is retried, as the
        // API asks of its clients.
        let mut tries = 0;
        let created = loop {
            tries += 1;
            let response =
                http.post(format!("{base}/api/v1/queues")).bearer_auth(&session).json(&queue).send().await.unwrap();
            let status = response.status();
            let created: Value = response.json().await.unwrap_or_default();
            if created["queue"]["slug"].is_string() {
                break created;
            }
            assert!(status == 503 && tries < 5, "creating the queue answered {status} {created}");
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        let slug = created["queue"]["slug"].as_str().expect("queue.slug").to_owned();
        let id = created["queue"]["id"].as_str().expect("queue.id").to_owned();
        let token = created["token"]["secret"].as_str().expect("token.secret").to_owned();
        let queue = aqs_client::Client::builder(&base, &token).max_retries(0).build().queue(&slug);
        Self { slug, id, token, queue, http, base, session }
    }

    /// A raw POST to one of the queue's routes, for input the typed client would not send.
    pub async fn post(&self, route: &str, body: Value) -> (u16, Value) {
        let response = self
            .http
            .post(format!("{}/queue/v1/{}/{route}", self.base, self.slug))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// Publishes `body` as JSON text (the API's default type): the status and the answer (the
    /// error envelope for a refusal).
    pub async fn publish(&self, body: &str) -> (u16, Value) {
        match self.queue.publish(NewMessage::raw_json(body)).await {
            Ok(published) => {
                let status = if published.duplicate { 200 } else { 201 };
                (status, serde_json::to_value(published).unwrap())
            }
            Err(aqs_client::Error::Api { code, status, message, .. }) => {
                (status, json!({"error": code.as_str(), "message": message}))
            }
            Err(err) => panic!("publish: {err}"),
        }
    }

    /// Consumes up to `max` messages: (id, body, receipt, attempts).
    pub async fn consume(&self, max: u32, wait: u32, visibility: u32) -> Vec<(String, String, String, u64)> {
        let request =
            ConsumeRequest { max_messages: max, max_wait_seconds: wait, visibility_seconds: Some(visibility) };
        let delivered = self.queue.consume(&request).await.unwrap_or_else(|err| panic!("consume: {err}"));
        delivered
            .into_iter()
            .map(|m| {
                let bytes = base64::engine::general_purpose::STANDARD.decode(&m.body_base64).unwrap();
                (m.id, String::from_utf8(bytes).unwrap(), m.receipt, u64::from(m.attempts))
            })
            .collect()
    }

    pub async fn ack(&self, receipts: &[String]) -> Value {
        let acked = self.queue.ack(receipts).await.unwrap_or_else(|err| panic!("ack: {err}"));
        serde_json::to_value(acked).unwrap()
    }
}
