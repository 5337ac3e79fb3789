//! The README's curl examples, run as written against the real binary, in order: the address
//! (`AQS_URL`; the test server listens on a free port) and the demo token come from the test's own
//! sign-up instead of `.aqs/demo.env`.

use crate::harness::{Redis, Server, Tenant, fresh_database};
use serde_json::{Value, json};
use std::process::Command;

/// The indented code blocks of the README's "Try it" section, in order.
fn try_it_blocks() -> Vec<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let section = readme.split("## Try it").nth(1).unwrap().split("\n## ").next().unwrap();
    let mut blocks = Vec::new();
    let mut current = String::new();
    for line in section.lines() {
        if let Some(code) = line.strip_prefix("    ") {
            current.push_str(code);
            current.push('\n');
        } else if line.trim().is_empty() && !current.is_empty() {
            current.push('\n');
        } else if !current.trim().is_empty() {
            blocks.push(std::mem::take(&mut current));
        } else {
            current.clear();
        }
    }
    if !current.trim().is_empty() {
        blocks.push(current);
    }
    blocks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readme_curl_examples_run_as_written() {
    let redis = Redis::start("everysec");
    let server = Server::start(&fresh_database().await, &redis.url(), &aqs_testkit::namespace()).await;
    let tenant = Tenant::sign_up(&server, json!({"name": "image-jobs"})).await;
    assert_eq!(tenant.slug, "image-jobs", "a fresh database gives the README's slug");

    // Each answer on its own line, so the test can read them apart.
    let mut script = String::from("set -euo pipefail\ncurl() { command curl \"$@\"; echo; }\n");
    for block in try_it_blocks() {
        if block.contains("source .aqs/demo.env") {
            script.push_str(&format!("export AQS_URL={} AQS_TOKEN={}\n", server.base(), tenant.token));
            continue;
        }
        if block.trim_start().starts_with('{') {
            continue; // an example answer, not a command
        }
        assert!(!block.contains("127.0.0.1:8080"), "the examples use $AQS_URL, which demo.env sets: {block}");
        script.push_str(&block);
        script.push_str("\necho\n");
    }
    let output = Command::new("bash").arg("-c").arg(&script).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "script failed:\n{script}\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let answers: Vec<Value> = stdout.lines().filter_map(|line| serde_json::from_str(line).ok()).collect();
    let find = |key: &str| answers.iter().filter(|a| a.get(key).is_some()).collect::<Vec<_>>();
    let published = find("id");
    assert_eq!(published.len(), 4, "four publishes, one before each receive: {stdout}");
    assert!(published.iter().all(|p| p["duplicate"] == false), "{stdout}");
    assert_eq!(find("messages")[0]["messages"][0]["content_type"], "application/json", "{stdout}");
    assert_eq!(find("acked")[0]["acked"], 1, "{stdout}");
    assert_eq!(find("nacked")[0]["nacked"], 1, "{stdout}");
    // The extend step has a lease of its own to extend, as each step before it.
    let extended = find("extended")[0];
    assert_eq!(extended["extended"].as_array().map(Vec::len), Some(1), "{stdout}");
    assert_eq!(extended["failed"], json!([]), "{stdout}");
    assert_eq!(find("ok")[0], &json!({"ok": true, "service": "aqs"}));
}

/// The README's three examples of a keyed publish (curl, TypeScript, Rust) and the spec's `fetch`
/// sample it runs against the same demo queue: one key each, so running one after another never
/// answers a duplicate or an `idempotency_conflict`.
#[test]
fn readme_examples_use_an_idempotency_key_each() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let sample =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/sdk/typescript/examples/fetch.mjs")).unwrap();
    let mut keys = Vec::new();
    for (text, patterns) in [
        (&readme, &["\"idempotency_key\":\"", "idempotencyKey: \"", "with_idempotency_key(\""][..]),
        (&sample, &["idempotencyKey: \""][..]),
    ] {
        for pattern in patterns {
            for found in text.match_indices(pattern) {
                let rest = &text[found.0 + pattern.len()..];
                keys.push(rest[..rest.find('"').unwrap()].to_owned());
            }
        }
    }
    assert_eq!(keys.len(), 4, "curl, TypeScript, Rust and the fetch sample: {keys:?}");
    let mut unique = keys.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), keys.len(), "a key per example: {keys:?}");
}
