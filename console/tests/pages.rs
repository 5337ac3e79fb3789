//! Tests of every console page and form: the real console router on 127.0.0.1:0 over a fresh
//! PostgreSQL database per test (`#[sqlx::test]`) and a fresh Redis namespace per test, driven
//! like a browser without JavaScript (cookies kept, redirects followed by hand).

mod pages {
    mod auth;
    mod callback_urls;
    mod csrf;
    mod dead_letters;
    mod overview;
    mod push;
    mod push_deliveries;
    mod queues;
    mod resubmit;
    mod settings;
    mod support;
    mod tenancy;
    mod tokens;
}
