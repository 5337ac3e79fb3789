//! End-to-end tests of the control plane: the real router on a real port, a fresh PostgreSQL
//! database per test (`#[sqlx::test]`) and a fresh Redis namespace per test.

mod api {
    mod account;
    mod account_billing;
    mod audit;
    mod auth;
    mod billed;
    mod billing;
    mod billing_admin;
    mod billing_mode;
    mod erasure;
    mod errors;
    mod fake_stripe;
    mod isolation;
    mod keys;
    mod login_throttle;
    mod migration;
    mod openapi;
    mod projection;
    mod push;
    mod push_admin;
    mod queues;
    mod roles;
    mod support;
    mod suspend;
    mod teams;
    mod tenancy;
    mod text_fields;
    mod tokens;
}
