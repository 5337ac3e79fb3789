//! `aqs-client`: the AQS queue API (`/queue/v1`) for Rust programs.
//!
//! [`Client`] holds the service's origin and a token; [`Client::queue`] gives a [`Queue`] with
//! one method per route (publish, batch, consume, ack, nack, extend, stats, peek, purge, dead letters).
//! Every refusal is an [`Error::Api`] whose [`ErrorCode`] is the API's `error` field. A 429 or
//! 503 is retried after its `Retry-After`, and publishes carry an idempotency key (the caller's
//! or a generated one) so a retry cannot store a message twice. [`consumer::run`] is the consumer
//! loop with the Worker trigger's batch semantics (see `consumer`).

mod body;
mod client;
pub mod consumer;
mod error;
mod types;

pub use body::Body;
pub use client::{Client, ClientBuilder, Queue};
pub use consumer::{Batch, ConsumerOptions, Counts, Decision, Message};
pub use error::{Error, ErrorCode};
pub use types::*;
