//! Scenario 4: long-poll wake-up. A consumer waits on an empty queue (max_wait 20 s); once it has
//! had time to park, a message is published; the trip runs from just before the publish request
//! is sent to the consume answer arriving. One trip at a time, so each wake-up is alone.

use super::{Ctx, progress};
use crate::api::{Consumed, ack_body, timed_body};
use crate::latency::Latencies;
use crate::scenario_result::{ScenarioResult, Target};
use anyhow::Context;
use hyper::StatusCode;
use std::time::{Duration, Instant};

const SCENARIO: &str = "long_poll_wakeup";
/// Time for the consume request to reach the server and park before the publish.
const SETTLE: Duration = Duration::from_millis(10);

pub async fn run(ctx: &mut Ctx) -> Vec<ScenarioResult> {
    match measure(ctx).await {
        Ok(rows) => rows,
        Err(err) => vec![ScenarioResult::failed(SCENARIO, "ms", &err)],
    }
}

async fn measure(ctx: &mut Ctx) -> anyhow::Result<Vec<ScenarioResult>> {
    let trips = ctx.scale.wakeups;
    let queue = ctx.queue("wakeup", 2).await?;
    progress(&format!("aqs: long-poll wake-up, {trips} trips"));
    let mut publisher = ctx.target.connect().await?;
    let mut consumer = Some(ctx.target.connect().await?);
    let consume = queue.consume(0, 1, 20)?;
    let ack = queue.ack(0)?;
    let mut latencies = Latencies::new();
    for _ in 0..trips {
        let mut conn = consumer.take().context("consumer connection lost")?;
        let call = consume.clone();
        let waiting = tokio::spawn(async move {
            let answer = conn.expect(&call, StatusCode::OK).await;
            (conn, Instant::now(), answer)
        });
        tokio::time::sleep(SETTLE).await;
        let (body, sent) = timed_body();
        publisher.expect(&queue.publish(1, &body)?, StatusCode::CREATED).await?;
        let (mut conn, received, answer) = waiting.await?;
        let mut delivered = serde_json::from_slice::<Consumed>(&answer?)?.messages;
        let message = delivered.pop().context("the long poll returned without the message")?;
        anyhow::ensure!(message.sent_at().is_some(), "the delivered body is not the published one");
        latencies.record(received - sent);
        conn.expect(&ack.with_body(ack_body(&[message.receipt])), StatusCode::OK).await?;
        consumer = Some(conn);
    }
    let (p50, p99) = latencies.p50_p99_ms();
    Ok(vec![
        ScenarioResult::new(SCENARIO, p50.unwrap_or_default(), "ms (p50)")
            .latency(p50, p99)
            .target(Target::Latency { p50_ms: Some(2.0), p99_ms: 10.0 })
            .note(format!("{trips} sequential trips, publish request sent → consume answer received")),
    ])
}
