//! Start-up configuration of the real binary: layered settings (defaults, the `AQS_CONFIG` file,
//! then `AQS_…` variables) and a refusal that names the bad setting without printing secrets.

use crate::harness::{Redis, free_port, fresh_database};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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

async fn healthy(port: u16, child: &mut Child) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(response) = reqwest::get(format!("http://127.0.0.1:{port}/queue/v1/health")).await
            && response.status().is_success()
        {
            return true;
        }
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
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
