//! RabbitMQ over AMQP 0-9-1 with `lapin`, in its durable mode: a quorum queue (RabbitMQ's
//! replicated, durable queue type, recommended for data safety; one replica on this single
//! node), persistent messages (delivery mode 2), publisher confirms on every publishing channel,
//! and consumers with manual acks and a prefetch of 100. A quorum queue confirms a publish once
//! its Raft log entry is written and fsynced, so an acknowledged message survives power loss: a
//! stronger promise than AQS's AOF `everysec` (at most about a second of acknowledged writes).
//!
//! Channels share a few connections (each lapin connection runs its own I/O thread, and
//! RabbitMQ's advice is few connections, many channels): at most `CONNECTIONS`, channels
//! spread over them in turn.

use super::{Consumer, Publisher};
use anyhow::Context;
use bytes::Bytes;
use futures_util::{FutureExt, StreamExt};
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions, ConfirmSelectOptions,
    QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};
use std::time::Duration;

pub const CONNECTIONS: usize = 4;
const PREFETCH: u16 = 100;
/// A consumer acks (with `multiple`) once this many deliveries are unacknowledged, or sooner
/// when nothing more is waiting: the prefetch window never runs dry waiting for an ack.
const ACK_EVERY: u64 = PREFETCH as u64 / 2;

pub fn describe(version: Option<&str>) -> String {
    format!(
        "RabbitMQ {}: quorum queue (fsync before confirm), persistent messages, publisher confirms, manual acks, prefetch {PREFETCH}",
        version.unwrap_or("?")
    )
}

/// The open connections of one scenario (`close` them after it: each holds an I/O thread).
pub struct Amqp {
    connections: Vec<Connection>,
}

impl Amqp {
    pub async fn connect(uri: &str, count: usize) -> anyhow::Result<Self> {
        let mut connections = Vec::with_capacity(count);
        for _ in 0..count.max(1) {
            connections.push(
                Connection::connect(uri, ConnectionProperties::default())
                    .await
                    .context("cannot connect to RabbitMQ")?,
            );
        }
        Ok(Self { connections })
    }

    pub async fn close(self) {
        for connection in self.connections {
            connection.close(200, "done".into()).await.ok();
        }
    }

    async fn channel(&self, i: usize) -> anyhow::Result<Channel> {
        Ok(self.connections[i % self.connections.len()].create_channel().await?)
    }

    /// Declares a fresh durable quorum queue named `name`.
    pub async fn declare(&self, name: &str) -> anyhow::Result<()> {
        let channel = self.channel(0).await?;
        let mut args = FieldTable::default();
        args.insert("x-queue-type".into(), AMQPValue::LongString("quorum".into()));
        channel
            .queue_declare(name.into(), QueueDeclareOptions { durable: true, ..Default::default() }, args)
            .await
            .with_context(|| format!("cannot declare quorum queue {name}"))?;
        channel.close(200, "declared".into()).await.ok();
        Ok(())
    }

    pub async fn publishers(&self, queue: &str, count: usize) -> anyhow::Result<Vec<AmqpPublisher>> {
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            let channel = self.channel(i).await?;
            channel.confirm_select(ConfirmSelectOptions::default()).await?;
            out.push(AmqpPublisher { channel, queue: queue.into() });
        }
        Ok(out)
    }

    pub async fn consumers(&self, queue: &str, count: usize) -> anyhow::Result<Vec<AmqpConsumer>> {
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            let channel = self.channel(i).await?;
            channel.basic_qos(PREFETCH, BasicQosOptions::default()).await?;
            let consumer = channel
                .basic_consume(
                    queue.into(),
                    format!("bench-{i}").into(),
                    BasicConsumeOptions::default(),
                    FieldTable::default(),
                )
                .await?;
            out.push(AmqpConsumer { channel, consumer, last_tag: 0, unacked: 0, drained: true });
        }
        Ok(out)
    }
}

pub struct AmqpPublisher {
    channel: Channel,
    queue: ShortString,
}

impl Publisher for AmqpPublisher {
    async fn publish(&mut self, bodies: &[Bytes]) -> anyhow::Result<()> {
        let mut confirms = Vec::with_capacity(bodies.len());
        for body in bodies {
            confirms.push(
                self.channel
                    .basic_publish(
                        "".into(),
                        self.queue.clone(),
                        BasicPublishOptions::default(),
                        body,
                        BasicProperties::default().with_delivery_mode(2),
                    )
                    .await?,
            );
        }
        for confirm in confirms {
            anyhow::ensure!(confirm.await?.is_ack(), "RabbitMQ nacked a publish");
        }
        Ok(())
    }
}

pub struct AmqpConsumer {
    channel: Channel,
    consumer: lapin::Consumer,
    last_tag: u64,
    unacked: u64,
    /// The last `receive` took everything that had arrived.
    drained: bool,
}

impl Consumer for AmqpConsumer {
    async fn receive(&mut self) -> anyhow::Result<Vec<Bytes>> {
        let first = match tokio::time::timeout(Duration::from_secs(1), self.consumer.next()).await {
            Err(_) => return Ok(Vec::new()),
            Ok(None) => anyhow::bail!("the RabbitMQ consumer was cancelled"),
            Ok(Some(delivery)) => delivery?,
        };
        let mut bodies = vec![Bytes::from(first.data)];
        self.last_tag = first.delivery_tag;
        self.drained = false;
        while bodies.len() < PREFETCH as usize {
            // Deliveries already received, without waiting for more.
            match self.consumer.next().now_or_never() {
                Some(Some(delivery)) => {
                    let delivery = delivery?;
                    self.last_tag = delivery.delivery_tag;
                    bodies.push(Bytes::from(delivery.data));
                }
                Some(None) => anyhow::bail!("the RabbitMQ consumer was cancelled"),
                None => {
                    self.drained = true;
                    break;
                }
            }
        }
        self.unacked += bodies.len() as u64;
        Ok(bodies)
    }

    async fn ack(&mut self) -> anyhow::Result<u64> {
        if self.unacked == 0 || (self.unacked < ACK_EVERY && !self.drained) {
            return Ok(0);
        }
        self.channel.basic_ack(self.last_tag, BasicAckOptions { multiple: true }).await?;
        Ok(std::mem::take(&mut self.unacked))
    }
}

/// The RabbitMQ side of the peer scenarios: a private node and the connections each scenario
/// opens on it.
pub struct RabbitmqSide {
    node: super::rabbitmq_node::RabbitmqNode,
    open: Vec<Amqp>,
}

impl RabbitmqSide {
    pub async fn start() -> anyhow::Result<Self> {
        Ok(Self { node: super::rabbitmq_node::RabbitmqNode::start().await?, open: Vec::new() })
    }

    pub async fn stop(mut self) {
        for amqp in self.open.drain(..) {
            amqp.close().await;
        }
        self.node.stop();
    }

    async fn connect(&mut self, count: usize) -> anyhow::Result<&Amqp> {
        self.open.push(Amqp::connect(&self.node.uri(), count).await?);
        Ok(self.open.last().expect("just pushed"))
    }
}

impl super::group::Side for RabbitmqSide {
    type P = AmqpPublisher;
    type C = AmqpConsumer;

    async fn queue(&mut self, name: &str) -> anyhow::Result<String> {
        let queue = format!("bench-{name}");
        self.connect(1).await?.declare(&queue).await?;
        Ok(queue)
    }

    async fn publishers(&mut self, queue: &str, count: usize) -> anyhow::Result<Vec<AmqpPublisher>> {
        self.connect(count.min(CONNECTIONS)).await?.publishers(queue, count).await
    }

    async fn consumers(&mut self, queue: &str, count: usize) -> anyhow::Result<Vec<AmqpConsumer>> {
        self.connect(count.min(CONNECTIONS)).await?.consumers(queue, count).await
    }

    async fn finish(&mut self, queue: &str) {
        for amqp in self.open.drain(..) {
            amqp.close().await;
        }
        if let Ok(amqp) = Amqp::connect(&self.node.uri(), 1).await {
            if let Ok(channel) = amqp.channel(0).await {
                channel.queue_delete(queue.into(), Default::default()).await.ok();
            }
            amqp.close().await;
        }
    }

    fn memory_bytes(&self) -> anyhow::Result<u64> {
        crate::proc_status::rss_bytes(self.node.beam_pid)
    }
}
