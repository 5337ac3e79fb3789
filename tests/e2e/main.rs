//! End-to-end tests of the real `aqs` binary against a real Redis and PostgreSQL: what must hold
//! when processes die (a checker labels every message lost, duplicated or unexpected), and the
//! console driven in a real browser.

mod bench_smoke;
mod client;
mod console_details;
mod console_journey;
mod failover;
mod framing;
mod harness;
mod hosts;
mod infra;
mod metrics;
mod outages;
mod pebble;
mod production;
mod push;
mod readme;
mod reliability;
mod replica_acks;
mod roles;
mod startup;
mod tls;
