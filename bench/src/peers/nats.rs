//! NATS JetStream with `async-nats`, in its durable queue mode: a work-queue stream (a message
//! is removed once acknowledged, as in AQS) with file storage and one replica, acknowledged
//! publishes (the client waits for each PubAck; a batch is published pipelined and its acks
//! awaited together), and one durable pull consumer with explicit acks, fetched in batches of
//! 100 by each consumer task. JetStream writes a message to its block file before acking the
//! publish, so it survives a crash of the server; nats-server 2.9 flushes those files to disk on
//! its own interval (no per-message fsync option), a weaker promise after power loss than AQS's
//! AOF `everysec`.
//!
//! Clients share a few connections, at most `CONNECTIONS`, like the RabbitMQ side.

use super::{Consumer, Publisher};
use anyhow::Context;
use async_nats::jetstream::{self, consumer, stream};
use bytes::Bytes;
use futures_util::{FutureExt, StreamExt};
use std::time::Duration;

pub const CONNECTIONS: usize = 4;
const BATCH: usize = 100;

pub fn describe(version: Option<&str>) -> String {
    format!(
        "NATS JetStream {}: work-queue stream, file storage, acked publishes, durable pull consumer, explicit acks, batches of {BATCH}",
        version.unwrap_or("?")
    )
}

/// The connections of one scenario; dropped (and closed) after it.
pub struct Js {
    contexts: Vec<jetstream::Context>,
}

impl Js {
    pub async fn connect(url: &str, count: usize) -> anyhow::Result<Self> {
        let mut contexts = Vec::with_capacity(count);
        for _ in 0..count.max(1) {
            let client = async_nats::connect(url).await.context("cannot connect to NATS")?;
            contexts.push(jetstream::new(client));
        }
        Ok(Self { contexts })
    }

    fn context(&self, i: usize) -> jetstream::Context {
        self.contexts[i % self.contexts.len()].clone()
    }

    /// Makes a fresh work-queue stream named `name` (subject `name`) and its durable consumer.
    pub async fn declare(&self, name: &str) -> anyhow::Result<()> {
        let stream = self
            .context(0)
            .create_stream(stream::Config {
                name: name.to_owned(),
                subjects: vec![name.to_owned()],
                storage: stream::StorageType::File,
                retention: stream::RetentionPolicy::WorkQueue,
                num_replicas: 1,
                ..Default::default()
            })
            .await
            .map_err(|e| anyhow::anyhow!("cannot create stream {name}: {e}"))?;
        stream
            .create_consumer(consumer::pull::Config {
                durable_name: Some("bench".to_owned()),
                ack_policy: consumer::AckPolicy::Explicit,
                ..Default::default()
            })
            .await
            .map_err(|e| anyhow::anyhow!("cannot create the consumer of {name}: {e}"))?;
        Ok(())
    }

    pub fn publishers(&self, subject: &str, count: usize) -> Vec<JsPublisher> {
        (0..count).map(|i| JsPublisher { js: self.context(i), subject: subject.to_owned() }).collect()
    }

    pub async fn consumers(&self, name: &str, count: usize) -> anyhow::Result<Vec<JsConsumer>> {
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            let stream = self.context(i).get_stream(name).await.map_err(|e| anyhow::anyhow!("{e}"))?;
            let pull: consumer::PullConsumer =
                stream.get_consumer("bench").await.map_err(|e| anyhow::anyhow!("{e}"))?;
            let messages = pull
                .stream()
                .max_messages_per_batch(BATCH)
                .messages()
                .await
                .map_err(|e| anyhow::anyhow!("cannot pull from {name}: {e}"))?;
            out.push(JsConsumer { messages, pending: Vec::new() });
        }
        Ok(out)
    }
}

pub struct JsPublisher {
    js: jetstream::Context,
    subject: String,
}

impl Publisher for JsPublisher {
    async fn publish(&mut self, bodies: &[Bytes]) -> anyhow::Result<()> {
        let mut acks = Vec::with_capacity(bodies.len());
        for body in bodies {
            acks.push(
                self.js
                    .publish(self.subject.clone(), body.clone())
                    .await
                    .map_err(|e| anyhow::anyhow!("publish: {e}"))?,
            );
        }
        for ack in acks {
            ack.await.map_err(|e| anyhow::anyhow!("publish ack: {e}"))?;
        }
        Ok(())
    }
}

pub struct JsConsumer {
    messages: consumer::pull::Stream,
    /// Received and not yet acknowledged.
    pending: Vec<jetstream::Message>,
}

impl Consumer for JsConsumer {
    async fn receive(&mut self) -> anyhow::Result<Vec<Bytes>> {
        let first = match tokio::time::timeout(Duration::from_secs(1), self.messages.next()).await {
            Err(_) => return Ok(Vec::new()),
            Ok(None) => anyhow::bail!("the JetStream pull stream ended"),
            Ok(Some(message)) => message.map_err(|e| anyhow::anyhow!("pull: {e}"))?,
        };
        let mut received = vec![first];
        while received.len() < BATCH {
            // Messages already received, without waiting for more.
            match self.messages.next().now_or_never() {
                Some(Some(message)) => received.push(message.map_err(|e| anyhow::anyhow!("pull: {e}"))?),
                Some(None) => anyhow::bail!("the JetStream pull stream ended"),
                None => break,
            }
        }
        let bodies = received.iter().map(|m| m.payload.clone()).collect();
        self.pending.extend(received);
        Ok(bodies)
    }

    async fn ack(&mut self) -> anyhow::Result<u64> {
        let count = self.pending.len() as u64;
        for message in self.pending.drain(..) {
            message.ack().await.map_err(|e| anyhow::anyhow!("ack: {e}"))?;
        }
        Ok(count)
    }
}

/// The JetStream side of the peer scenarios: a private server and the connections each
/// scenario opens on it.
pub struct NatsSide {
    server: super::nats_server::NatsServer,
    open: Vec<Js>,
}

impl NatsSide {
    pub async fn start() -> anyhow::Result<Self> {
        Ok(Self { server: super::nats_server::NatsServer::start().await?, open: Vec::new() })
    }

    pub async fn stop(mut self) {
        self.open.clear();
        self.server.stop();
    }

    async fn connect(&mut self, count: usize) -> anyhow::Result<&Js> {
        self.open.push(Js::connect(&self.server.url(), count).await?);
        Ok(self.open.last().expect("just pushed"))
    }
}

impl super::group::Side for NatsSide {
    type P = JsPublisher;
    type C = JsConsumer;

    async fn queue(&mut self, name: &str) -> anyhow::Result<String> {
        let stream = format!("bench-{name}");
        self.connect(1).await?.declare(&stream).await?;
        Ok(stream)
    }

    async fn publishers(&mut self, queue: &str, count: usize) -> anyhow::Result<Vec<JsPublisher>> {
        Ok(self.connect(count.min(CONNECTIONS)).await?.publishers(queue, count))
    }

    async fn consumers(&mut self, queue: &str, count: usize) -> anyhow::Result<Vec<JsConsumer>> {
        self.connect(count.min(CONNECTIONS)).await?.consumers(queue, count).await
    }

    async fn finish(&mut self, queue: &str) {
        // Dropping a client closes its connection once its pending writes are flushed.
        self.open.clear();
        if let Ok(js) = Js::connect(&self.server.url(), 1).await {
            js.context(0).delete_stream(queue).await.ok();
        }
    }

    fn memory_bytes(&self) -> anyhow::Result<u64> {
        let pid = self.server.pid().ok_or_else(|| anyhow::anyhow!("nats-server is not running"))?;
        crate::proc_status::rss_bytes(pid)
    }
}
