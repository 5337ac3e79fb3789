//! End-to-end latency, publish → consumer, open loop at half of AQS's end-to-end peak (measured
//! first, publishing back to back while consuming: `end_to_end::peak`): the AQS
//! side of the comparison with each peer, through the same driver (`peers::end_to_end`). 64
//! connections publish one message per request; consumers long-poll for up to 100 messages
//! (`max_wait_seconds` 1) and acknowledge each batch with the consume that asks for the next
//! (`"ack"`), as the SDKs' consumer loops do: one request a batch.

use super::{Ctx, progress};
use crate::api::{BenchQueue, Consumed, consume_body};
use crate::client::{Call, Conn};
use crate::load::Window;
use crate::peers::{Consumer, Publisher, end_to_end, group};
use crate::scenario_result::ScenarioResult;
use anyhow::Context;
use base64::Engine;
use bytes::Bytes;
use hyper::StatusCode;
use serde_json::{Value, json};

const SCENARIO: &str = "end_to_end";

pub async fn run(ctx: &mut Ctx) -> Vec<ScenarioResult> {
    match measure(ctx).await {
        Ok(rows) => rows,
        Err(err) => vec![ScenarioResult::failed(SCENARIO, "ms (p99)", &err)],
    }
}

async fn measure(ctx: &mut Ctx) -> anyhow::Result<Vec<ScenarioResult>> {
    let s = ctx.scale.clone();
    let conns = s.single_connections;
    let queue = ctx.queue("e2e", conns + s.consumers).await?;
    let peak_queue = ctx.queue("e2e-peak", conns + s.consumers).await?;
    progress(&format!("aqs: end-to-end peak, publishing back to back while consuming, {:?}", s.open_loop));
    let peak = end_to_end::peak(
        publishers(ctx, &peak_queue, conns).await?,
        consumers(ctx, &peak_queue, conns, s.consumers).await?,
        Window::after(s.warmup, s.open_loop),
    )
    .await?;
    let rate = peak / 2.0;
    progress(&format!("aqs: end to end at {rate:.0}/s, {:?}", s.open_loop));
    let consumers = consumers(ctx, &queue, conns, s.consumers).await?;
    let publishers = publishers(ctx, &queue, conns).await?;
    let mut outcome = end_to_end::run(publishers, consumers, rate, s.open_loop).await?;
    let figures =
        group::figures_of(&mut outcome, rate).with_context(|| format!("nothing arrived ({})", outcome.note()))?;
    ctx.aqs.end_to_end = Some(figures);
    Ok(vec![
        ScenarioResult::new(SCENARIO, figures.p99_ms, "ms (p99)").latency(Some(figures.p50_ms), Some(figures.p99_ms)).note(
            format!(
                "offered {rate:.0}/s (50% of the end-to-end peak, {peak:.0}/s, measured publishing back to back while consuming), {conns} publishing connections, {} consumers (100, long poll) acking each batch with the next consume; latency from the scheduled time to receipt; {}",
                s.consumers,
                outcome.note()
            ),
        ),
    ])
}

async fn publishers(ctx: &Ctx, queue: &BenchQueue, count: usize) -> anyhow::Result<Vec<AqsPublisher>> {
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        out.push(AqsPublisher { conn: ctx.target.connect().await?, queue: queue.clone(), token: i });
    }
    Ok(out)
}

async fn consumers(
    ctx: &Ctx,
    queue: &BenchQueue,
    first_token: usize,
    count: usize,
) -> anyhow::Result<Vec<AqsConsumer>> {
    let mut out = Vec::with_capacity(count);
    for i in first_token..first_token + count {
        out.push(AqsConsumer {
            conn: ctx.target.connect().await?,
            consume: queue.consume(i, BATCH, WAIT_SECONDS)?,
            received: Vec::new(),
            to_ack: Vec::new(),
        });
    }
    Ok(out)
}

/// AQS's queue API as a `Publisher`: one request per message, or one batch request.
pub struct AqsPublisher {
    conn: Conn,
    queue: BenchQueue,
    token: usize,
}

impl Publisher for AqsPublisher {
    async fn publish(&mut self, bodies: &[Bytes]) -> anyhow::Result<()> {
        let text = |b: &Bytes| String::from_utf8_lossy(b).into_owned();
        let call = match bodies {
            [one] => self.queue.publish(self.token, &text(one))?,
            many => {
                let messages: Vec<Value> = many.iter().map(|b| json!({ "body": text(b) })).collect();
                self.queue.publish_batch(self.token, "", 0)?.with_body(json!({ "messages": messages }).to_string())
            }
        };
        self.conn.expect(&call, StatusCode::CREATED).await?;
        Ok(())
    }
}

const BATCH: u32 = 100;
const WAIT_SECONDS: u32 = 1;

/// AQS's queue API as a `Consumer`: a long-poll consume of up to 100 that carries the previous
/// batch's receipts (`ack` holds them back for it).
pub struct AqsConsumer {
    conn: Conn,
    consume: Call,
    /// The receipts of the last batch received.
    received: Vec<String>,
    /// Receipts `ack` was given, sent with the next consume.
    to_ack: Vec<String>,
}

impl Consumer for AqsConsumer {
    async fn receive(&mut self) -> anyhow::Result<Vec<Bytes>> {
        let acking = std::mem::take(&mut self.to_ack);
        let call = self.consume.with_body(consume_body(BATCH, WAIT_SECONDS, &acking));
        let answer = serde_json::from_slice::<Consumed>(&self.conn.expect(&call, StatusCode::OK).await?)?;
        let acked = answer.ack.map_or(0, |a| a.acked);
        anyhow::ensure!(acked == acking.len() as u64, "a consume acknowledged {acked} of {} receipts", acking.len());
        let mut bodies = Vec::with_capacity(answer.messages.len());
        for m in answer.messages {
            bodies.push(Bytes::from(base64::engine::general_purpose::STANDARD.decode(&m.body_base64)?));
            self.received.push(m.receipt);
        }
        Ok(bodies)
    }

    /// Holds the receipts for the next consume, so acknowledges nothing itself.
    async fn ack(&mut self) -> anyhow::Result<u64> {
        self.to_ack.append(&mut self.received);
        Ok(0)
    }
}
