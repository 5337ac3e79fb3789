//! Each role gets what it uses: a data-plane process needs no session secret and no PostgreSQL;
//! a console-only process reads PostgreSQL and Redis but neither re-syncs the projection (the
//! control role's duty) nor asks for the receipt secret.

use crate::harness::{Redis, free_port, fresh_database};
use std::process::{Child, Command, Stdio};

/// `aqs serve` with exactly these settings (nothing inherited from the `AQS_…` environment).
fn serve(port: u16, envs: &[(&str, &str)]) -> Child {
    crate::harness::serve_alone(port, envs.iter().copied(), Stdio::inherit())
}

/// Waits until `request` is answered with `status`; fails if the process exits first.
async fn until_status(request: impl Fn() -> reqwest::RequestBuilder, status: u16, child: &mut Child) {
    aqs_testkit::eventually(&format!("an answer {status}"), || {
        assert!(child.try_wait().unwrap().is_none(), "aqs serve exited");
        let sent = request().send();
        async move { matches!(sent.await, Ok(r) if r.status().as_u16() == status) }
    })
    .await;
}

struct Stop(Child);

impl Drop for Stop {
    fn drop(&mut self) {
        let _killed = self.0.kill();
        let _reaped = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_role_runs_without_postgres_or_the_session_secret() {
    let redis = Redis::start("everysec");
    let port = free_port();
    let child = serve(
        port,
        &[
            ("AQS_ROLES", "data"),
            ("AQS_REDIS_URL", &redis.url()),
            ("AQS_RECEIPT_SECRET", "roles-receipt-secret-0123456789abcdefgh"),
        ],
    );
    let mut child = Stop(child);
    let health = format!("http://127.0.0.1:{port}/queue/v1/health");
    until_status(|| reqwest::Client::new().get(&health), 200, &mut child.0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_only_process_does_not_resync_the_projection() {
    let redis = Redis::start("everysec");
    let database = fresh_database().await;
    let migrated = Command::new(env!("CARGO_BIN_EXE_aqs"))
        .arg("migrate")
        .env("AQS_DATABASE_URL", &database)
        .env("AQS_REDIS_URL", redis.url())
        .status()
        .unwrap();
    assert!(migrated.success());
    // A slug record PostgreSQL does not back: a control-plane start-up removes it.
    let namespace = aqs_testkit::namespace();
    let stale = format!("{namespace}:slug:gone-queue");
    let mut conn = redis::Client::open(redis.url()).unwrap().get_connection().unwrap();
    redis::cmd("SET").arg(&stale).arg("00000000000000000000000000000000").query::<()>(&mut conn).unwrap();

    let port = free_port();
    let common = [
        ("AQS_REDIS_URL", redis.url()),
        ("AQS_DATABASE_URL", database.clone()),
        ("AQS_REDIS_NAMESPACE", namespace.clone()),
        ("AQS_SESSION_SECRET", "roles-session-secret-0123456789abcdefgh".to_owned()),
    ];
    let mut envs: Vec<(&str, &str)> = common.iter().map(|(k, v)| (*k, v.as_str())).collect();
    envs.push(("AQS_ROLES", "console"));
    let mut console = Stop(serve(port, &envs));
    // Served once PostgreSQL was reached; no receipt secret was needed.
    let login = format!("http://127.0.0.1:{port}/login");
    until_status(|| reqwest::Client::new().get(&login), 200, &mut console.0).await;
    let exists: bool = redis::cmd("EXISTS").arg(&stale).query(&mut conn).unwrap();
    assert!(exists, "the console-only process left the projection alone");
    drop(console);

    // The control role does re-sync it before serving.
    let port = free_port();
    envs.pop();
    envs.push(("AQS_ROLES", "control"));
    let mut control = Stop(serve(port, &envs));
    let signup = format!("http://127.0.0.1:{port}/api/v1/auth/signup");
    // Before PostgreSQL is reached (and the projection re-synced) this is a 503; then 400.
    until_status(|| reqwest::Client::new().post(&signup).json(&serde_json::json!({})), 400, &mut control.0).await;
    let exists: bool = redis::cmd("EXISTS").arg(&stale).query(&mut conn).unwrap();
    assert!(!exists, "the control role's start-up re-sync removed the stale slug");
}
