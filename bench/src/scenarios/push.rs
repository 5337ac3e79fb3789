//! Push delivery against a lean handler the bench runs (`handler`), as `docs/performance.md`
//! describes: the handler's floor (the bench's own client POSTing the same message-mode bodies at
//! the same concurrency, 100), message mode (concurrency 100) and batch mode (100 per run) draining
//! a queue filled before push starts (deep enough not to run dry in the window, as BullMQ's worker
//! drains its own filled queue), compared with that floor and with a BullMQ worker (concurrency
//! 100) whose processor POSTs each job to the same kind of handler; message mode again while
//! producers keep the queue at its depth (context: the machine also carries the publishes);
//! publish → handler latency open loop at half of that path's own peak (single publishes back to
//! back, measured just before), as the end-to-end row does, and again at half of message mode's
//! rate with producers (a heavier load: those producers publish batches of 100, the latency row
//! single messages); and message mode again against a handler that answers 500 to one request in
//! ten, for the rates of first deliveries and of retries.

use super::consume_ack::PREFILL_CLIENTS;
use super::push_load::{self, Measured};
use super::{Ctx, progress};
use crate::api::{BenchQueue, Tenancy, sample_body};
use crate::client::{Call, Target};
use crate::handler::LocalHandler;
use crate::load::{Window, closed_loop};
use crate::push_api::{Mode, PushOperator};
use crate::scenario_result::{ScenarioResult, Target as Goal};
use hyper::StatusCode;
use serde_json::json;
use std::time::Duration;

/// In-flight requests: message mode's concurrency, the floor's connections, BullMQ's concurrency.
const CONCURRENCY: u32 = 100;
/// Batch mode: messages per run, and batches in flight (the push target's default).
const PER_RUN: u32 = 100;
const BATCH_CONCURRENCY: u32 = 10;
/// The shortest warm-up of a pushed lane: it also covers the dispatcher's first leases.
const MIN_WARMUP: Duration = Duration::from_millis(500);

const MESSAGE: &str = "push_message_100";
const MESSAGE_PRODUCED: &str = "push_message_100_with_producers";
const VS_BULLMQ: &str = "push_message_100_vs_bullmq";
const BATCH: &str = "push_batch_100";
const LATENCY: &str = "push_latency";
const LATENCY_KEPT_FULL: &str = "push_latency_at_half_kept_full";
const FIRST: &str = "push_retry_first_deliveries";
const RETRIES: &str = "push_retry_retries";

pub async fn run(ctx: &mut Ctx) -> Vec<ScenarioResult> {
    let handler = match LocalHandler::spawn() {
        Ok(handler) => handler,
        Err(err) => return vec![ScenarioResult::failed(MESSAGE, "msgs/s", &err)],
    };
    let (mut operator, mut tenancy) = match setup(ctx, &handler).await {
        Ok(set) => set,
        Err(err) => return vec![ScenarioResult::failed(MESSAGE, "msgs/s", &err)],
    };
    let mut push = Push { ctx, handler: &handler, operator: &mut operator, tenancy: &mut tenancy };
    let mut rows = Vec::new();
    let floor = push.floor().await;
    let bullmq = push.ctx.bullmq("push_worker_100");
    let drained = Supply::Drained(push.message_depth(floor.as_ref().ok().copied()));
    let message = push.kept_full("message", Mode::Message { concurrency: CONCURRENCY }, drained).await;
    match (&message, &floor) {
        (Ok(m), Ok(floor)) => {
            let note =
                format!("{}; floor: the bench's client POSTing the same bodies over {CONCURRENCY} connections", m.note);
            rows.push(
                m.row(MESSAGE)
                    .compared("plain client, 100 connections", Some(*floor))
                    .target(Goal::RatioAtLeast(0.5))
                    .note(note),
            );
        }
        (Err(err), _) | (_, Err(err)) => rows.push(ScenarioResult::failed(MESSAGE, "msgs/s", err)),
    }
    match &message {
        Ok(m) => rows.push(
            m.row(VS_BULLMQ).compared("bullmq worker 100, POST per job", bullmq).target(Goal::RatioAtLeast(1.5)).note(
                "BullMQ: bench.mjs drains N jobs with a Worker of concurrency 100 whose processor POSTs each job",
            ),
        ),
        Err(err) => rows.push(ScenarioResult::failed(VS_BULLMQ, "msgs/s", err)),
    }
    let drained = Supply::Drained(push.ctx.scale.push_drained);
    let batch =
        push.kept_full("batch", Mode::Batch { per_run: PER_RUN, concurrency: BATCH_CONCURRENCY }, drained).await;
    rows.push(match batch {
        Ok(b) => b.row(BATCH).compared("bullmq worker 100, POST per job", bullmq).target(Goal::RatioAtLeast(3.0)),
        Err(err) => ScenarioResult::failed(BATCH, "msgs/s", &err),
    });
    let produced = push.kept_full("produced", Mode::Message { concurrency: CONCURRENCY }, Supply::Produced).await;
    rows.push(match &produced {
        Ok(p) => p.row(MESSAGE_PRODUCED).compared("plain client, 100 connections", floor.as_ref().ok().copied()),
        Err(err) => ScenarioResult::failed(MESSAGE_PRODUCED, "msgs/s", err),
    });
    rows.push(match push.single_peak().await {
        Ok(peak) => {
            let offered = format!("half of the same path's peak, {peak:.0}/s, measured just before with the same connections publishing back to back");
            push.latency(LATENCY, peak / 2.0, &offered)
                .await
                .map(|row| row.target(Goal::Latency { p50_ms: None, p99_ms: 10.0 }))
                .unwrap_or_else(|err| ScenarioResult::failed(LATENCY, "ms (p99)", &err))
        }
        Err(err) => ScenarioResult::failed(LATENCY, "ms (p99)", &err),
    });
    rows.push(match &produced {
        Ok(m) => {
            let offered = "half of message mode's rate with producers, who publish batches of 100: single publishes at that rate load this machine far more";
            push.latency(LATENCY_KEPT_FULL, m.rate / 2.0, offered)
                .await
                .unwrap_or_else(|err| ScenarioResult::failed(LATENCY_KEPT_FULL, "ms (p99)", &err))
        }
        Err(err) => ScenarioResult::failed(LATENCY_KEPT_FULL, "ms (p99)", err),
    });
    match push.kept_full("flaky", Mode::Message { concurrency: CONCURRENCY }, Supply::Produced).await {
        Ok(f) => {
            let (first, retries) =
                (f.measured.per_second(f.measured.seen.first), f.measured.per_second(f.measured.seen.retries));
            let answered =
                format!("handler answered 500 to {} of {} requests", f.measured.seen.failed, f.measured.seen.requests);
            rows.push(ScenarioResult::new(FIRST, first, "msgs/s").note(format!("{answered}; {}", f.note)));
            rows.push(ScenarioResult::new(RETRIES, retries, "msgs/s").note(
                "redeliveries the handler saw after a 500, each after the default backoff (about 0.5–1 s for the first retry)",
            ));
        }
        Err(err) => {
            rows.push(ScenarioResult::failed(FIRST, "msgs/s", &err));
            rows.push(ScenarioResult::failed(RETRIES, "msgs/s", &err));
        }
    }
    // What a lane that failed half-way left.
    push.retire_lanes().await;
    rows
}

async fn setup(ctx: &Ctx, handler: &LocalHandler) -> anyhow::Result<(PushOperator, Tenancy)> {
    let operator = PushOperator::new(&ctx.target, &handler.base_url).await?;
    let tenancy = operator.tenancy(&ctx.target).await?;
    Ok((operator, tenancy))
}

struct Push<'a> {
    ctx: &'a Ctx,
    handler: &'a LocalHandler,
    operator: &'a mut PushOperator,
    tenancy: &'a mut Tenancy,
}

/// How a pushed lane's queue is supplied.
#[derive(Debug, Clone, Copy)]
enum Supply {
    /// Filled with this many messages before push starts, none published after: the dispatcher
    /// drains it, as BullMQ's worker drains its filled queue, and the machine carries only the
    /// deliveries, as in the floor.
    Drained(usize),
    /// Kept at the scale's depth by its producers publishing batches of 100 through the window.
    Produced,
}

/// A kept-full run's figures and what to say about them.
struct KeptFull {
    measured: Measured,
    rate: f64,
    note: String,
}

impl KeptFull {
    fn row(&self, scenario: &str) -> ScenarioResult {
        ScenarioResult::new(scenario, self.rate, "msgs/s").note(self.note.clone())
    }
}

impl Push<'_> {
    /// The bench's client POSTing message-mode bodies straight to the handler: what it takes.
    async fn floor(&self) -> anyhow::Result<f64> {
        let s = &self.ctx.scale;
        let target = Target::parse(&self.handler.base_url).await?;
        progress(&format!("floor: POST to the push handler, {CONCURRENCY} connections, {:?}", s.push));
        let body = json!({
            "id": uuid::Uuid::new_v4().simple().to_string(),
            "queue": "bench-push",
            "payload": sample_body(),
            "attempts": 0,
        })
        .to_string();
        let call = Call::post("/floor", None, body)?;
        let calls = vec![call; CONCURRENCY as usize];
        let tally = closed_loop(&target, calls, Window::after(s.warmup, s.push), StatusCode::OK, 1).await;
        tally.ensure_progress("the handler's floor")?;
        Ok(tally.msgs as f64 / s.push.as_secs_f64())
    }

    /// A queue with one token per connection that publishes to it (tokens have their own limits).
    async fn queue(&mut self, lane: &str, connections: usize) -> anyhow::Result<BenchQueue> {
        self.tenancy.queue(&format!("push-{lane}"), connections.max(1)).await
    }

    /// How many messages message mode drains: what the handler's floor takes through the warm-up,
    /// the first delivery's wait and the window. Message mode sends what the floor's client sends,
    /// one message a request at the same concurrency, so it cannot run dry short of the floor's
    /// rate; if it does, its note says so and its rate is a lower bound. No deeper than needed: a
    /// longer stream costs Redis more per entry it deletes.
    fn message_depth(&self, floor: Option<f64>) -> usize {
        let s = &self.ctx.scale;
        let seconds = (s.warmup.max(MIN_WARMUP) + s.push).as_secs_f64() + 1.0;
        let depth = floor.map_or(0.0, |rate| rate * seconds).ceil() as usize;
        depth.clamp(s.depth, s.push_drained)
    }

    async fn kept_full(&mut self, lane: &str, mode: Mode, supply: Supply) -> anyhow::Result<KeptFull> {
        let s = self.ctx.scale.clone();
        let (depth, producers) = match supply {
            Supply::Drained(depth) => (depth, 0),
            Supply::Produced => (s.depth, s.producers),
        };
        let queue = self.queue(lane, producers.max(PREFILL_CLIENTS)).await?;
        let url = format!("{}/{lane}", self.handler.base_url);
        let counters = &self.handler.counters;
        let start = self.operator.start(&queue.slug, &url, mode);
        // The warm-up also covers the dispatcher's first leases.
        let load = push_load::KeptFull { depth, producers, warmup: s.warmup.max(MIN_WARMUP), duration: s.push };
        let measured =
            push_load::kept_full(&self.ctx.target, &queue, (counters, lane), load, &self.ctx.redis_url, start).await;
        // Whatever happened, so the dispatcher does not go on delivering during the next run.
        let stopped = self.end_lane(&queue.slug).await;
        let measured = measured?;
        stopped?;
        if measured.seen.messages() == 0 {
            anyhow::bail!("the handler saw no delivery on {lane} in the window");
        }
        let rate = measured.rate();
        let supplied = match supply {
            Supply::Drained(_) if measured.depth_end == 0 => format!(
                "{} messages queued before push started, none after; it ran dry: the rate is a lower bound",
                measured.queued
            ),
            Supply::Drained(_) => format!(
                "{} messages queued before push started, none after, as BullMQ's worker drains its queue ({} still waiting at the end)",
                measured.queued, measured.depth_end
            ),
            Supply::Produced => format!(
                "{producers} producers publishing {}/s kept {depth} waiting (at the end: {})",
                measured.per_second(measured.produced.msgs).round(),
                measured.depth_end
            ),
        };
        let note = format!(
            "{} POSTs carrying {} messages in {:.1} s; {supplied}; {}{}",
            measured.seen.requests,
            measured.seen.messages(),
            measured.seconds,
            measured.redis,
            measured.produced.error_note()
        );
        Ok(KeptFull { measured, rate, note })
    }

    /// Turns push off on the lane's queue, then deletes it (`retire_lanes`); the error is the
    /// stop's.
    async fn end_lane(&mut self, slug: &str) -> anyhow::Result<()> {
        let stopped = self.operator.stop(slug).await;
        self.retire_lanes().await;
        stopped
    }

    /// Deletes the lanes' queues made so far, with what is still queued, so that the next lane
    /// runs beside a Redis holding only its own messages: a drained lane leaves up to a million
    /// or more (hundreds of MB), whose AOF rewrite would fork and write them during the latency
    /// lanes. Dispatchers stop within a second of push going off; a queue deleted before would
    /// make its dispatcher log that it cannot lease. With nothing left (every lane ended on its
    /// own) there is nothing to wait for.
    async fn retire_lanes(&mut self) {
        if !self.tenancy.has_undeleted() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1500)).await;
        if let Err(err) = self.tenancy.delete_made().await {
            progress(&format!("could not delete a push lane's queue: {err:#}"));
        }
    }

    /// A queue of `lane` pushed in message mode to the handler's `lane` path, with one token per
    /// connection, once its dispatcher runs (a first message has reached the handler).
    async fn pushing_single(&mut self, lane: &str, connections: usize) -> anyhow::Result<BenchQueue> {
        let queue = self.queue(lane, connections).await?;
        let url = format!("{}/{lane}", self.handler.base_url);
        self.operator.start(&queue.slug, &url, Mode::Message { concurrency: CONCURRENCY }).await?;
        queue.client(&self.ctx.target, 0).publish(aqs_client::NewMessage::raw_json(sample_body())).await?;
        push_load::wait_for_first(&self.handler.counters, lane, 1).await?;
        Ok(queue)
    }

    /// The rate at which single publishes back to back over the latency row's connections reach
    /// the handler: the peak of the path whose latency that row times.
    async fn single_peak(&mut self) -> anyhow::Result<f64> {
        let s = self.ctx.scale.clone();
        let lane = "latency-peak";
        let queue = self.pushing_single(lane, s.single_connections).await?;
        let counters = &self.handler.counters;
        progress(&format!("aqs: push latency path's peak, single publishes back to back, {:?}", s.push));
        let window = Window::after(s.warmup, s.push);
        let run =
            push_load::single_peak(&self.ctx.target, &queue, (counters, lane), s.single_connections, window).await;
        let stopped = self.end_lane(&queue.slug).await;
        let (peak, tally) = run?;
        stopped?;
        if peak == 0.0 {
            anyhow::bail!("the handler saw no delivery on {lane} in the window ({})", tally.error_note());
        }
        Ok(peak)
    }

    /// Publish → handler latency, open loop at `rate` single publishes per second (`offered` says
    /// what that rate is).
    async fn latency(&mut self, scenario: &str, rate: f64, offered: &str) -> anyhow::Result<ScenarioResult> {
        let s = self.ctx.scale.clone();
        let lane = scenario;
        let conns = s.single_connections;
        let queue = self.pushing_single(lane, conns).await?;
        let counters = &self.handler.counters;
        progress(&format!("aqs: push latency at {rate:.0}/s, {:?}", s.push));
        let run = push_load::open_loop(&self.ctx.target, &queue, counters, lane, conns, rate, s.push).await;
        let stopped = self.end_lane(&queue.slug).await;
        let (mut latencies, mut tally) = run?;
        stopped?;
        let (p50, p99) = latencies.p50_p99_ms();
        let p99 = p99.ok_or_else(|| anyhow::anyhow!("the handler timed no delivery ({})", tally.error_note()))?;
        let answered = tally.latencies.p50_p99_text().unwrap_or_else(|| "not timed".to_owned());
        Ok(ScenarioResult::new(scenario, p99, "ms (p99)").latency(p50, Some(p99)).note(format!(
            "offered {rate:.0}/s ({offered}), {conns} connections publishing one message each, push concurrency {CONCURRENCY}; {} of {} published messages timed at the handler, from the scheduled publish; the publishes' own answers, from the same schedule: {answered}{}",
            latencies.len(),
            tally.msgs,
            tally.error_note()
        )))
    }
}
