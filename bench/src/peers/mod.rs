//! The other queues AQS is weighed against, RabbitMQ and NATS JetStream, each driven in this
//! process by its own Rust client with the same concurrency as the AQS scenarios. Each peer runs
//! as a private server (its own ports, folder and, for RabbitMQ, Erlang node and cookie) started
//! only for its own scenarios and stopped after, so it never idles beside another side's
//! measurement.
//!
//! A side is driven through two small traits, `Publisher` and `Consumer`, so the closed loops
//! (`drive`), the open-loop end-to-end run (`end_to_end`) and the memory figure (`group`) are the
//! same code for every side, AQS's end-to-end run included.

pub mod compare;
pub mod drive;
pub mod end_to_end;
pub mod group;
pub mod nats;
pub mod nats_server;
pub mod process;
pub mod rabbitmq;
pub mod rabbitmq_node;

use bytes::Bytes;
use std::future::Future;

/// Publishes messages and waits until the server has taken responsibility for each of them
/// (a publisher confirm, a JetStream ack, a 201).
pub trait Publisher: Send + 'static {
    /// Publishes every body (pipelined where the protocol allows it) and returns once all are
    /// confirmed.
    fn publish(&mut self, bodies: &[Bytes]) -> impl Future<Output = anyhow::Result<()>> + Send;
}

/// Receives messages with manual acknowledgement.
pub trait Consumer: Send + 'static {
    /// Waits (a bounded time, about a second) for at least one message and returns the bodies
    /// of those ready, at most a batch; empty when none came.
    fn receive(&mut self) -> impl Future<Output = anyhow::Result<Vec<Bytes>>> + Send;
    /// Acknowledges what `receive` returned (a side may hold acks back to send them together);
    /// returns how many messages this call acknowledged.
    fn ack(&mut self) -> impl Future<Output = anyhow::Result<u64>> + Send;
}

/// What every peer scenario measured for one side; `None` where a scenario failed (its error is
/// in `errors`).
#[derive(Debug, Clone, Default)]
pub struct SideFigures {
    /// msgs/s, one message per request / confirm, 64 concurrent publishers.
    pub publish_single: Option<f64>,
    /// msgs/s, batches of 100.
    pub publish_batch: Option<f64>,
    /// msgs/s consumed and acknowledged with the depth flat.
    pub consume_ack: Option<f64>,
    /// End-to-end latency at half the side's own end-to-end peak (`end_to_end::peak`).
    pub end_to_end: Option<EndToEnd>,
    /// A peer's end-to-end latency at the rate AQS was offered, for a comparison at equal load
    /// (always `None` for AQS itself).
    pub end_to_end_at_aqs_rate: Option<EndToEnd>,
    /// Memory per stored message, payload included (bytes).
    pub memory_per_message: Option<f64>,
}

#[derive(Debug, Clone, Copy)]
pub struct EndToEnd {
    /// Offered msgs/s.
    pub rate: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// p50 from the scheduled time to the publish being confirmed: the publishing share of `p50_ms`.
    pub confirmed_p50_ms: Option<f64>,
    pub sent: u64,
    pub received: u64,
}
