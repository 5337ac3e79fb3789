//! The `aqs` library behind the binary: `serve` composes the roles and runs the HTTP server, so
//! that tests (through `aqs-testkit`) run the very server production runs.

mod framing;
pub mod health;
pub mod metrics;
pub mod request_id;
pub mod serve;
mod serve_tls;
