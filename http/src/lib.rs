//! `aqs-http`: the HTTP server the `aqs` binary runs on every listener, apart from the roles it
//! serves, so that every crate's tests (through `aqs-testkit`) run the very server production runs
//! without compiling the whole product.
//!
//! - [`serve_http`]: the plain HTTP/1.1 listener (one task per connection, graceful shutdown).
//! - [`request_id`]: every request's id, echoed in the answer, its log span and its error body.
//! - [`framing`]: hyper's own answers to malformed framing, rewritten into the API's JSON errors.

pub mod framing;
pub mod request_id;
mod server;

pub use server::{SHUTDOWN_GRACE, serve_http, with_peer};
