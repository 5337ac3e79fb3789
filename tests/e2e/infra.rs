//! The shell pieces `infra/up` is made of, run for real: a private PostgreSQL for a state folder
//! only root can enter (as `mktemp -d` makes them), the health wait that fails loudly, with the
//! server log's tail, instead of going on, the wait for a busy apt, the choice of listen
//! addresses when a default port is taken, the refusal of a Rust too old for the workspace, and the
//! pieces every script starts and seeds an instance with (`start_aqs`, `api_call`, `json_get`), each
//! dying with a message rather than going on.

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs `script` with infra/lib.sh sourced, from the repository root, with `args` as $1….
fn with_lib(script: &str, args: &[&str]) -> Output {
    with_lib_env(script, args, &[])
}

/// [`with_lib`] with `env` added to the environment.
fn with_lib_env(script: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let script = format!("set -euo pipefail; source infra/lib.sh; {script}");
    Command::new("bash")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .envs(env.iter().copied())
        .arg("-c")
        .arg(script)
        .arg("lib")
        .args(args)
        .output()
        .unwrap()
}

/// A fresh folder under the system's temporary one, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(what: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("aqs-e2e-{what}-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir(&dir).unwrap();
        Self(dir)
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An executable shell script at `path`.
fn script_file(path: &str, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
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

#[test]
fn apt_install_waits_while_another_apt_holds_its_locks_and_says_so() {
    let dir = TempDir::new("apt");
    let (frontend, lists, calls) = (dir.path("lock-frontend"), dir.path("lists-lock"), dir.path("calls"));
    std::fs::write(&frontend, "").unwrap();
    std::fs::write(&lists, "").unwrap();
    // Stands in for apt-get as root: records each call, when it came and its arguments.
    let fake_apt = dir.path("apt-get");
    script_file(&fake_apt, &format!("echo \"$(date +%s.%N) $*\" >> '{calls}'\n"));
    let env = [
        ("AQS_APT_LOCKS", format!("{frontend} {lists}")),
        ("AQS_APT_GET", fake_apt.clone()),
        ("AQS_APT_LOCK_TIMEOUT", "60".to_owned()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let package = "aqs-e2e-no-such-package";

    // Another apt holds the lists lock (as `apt-get update` does) until apt_install has said it
    // waits, then lets go, writing down when just before it does.
    let (released, go, installer_log) = (dir.path("released"), dir.path("go"), dir.path("installer.log"));
    let output = with_lib_env(
        r#"flock "$1" sh -c "until [ -e '$4' ]; do sleep 0.05; done; date +%s.%N > '$3'" & holder=$!
        until [ -n "$(apt_lock_holders)" ]; do sleep 0.05; done
        apt_install "$2" 2>"$5" & installer=$!
        until grep -q "waiting for another" "$5"; do sleep 0.05; done
        touch "$4"; status=0; wait "$installer" || status=$?; wait "$holder"; cat "$5" >&2; exit "$status""#,
        &[&lists, package, &released, &go, &installer_log],
        &env,
    );
    let said = text(&output);
    assert!(output.status.success(), "{said}");
    assert!(said.contains("waiting for another apt/dpkg to finish"), "{said}");
    assert!(said.contains(&format!("holds {lists}")), "it names the lock and its holder: {said}");
    let released_at: f64 = std::fs::read_to_string(&released).unwrap().trim().parse().unwrap();
    let recorded = std::fs::read_to_string(&calls).unwrap();
    let lines: Vec<&str> = recorded.lines().collect();
    assert_eq!(lines.len(), 2, "update, then install: {recorded}");
    assert!(lines[0].contains("-o DPkg::Lock::Timeout=60 update"), "{recorded}");
    assert!(lines[1].contains("-o DPkg::Lock::Timeout=60 install") && lines[1].ends_with(package), "{recorded}");
    let first_call: f64 = lines[0].split(' ').next().unwrap().parse().unwrap();
    assert!(first_call >= released_at, "apt ran only once the lock was free ({released_at} → {first_call}): {said}");

    // With every lock free it goes straight on, without a word about waiting.
    std::fs::remove_file(&calls).unwrap();
    let output = with_lib_env(r#"apt_install "$1""#, &[package], &env);
    let said = text(&output);
    assert!(output.status.success(), "{said}");
    assert!(!said.contains("waiting"), "{said}");
    assert_eq!(std::fs::read_to_string(&calls).unwrap().lines().count(), 2);

    // A lock held past the timeout ends in an error naming it, and apt never runs.
    std::fs::remove_file(&calls).unwrap();
    let env: Vec<(&str, &str)> =
        env.iter().map(|&(k, v)| if k == "AQS_APT_LOCK_TIMEOUT" { (k, "1") } else { (k, v) }).collect();
    let output = with_lib_env(
        r#"(exec 9<>"$1"; flock 9; exec sleep 5) >/dev/null 2>&1 & holder=$!; trap 'kill "$holder"' EXIT
        until [ -n "$(apt_lock_holders)" ]; do sleep 0.05; done; apt_install "$2""#,
        &[&frontend, package],
        &env,
    );
    let said = text(&output);
    assert!(!output.status.success(), "{said}");
    assert!(said.contains("still busy after 1 s") && said.contains(&frontend), "{said}");
    assert!(!std::path::Path::new(&calls).exists(), "apt did not run");
}

#[test]
fn a_taken_default_port_is_replaced_by_a_free_one_and_a_taken_setting_is_refused() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let default = format!("127.0.0.1:{port}");
    let choose =
        r#"unset ADDR; [ "$1" = unset ] || export ADDR=$1; choose_addr ADDR "$2" "the thing"; echo "chosen=$ADDR""#;
    let chosen = |said: &str| said.lines().find_map(|l| l.strip_prefix("chosen=")).map(str::to_owned);

    // Unset and taken: a free port on the same host, said.
    let output = with_lib(choose, &["unset", &default]);
    let said = text(&output);
    assert!(output.status.success(), "{said}");
    let other = chosen(&said).unwrap();
    assert_ne!(other, default);
    assert!(other.starts_with("127.0.0.1:"), "{said}");
    assert!(
        said.contains(&format!("{default} is taken")) && said.contains(&format!("the thing on {other} instead")),
        "{said}"
    );
    TcpListener::bind(&other).expect("the chosen port is free");

    // Unset and free: the default, quietly.
    let free = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let output = with_lib(choose, &["unset", &free]);
    assert!(output.status.success());
    assert_eq!(chosen(&text(&output)).as_deref(), Some(free.as_str()));
    assert!(!text(&output).contains("taken"));

    // Set and taken: an error naming it; set to empty: off.
    let output = with_lib(choose, &[&default, "127.0.0.1:1"]);
    let said = text(&output);
    assert!(!output.status.success(), "{said}");
    assert!(said.contains(&format!("ADDR={default} is already in use")), "{said}");
    let output = with_lib(choose, &["", &default]);
    assert!(output.status.success());
    assert_eq!(chosen(&text(&output)).as_deref(), Some(""));
    drop(taken);
}

#[test]
fn a_rust_older_than_the_workspace_needs_is_refused_with_its_version() {
    let dir = TempDir::new("rustc");
    script_file(
        &dir.path("rustc"),
        "case \"$1\" in -vV) echo 'rustc 1.80.0 (051478957 2024-07-21)'; echo 'host: x86_64-unknown-linux-gnu' ;;\n\
         *) echo 'rustc 1.80.0 (051478957 2024-07-21)' ;; esac\n",
    );
    let path = format!("{}:{}", dir.0.display(), std::env::var("PATH").unwrap());
    let output = with_lib_env("require_rust", &[], &[("PATH", &path)]);
    let said = text(&output);
    assert!(!output.status.success(), "{said}");
    let manifest = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
    let floor = manifest.lines().find_map(|l| l.strip_prefix("rust-version = ")).unwrap().trim_matches('"');
    assert!(said.contains("this workspace needs Rust 1."), "{said}");
    assert!(said.contains("is 1.80.0") && said.contains("rustup update"), "{said}");
    let needed = said.split("needs Rust ").nth(1).unwrap().split(' ').next().unwrap();
    let parts = |v: &str| v.split('.').map(|p| p.parse::<u32>().unwrap()).chain([0, 0]).take(3).collect::<Vec<_>>();
    assert!(parts(needed) >= parts(floor), "at least Cargo.toml's rust-version {floor}: {said}");

    // The Rust running this test passes.
    let output = with_lib("require_rust", &[]);
    assert!(output.status.success(), "{}", text(&output));
}

#[test]
fn json_get_reads_a_dotted_path_and_dies_naming_what_is_missing() {
    let doc = r#"{"queue": {"slug": "image-jobs", "paused": false}, "messages": [{"receipt": "r1"}], "none": null}"#;
    let get = |path: &str| with_lib(r#"json_get "$2" <<<"$1""#, &[doc, path]);
    for (path, value) in [
        ("queue.slug", "image-jobs"),
        ("messages.0.receipt", "r1"),
        ("queue.paused", "false"),
        ("queue", r#"{"slug": "image-jobs", "paused": false}"#),
    ] {
        let output = get(path);
        assert!(output.status.success(), "{path}: {}", text(&output));
        assert_eq!(String::from_utf8_lossy(&output.stdout), format!("{value}\n"), "{path}");
    }
    // A missing key, an index past the end, null, a path through a string: each dies, saying so.
    for path in ["queue.id", "messages.1.receipt", "none", "queue.slug.x"] {
        let output = get(path);
        let said = text(&output);
        assert!(!output.status.success(), "{path}: {said}");
        assert!(said.contains(&format!("no {path} in this JSON: {{\"queue\"")), "{path}: {said}");
    }
    let output = with_lib(r#"json_get queue.slug <<<"<html>bad gateway</html>""#, &[]);
    let said = text(&output);
    assert!(!output.status.success() && said.contains("no queue.slug in this JSON: <html>"), "{said}");
}

/// Answers every HTTP request on a free port, `times` of them: 200 with the request's
/// `Authorization` header and body as JSON for `/ok`, `409 {"error": "conflict"}` for anything else.
fn answering_server(times: usize) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(times) {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            let (mut length, mut auth) = (0, String::new());
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                let (name, value) = line.split_once(": ").unwrap_or((line, ""));
                match name.to_ascii_lowercase().as_str() {
                    "content-length" => length = value.parse().unwrap(),
                    "authorization" => auth = value.to_owned(),
                    _ => {}
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let (status, answer) = if request_line.contains(" /ok ") {
                let body = String::from_utf8(body).unwrap();
                ("200 OK", serde_json::json!({"auth": auth, "body": body}).to_string())
            } else {
                ("409 Conflict", r#"{"error":"conflict","message":"taken"}"#.to_owned())
            };
            let head = format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", answer.len());
            stream.write_all(head.as_bytes()).unwrap();
            stream.write_all(answer.as_bytes()).unwrap();
        }
    });
    base
}

#[test]
fn api_call_prints_a_2xx_body_and_dies_with_the_status_and_body_of_anything_else() {
    let base = answering_server(2);
    let output = with_lib(r#"api_call POST "$1/ok" acq_token '{"name":"jobs"}' | json_get auth"#, &[&base]);
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Bearer acq_token\n");
    let output = with_lib(r#"api_call DELETE "$1/taken" """#, &[&base]);
    let said = text(&output);
    assert!(!output.status.success(), "{said}");
    assert!(
        said.contains("DELETE") && said.contains("answered 409") && said.contains(r#""error":"conflict""#),
        "{said}"
    );
    // Nothing listens: no answer at all is said too, never an empty body taken for one.
    let closed = format!("http://127.0.0.1:{}", aqs_testkit::closed_port());
    let output = with_lib(r#"session=$(api_call GET "$1/ok" ""); echo "went on with '$session'""#, &[&closed]);
    let said = text(&output);
    assert!(!output.status.success() && said.contains("no answer") && !said.contains("went on"), "{said}");
}

#[test]
fn start_aqs_dies_with_the_log_when_the_migrations_fail_or_the_server_exits() {
    let dir = TempDir::new("start-aqs");
    let url = format!("http://127.0.0.1:{}/queue/v1/health", aqs_testkit::closed_port());
    let failing_migrate = dir.path("aqs-migrate-fails");
    script_file(
        &failing_migrate,
        "[ \"$1\" = migrate ] && { echo 'error: relation \"queues\" already exists'; exit 1; }\nsleep 30\n",
    );
    let output =
        with_lib(r#"start_aqs "$1" "$2" "$3" 10; echo started"#, &[&failing_migrate, &dir.path("a.log"), &url]);
    let said = text(&output);
    assert!(!output.status.success(), "{said}");
    assert!(
        said.contains("aqs migrate failed") && said.contains("already exists") && !said.contains("started"),
        "{said}"
    );
    let exiting_serve = dir.path("aqs-serve-exits");
    script_file(&exiting_serve, "[ \"$1\" = migrate ] && exit 0\necho 'error: cannot bind 127.0.0.1:8080'; exit 1\n");
    let output = with_lib(r#"start_aqs "$1" "$2" "$3" 10; echo started"#, &[&exiting_serve, &dir.path("b.log"), &url]);
    let said = text(&output);
    assert!(!output.status.success(), "{said}");
    assert!(said.contains("exited before it answered") && said.contains("cannot bind"), "{said}");
}
