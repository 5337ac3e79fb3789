//! Start-up configuration of the real binary: layered settings (defaults, the `AQS_CONFIG` file,
//! then `AQS_…` variables) and a refusal that names the bad setting without printing secrets.

use crate::harness::{Redis, Server, free_port, fresh_database};
use std::process::{Child, Command, Stdio};

const SESSION: &str = "startup-session-secret-0123456789abcdef";
const RECEIPT: &str = "startup-receipt-secret-0123456789abcdef";

fn aqs() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_aqs"));
    cmd.env_remove("AQS_CONFIG").env("AQS_LOG", "warn");
    cmd
}

fn refusal(envs: &[(&str, &str)]) -> String {
    let output = aqs().arg("serve").envs(envs.iter().copied()).stdin(Stdio::null()).output().unwrap();
    assert!(!output.status.success(), "aqs serve should refuse {envs:?}");
    String::from_utf8_lossy(&output.stderr).into_owned() + &String::from_utf8_lossy(&output.stdout)
}

/// Whether `aqs serve` answers its health check on `port`: false once it exited without.
async fn healthy(port: u16, child: &mut Child) -> bool {
    let url = &format!("http://127.0.0.1:{port}/queue/v1/health");
    aqs_testkit::eventually_some(&format!("aqs serve answers on {port} or exits"), || {
        let exited = matches!(child.try_wait(), Ok(Some(_)));
        let asked = reqwest::get(url);
        async move {
            match asked.await {
                Ok(response) if response.status().is_success() => Some(true),
                _ if exited => Some(false),
                _ => None,
            }
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_setting_is_named_and_secrets_are_not_printed() {
    let redis = Redis::start("everysec");
    let database = fresh_database().await;
    let base = [("AQS_REDIS_URL", redis.url()), ("AQS_DATABASE_URL", database.clone())];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut envs: Vec<(&str, &str)> = base.iter().map(|(k, v)| (*k, v.as_str())).collect();
        envs.extend_from_slice(extra);
        envs
    };

    let output = refusal(&with(&[("AQS_SESSION_SECRET", "too-short"), ("AQS_RECEIPT_SECRET", RECEIPT)]));
    assert!(output.contains("AQS_SESSION_SECRET"), "{output}");
    assert!(!output.contains("too-short"), "the secret itself must not be printed: {output}");

    let output = refusal(&with(&[
        ("AQS_SESSION_SECRET", SESSION),
        ("AQS_RECEIPT_SECRET", RECEIPT),
        ("AQS_HTTP_ADDR", "not-an-address"),
    ]));
    assert!(output.contains("AQS_HTTP_ADDR"), "{output}");

    let output =
        refusal(&with(&[("AQS_SESSION_SECRET", SESSION), ("AQS_RECEIPT_SECRET", RECEIPT), ("AQS_ROLES", "data,nope")]));
    assert!(output.contains("AQS_ROLES"), "{output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_config_file_is_read_and_environment_variables_override_it() {
    let redis = Redis::start("everysec");
    let database = fresh_database().await;
    let (file_port, env_port) = (free_port(), free_port());
    let dir = std::env::temp_dir().join(format!("aqs-config-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("aqs.toml");
    std::fs::write(
        &file,
        format!(
            "http_addr = \"127.0.0.1:{file_port}\"\nredis_url = \"{}\"\ndatabase_url = \"{database}\"\n\
             session_secret = \"{SESSION}\"\nreceipt_secret = \"{RECEIPT}\"\nroles = \"data\"\n",
            redis.url()
        ),
    )
    .unwrap();

    // The file alone: serves on the file's address.
    let mut from_file = aqs().arg("serve").env("AQS_CONFIG", &file).spawn().unwrap();
    assert!(healthy(file_port, &mut from_file).await, "the file's http_addr should be used");
    from_file.kill().unwrap();
    from_file.wait().unwrap();

    // A variable wins over the file.
    let mut overridden = aqs()
        .arg("serve")
        .env("AQS_CONFIG", &file)
        .env("AQS_HTTP_ADDR", format!("127.0.0.1:{env_port}"))
        .spawn()
        .unwrap();
    assert!(healthy(env_port, &mut overridden).await, "AQS_HTTP_ADDR should override the file");
    overridden.kill().unwrap();
    overridden.wait().unwrap();
    std::fs::remove_dir_all(dir).unwrap();

    let output = refusal(&[("AQS_CONFIG", "/nonexistent/aqs.toml")]);
    assert!(output.contains("AQS_CONFIG"), "{output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_names_are_warned_about_or_refused_and_a_bad_log_filter_is_refused() {
    let redis = Redis::start("everysec");
    let output = refusal(&[
        ("AQS_REDIS_URL", &redis.url()),
        ("AQS_ROLES", "data"),
        ("AQS_RECEIPT_SECRET", RECEIPT),
        ("AQS_LOG", "info,=bogus[[["),
    ]);
    assert!(output.contains("AQS_LOG"), "{output}");

    // A misspelt variable is named in a warning; the server still starts.
    let port = free_port();
    let mut child = aqs()
        .arg("serve")
        .envs([
            ("AQS_REDIS_URL", redis.url()),
            ("AQS_ROLES", "data".into()),
            ("AQS_RECEIPT_SECRET", RECEIPT.into()),
            ("AQS_HTTP_ADDR", format!("127.0.0.1:{port}")),
            ("AQS_REDIS_REPLICA_ACK", "1".into()),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(healthy(port, &mut child).await);
    child.kill().unwrap();
    let output = child.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&output.stdout);
    assert!(log.contains("AQS_REDIS_REPLICA_ACK is not a setting"), "{log}");
    assert!(!log.contains('\u{1b}'), "a log that is not a terminal has no colour codes: {log}");

    // In the file, a misspelt key is refused and named.
    let dir = std::env::temp_dir().join(format!("aqs-config-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("aqs.toml");
    std::fs::write(&file, "redis_ulr = \"redis://127.0.0.1:1\"\n").unwrap();
    let output = refusal(&[("AQS_CONFIG", file.to_str().unwrap())]);
    assert!(output.contains("redis_ulr"), "{output}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn serve_help_lists_every_setting_with_its_default() {
    let output = aqs().args(["serve", "--help"]).output().unwrap();
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for setting in aqs_core::settings::SETTINGS {
        let name = format!("AQS_{}", setting.name.to_uppercase());
        assert!(help.contains(&name), "{name} missing from aqs serve --help:\n{help}");
    }
    assert!(help.contains("[default: 127.0.0.1:8080]") && help.contains("[required: data]"), "{help}");
}

/// A port taken between finding it free and binding it (by another process's connection) makes
/// the test harness start the server on the next one instead of failing the test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_harness_starts_on_another_port_when_its_port_was_taken() {
    let redis = Redis::start("everysec");
    let database = fresh_database().await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_port = taken.local_addr().unwrap().port();
    let next = free_port();
    let server =
        Server::start_on_first_free([taken_port, next], &database, &redis.url(), &aqs_testkit::namespace(), &[]).await;
    assert_eq!(server.port, next);
    assert!(reqwest::get(format!("{}/queue/v1/health", server.base())).await.unwrap().status().is_success());
    drop(taken);
}

/// The same for the test's private Redis: a port that an outgoing connection holds as its local
/// port (what the race looks like) is skipped for the next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_harness_starts_redis_on_another_port_when_its_port_was_taken() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let outgoing = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let taken = outgoing.local_addr().unwrap().port();
    let next = free_port();
    let redis = Redis::start_on_first_free("everysec", &[], [taken, next]);
    assert_eq!(redis.port, next);
    let mut conn = redis::Client::open(redis.url()).unwrap().get_connection().unwrap();
    assert_eq!(redis::cmd("PING").query::<String>(&mut conn).unwrap(), "PONG");
    drop(outgoing);
}

/// `aqs serve` turns transparent huge pages off for itself (with them, a process holding many idle
/// long polls used 40 % more memory), and `MIMALLOC_ALLOW_THP=1` keeps what the process was given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_turns_huge_pages_off_unless_the_allocator_is_told_otherwise() {
    let redis = Redis::start("everysec");
    let database = fresh_database().await;
    let namespace = aqs_testkit::namespace();
    let by_default = Server::start(&database, &redis.url(), &namespace).await;
    assert_eq!(huge_pages_enabled(by_default.pid()), Some(false), "the default turns them off");
    drop(by_default);
    let asked = Server::start_with_env(&database, &redis.url(), &namespace, &[("MIMALLOC_ALLOW_THP", "1")]).await;
    assert_eq!(
        huge_pages_enabled(asked.pid()),
        huge_pages_enabled(std::process::id()),
        "asked for, they stay as given"
    );
}

/// The `THP_enabled` line of /proc/PID/status: the process's prctl(PR_SET_THP_DISABLE) flag.
fn huge_pages_enabled(pid: u32) -> Option<bool> {
    aqs_bench::proc_status::status_word(pid, "THP_enabled:").map(|flag| flag == "1")
}
