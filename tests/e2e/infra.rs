//! The shell pieces `infra/up` is made of, run for real: a private PostgreSQL for a state folder
//! only root can enter (as `mktemp -d` makes them), and the health wait that fails loudly, with the
//! server log's tail, instead of going on.

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output};

/// Runs `script` with infra/lib.sh sourced, from the repository root, with `args` as $1….
fn with_lib(script: &str, args: &[&str]) -> Output {
    let script = format!("set -euo pipefail; source infra/lib.sh; {script}");
    Command::new("bash")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("-c")
        .arg(script)
        .arg("lib")
        .args(args)
        .output()
        .unwrap()
}

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
}

#[test]
fn postgres_starts_for_a_state_folder_only_root_can_enter() {
    let state = std::env::temp_dir().join(format!("aqs-e2e-state-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    let dir = state.join("postgres");
    let dir = dir.to_str().unwrap();
    let output = with_lib(
        r#"start_postgres "$1"; echo "home=$PG_HOME"
        "$(pg_bin)/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -qtAc "SELECT datname FROM pg_database WHERE datname='aqs'"
        stop_postgres "$1""#,
        &[dir],
    );
    let said = text(&output);
    let home = said.lines().find_map(|l| l.strip_prefix("home=")).map(str::to_owned);
    if let Some(home) = home.as_deref().filter(|h| h.starts_with("/var/lib/aqs/")) {
        std::fs::remove_dir_all(home).unwrap();
    }
    std::fs::remove_dir_all(&state).unwrap();
    assert!(output.status.success(), "{said}");
    assert!(said.lines().any(|l| l == "aqs"), "the aqs database exists: {said}");
}

#[test]
fn the_health_wait_fails_loudly_with_the_log_tail() {
    let dir = std::env::temp_dir().join(format!("aqs-e2e-health-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir(&dir).unwrap();
    let log = dir.join("aqs.log");
    std::fs::write(&log, "starting\nthe last words of the server\n").unwrap();
    let log = log.to_str().unwrap();
    // Nothing listens on the URL's port: a live process that never answers…
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let url = format!("http://127.0.0.1:{port}/queue/v1/health");
    let output = with_lib(r#"sleep 5 & pid=$!; wait_for_health "$1" "$pid" "$2" 1"#, &[&url, log]);
    let said = text(&output);
    assert!(!output.status.success(), "{said}");
    assert!(said.contains("did not answer") && said.contains("the last words of the server"), "{said}");
    // …and a process that already exited.
    let output = with_lib(r#"true & pid=$!; wait "$pid"; wait_for_health "$1" "$pid" "$2" 30"#, &[&url, log]);
    let said = text(&output);
    assert!(!output.status.success(), "{said}");
    assert!(said.contains("exited before") && said.contains("the last words of the server"), "{said}");
    std::fs::remove_dir_all(&dir).unwrap();
}
