//! The scenarios of `docs/performance.md`, one file each, sharing a `Ctx`: the service,
//! the floor, Redis, the bench member's queues and the scale. Each returns its rows; a failure
//! becomes a row with `error` set rather than stopping the run.

pub mod consume_ack;
pub mod end_to_end;
pub mod idle_polls;
pub mod memory;
pub mod open_loop;
pub mod publish_batch;
pub mod publish_single;
pub mod push;
pub mod push_load;
pub mod redis_cost;
pub mod replica_acks;
pub mod vs_peers;
pub mod wakeup;

use crate::Options;
use crate::api::{BenchQueue, Tenancy};
use crate::bullmq::BullmqResults;
use crate::client::Target;
use crate::peers::SideFigures;
use crate::scale::Scale;

pub struct Ctx {
    pub target: Target,
    pub floor: Option<Target>,
    pub redis_url: String,
    pub aqs_pid: Option<u32>,
    pub bullmq: Option<BullmqResults>,
    pub scale: Scale,
    tenancy: Tenancy,
    /// Peak single-publish rate measured by `publish_single`, for the open-loop run.
    pub peak_single: Option<f64>,
    /// AQS's figures from this run, for the rows that compare it with RabbitMQ and JetStream.
    pub aqs: SideFigures,
    /// The data-plane process with replica acks, and the Redis to attach as a replica
    /// (`replica_acks`).
    pub acks: Option<Target>,
    pub acks_pid: Option<u32>,
    pub replica_redis_url: Option<String>,
}

impl Ctx {
    pub async fn new(options: &Options) -> anyhow::Result<Self> {
        let target = Target::parse(&options.base_url).await?;
        let floor = match &options.floor_url {
            Some(url) => Some(Target::parse(url).await?),
            None => None,
        };
        let tenancy = Tenancy::new(&target).await?;
        let acks = match &options.acks_url {
            Some(url) => Some(Target::parse(url).await?),
            None => None,
        };
        Ok(Self {
            target,
            floor,
            redis_url: options.redis_url.clone(),
            aqs_pid: options.aqs_pid,
            bullmq: options.bullmq.clone(),
            scale: options.scale.clone(),
            tenancy,
            peak_single: None,
            aqs: SideFigures::default(),
            acks,
            acks_pid: options.acks_pid,
            replica_redis_url: options.replica_redis_url.clone(),
        })
    }

    /// A fresh queue with `tokens` tokens.
    pub async fn queue(&mut self, name: &str, tokens: usize) -> anyhow::Result<BenchQueue> {
        self.tenancy.queue(name, tokens).await
    }

    /// Deletes the queues the last scenarios made (`Tenancy::delete_made`).
    pub async fn delete_queues(&mut self) -> anyhow::Result<()> {
        self.tenancy.delete_made().await
    }

    pub fn bullmq(&self, scenario: &str) -> Option<f64> {
        self.bullmq.as_ref().and_then(|b| b.get(scenario))
    }
}

/// Says what is running, on stderr (stdout carries the table and JSON lines).
pub fn progress(what: &str) {
    eprintln!("  - {what}");
}
