//! Scenario 5: Redis memory per ready message beyond its payload: `used_memory` before and after
//! storing N ready messages on a fresh queue, divided by N, minus the body's length.

use super::{Ctx, progress};
use crate::api::sample_body;
use crate::redis_stats::RedisProbe;
use crate::scenario_result::{ScenarioResult, Target};
use hyper::StatusCode;
use std::time::Duration;

const SCENARIO: &str = "memory_per_message";
const BATCH: usize = 100;
const CONNECTIONS: usize = 4;

pub async fn run(ctx: &mut Ctx) -> Vec<ScenarioResult> {
    match measure(ctx).await {
        Ok(rows) => rows,
        Err(err) => vec![ScenarioResult::failed(SCENARIO, "B/msg", &err)],
    }
}

async fn measure(ctx: &mut Ctx) -> anyhow::Result<Vec<ScenarioResult>> {
    let n = ctx.scale.memory_messages.div_ceil(BATCH * CONNECTIONS) * BATCH * CONNECTIONS;
    let queue = ctx.queue("memory", CONNECTIONS).await?;
    let body = sample_body();
    let mut probe = RedisProbe::connect(&ctx.redis_url).await?;
    progress(&format!("aqs: memory of {n} ready messages of {} bytes", body.len()));
    // Let the previous scenario's buffers and lazy frees settle first.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = probe.used_memory().await?;
    let tasks: Vec<_> = (0..CONNECTIONS)
        .map(|i| {
            let call = queue.publish_batch(i, &body, BATCH)?;
            let target = ctx.target.clone();
            let batches = n / (BATCH * CONNECTIONS);
            Ok(tokio::spawn(async move {
                let mut conn = target.connect().await?;
                for _ in 0..batches {
                    conn.expect(&call, StatusCode::CREATED).await?;
                }
                anyhow::Ok(())
            }))
        })
        .collect::<anyhow::Result<_>>()?;
    for t in tasks {
        t.await??;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = probe.used_memory().await?;
    let per_message = (after as f64 - before as f64) / n as f64;
    let overhead = per_message - body.len() as f64;
    ctx.aqs.memory_per_message = Some(per_message);
    Ok(vec![ScenarioResult::new(SCENARIO, overhead, "B/msg over payload").target(Target::AtMost(200.0)).note(format!(
        "{n} ready messages of {} B: used_memory +{} B = {per_message:.1} B/msg",
        body.len(),
        after as i64 - before as i64
    ))])
}
