//! The connect-time SSRF guard (with `push_allow_private_networks` off) and the Standard Webhooks
//! signatures, verified here independently of the data plane's code.

use crate::helpers::{spawn_app, spawn_app_with};
use crate::push_handler::{SECRET, Seen, always, record};
use aqs_core::secret::Secret;
use aqs_core::time::now_ms;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

fn guarded_namespace() -> String {
    format!("t{}", hex::encode(rand::random::<[u8; 6]>()))
}

#[tokio::test]
async fn a_name_resolving_to_loopback_is_refused_at_connect_time_and_retried_until_dead() {
    let app = spawn_app_with(&guarded_namespace(), |c| c.push_allow_private_networks = false).await;
    let hook = always(200).await;
    for url in [format!("http://localhost:{}/hook", hook.port), format!("http://127.0.0.1:{}/hook", hook.port)] {
        let queue = app.queue_with(|m| m.max_attempts = 2).await;
        app.set_push(&queue, &record(&queue, &url)).await;
        app.publish_text(&queue, "secret stuff").await;
        let dead = app.wait_dead(&queue, 1, WAIT).await;
        assert_eq!(dead[0].attempts, 2, "{url}: refusals are retried like connection failures");
        assert!(dead[0].reason.contains("refused to connect"), "{url}: {}", dead[0].reason);
        assert!(dead[0].reason.contains("loopback"), "{url}: {}", dead[0].reason);
        let log = app.push_log(&queue).await;
        assert!(log[0]["status"].is_null());
    }
    assert!(hook.seen().is_empty(), "the guarded data plane never connected");
}

/// Verifies `webhook-signature` the way a handler would: each space-separated `v1,…` entry.
fn verifies(seen: &Seen, secret: &str) -> bool {
    let key = STANDARD.decode(secret.strip_prefix("whsec_").unwrap()).unwrap();
    let signed = format!("{}.{}.", seen.header("webhook-id"), seen.header("webhook-timestamp"));
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(signed.as_bytes());
    mac.update(&seen.raw);
    let expected = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
    seen.header("webhook-signature").split(' ').any(|sig| sig == expected)
}

#[tokio::test]
async fn requests_verify_under_the_current_secret_and_a_rotated_out_one_within_its_window() {
    let app = spawn_app().await;
    let hook = always(200).await;
    let queue = app.queue().await;
    app.set_push(&queue, &record(&queue, &hook.url)).await;
    app.publish_text(&queue, "signed").await;
    let seen = hook.wait_for(1, WAIT).await;
    let timestamp: u64 = seen[0].header("webhook-timestamp").parse().unwrap();
    assert!(timestamp.abs_diff(now_ms() / 1000) <= 5);
    assert!(verifies(&seen[0], SECRET));
    assert_eq!(seen[0].header("webhook-signature").split(' ').count(), 1);
    assert!(!verifies(&seen[0], "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"));

    // After a rotation: the new secret signs, and the old one alongside for its window.
    let rotated = aqs_core::push::generate_secret();
    let mut target = record(&queue, &hook.url);
    target.secret = Secret::new(rotated.clone());
    target.previous_secret = Some(Secret::new(SECRET));
    target.previous_until_ms = now_ms() + 24 * 3600 * 1000;
    app.set_push(&queue, &target).await;
    tokio::time::sleep(Duration::from_millis(1500)).await; // the dispatcher restarts with it
    app.publish_text(&queue, "rotated").await;
    let seen = hook.wait_for(2, WAIT).await;
    assert_eq!(seen[1].header("webhook-signature").split(' ').count(), 2);
    assert!(verifies(&seen[1], &rotated), "the new secret verifies");
    assert!(verifies(&seen[1], SECRET), "the rotated-out secret still verifies within 24 h");

    // Once the window is over, only the new secret signs.
    target.previous_until_ms = now_ms() - 1;
    app.set_push(&queue, &target).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    app.publish_text(&queue, "later").await;
    let seen = hook.wait_for(3, WAIT).await;
    assert!(verifies(&seen[2], &rotated));
    assert!(!verifies(&seen[2], SECRET));
}
