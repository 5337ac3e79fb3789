//! End-to-end tests of the real `aqs` binary against a real Redis and PostgreSQL: what must hold
//! when processes die. A checker labels every message lost, duplicated or unexpected.

mod harness;
mod reliability;
