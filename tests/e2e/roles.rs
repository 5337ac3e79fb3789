//! Each role gets what it uses: a data-plane process needs no session secret and no PostgreSQL;
//! a console-only process reads PostgreSQL and Redis but neither re-syncs the projection (the
//! control role's duty) nor asks for the receipt secret.

use crate::harness::{Redis, answered_or_exited, free_port, fresh_database};
use std::process::{Child, Command, Stdio};

/// `aqs serve` with exactly these settings (nothing inherited from the `AQS_…` environment), once
/// it answers the request `request` builds for its base URL with `status`. A port found free can
/// be taken before `aqs serve` binds it (ephemeral ports of any process's outgoing connections come
/// from the same range), and then it exits at once: such a start is tried again on another port.
async fn serve_until(envs: &[(&str, &str)], request: impl Fn(&str) -> reqwest::RequestBuilder, status: u16) -> Stop {
    let mut exits = Vec::new();
    for port in std::iter::repeat_with(free_port).take(4) {
        let mut child = Stop(crate::harness::serve_alone(port, envs.iter().copied(), Stdio::inherit()));
        let base = format!("http://127.0.0.1:{port}");
        let what = format!("an answer {status} or an exit");
        let answered =
            answered_or_exited(&mut child.0, &what, || request(&base), |answer| answer.as_u16() == status).await;
        match answered {
            Ok(()) => return child,
            Err(exit) => exits.push((port, exit)),
        }
    }
    panic!("aqs serve exited on every port it was given: {exits:?}");
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
    let envs = [
        ("AQS_ROLES", "data"),
        ("AQS_REDIS_URL", &redis.url()),
        ("AQS_RECEIPT_SECRET", "roles-receipt-secret-0123456789abcdefgh"),
    ];
    // Served with neither PostgreSQL nor the session secret: it would have exited without them.
    serve_until(&envs, |base| reqwest::Client::new().get(format!("{base}/queue/v1/health")), 200).await;
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

    let common = [
        ("AQS_REDIS_URL", redis.url()),
        ("AQS_DATABASE_URL", database.clone()),
        ("AQS_REDIS_NAMESPACE", namespace.clone()),
        ("AQS_SESSION_SECRET", "roles-session-secret-0123456789abcdefgh".to_owned()),
    ];
    let mut envs: Vec<(&str, &str)> = common.iter().map(|(k, v)| (*k, v.as_str())).collect();
    envs.push(("AQS_ROLES", "console"));
    // Served once PostgreSQL was reached; no receipt secret was needed.
    let console = serve_until(&envs, |base| reqwest::Client::new().get(format!("{base}/login")), 200).await;
    let exists: bool = redis::cmd("EXISTS").arg(&stale).query(&mut conn).unwrap();
    assert!(exists, "the console-only process left the projection alone");
    drop(console);

    // The control role does re-sync it before serving.
    envs.pop();
    envs.push(("AQS_ROLES", "control"));
    // Before PostgreSQL is reached (and the projection re-synced) this is a 503; then 400.
    let signup =
        |base: &str| reqwest::Client::new().post(format!("{base}/api/v1/auth/signup")).json(&serde_json::json!({}));
    let _control = serve_until(&envs, signup, 400).await;
    let exists: bool = redis::cmd("EXISTS").arg(&stale).query(&mut conn).unwrap();
    assert!(!exists, "the control role's start-up re-sync removed the stale slug");
}
