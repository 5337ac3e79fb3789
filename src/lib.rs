//! The `aqs` library behind the binary: `serve` builds the process's one engine, composes the
//! roles over it and runs them on the HTTP server of `aqs-http` (the server tests run too, through
//! `aqs-testkit`).

pub mod health;
pub mod metrics;
pub mod serve;
mod serve_tls;
