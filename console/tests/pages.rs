//! Tests of every console page and form: the real console router on 127.0.0.1:0 over a fresh
//! PostgreSQL database per test (`#[sqlx::test]`) and a fresh Redis namespace per test, driven
//! like a browser without JavaScript (cookies kept, redirects followed by hand), and for the
//! charts and the colours, by headless Chromium (`browser.rs`).

mod pages {
    mod account;
    mod admin_teams;
    mod audit;
    mod auth;
    mod billing;
    mod browser;
    // Shared with the control plane's tests; this binary uses only part of it.
    mod callback_urls;
    mod charts;
    mod connect;
    mod consumers;
    mod control_bytes;
    mod create_warnings;
    mod csrf;
    mod dead_letters;
    mod every_error;
    #[allow(dead_code)]
    #[path = "../../../control-plane/tests/api/fake_stripe.rs"]
    mod fake_stripe;
    mod hosts;
    mod message_delete;
    mod message_lookup;
    mod messages;
    mod overview;
    mod push;
    mod push_deliveries;
    mod queues;
    mod resubmit;
    mod roles;
    mod send_size;
    mod send_upload;
    mod session_devices;
    mod settings;
    mod support;
    mod teams;
    mod tenancy;
    mod text_fields;
    mod tokens;
}
