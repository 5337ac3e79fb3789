/**
 * The consumer loop: long-poll a batch, give it to the handler, settle every message by what the
 * handler decided (see batch.ts), repeat. Returned messages go back at once; acknowledged ones go
 * with the next long poll (`consumeAndAck`: one request instead of two). `concurrency` loops run
 * side by side, each with its own batch. Stopping (the signal) ends each loop's long poll at once
 * and lets each loop finish the batch in hand and acknowledge it; a batch that arrives after the
 * stop was asked for is returned at once (nack without delay), never left to its lease. The handler gets `(batch, env, ctx)`; what it handed to
 * `ctx.waitUntil` is awaited before the batch is settled.
 */

import { MessageBatch, type Decision, type Message } from "./batch.js";
import { BATCH_MAX, type Queue } from "./queue.js";
import { newMetrics, type Metrics } from "./metrics.js";
import { sleep } from "./http.js";
import type { AckAnswer } from "./wire.js";
import { Context, type ExecutionContext } from "./context.js";

export type QueueHandler<Env = unknown, Body = unknown> = (
  batch: MessageBatch<Body>,
  env: Env,
  ctx: ExecutionContext,
) => unknown;

export interface ConsumerOptions<Env> {
  /** Messages per batch, 1 to 100 (default 10). */
  messagesPerRun?: number;
  /** Long-poll wait per consume, 0 to 20 s (default 20). */
  waitSeconds?: number;
  /** The lease per message; the queue's visibility timeout when left out. */
  visibilitySeconds?: number;
  /** Batches handled at once (default 1). */
  concurrency?: number;
  /**
   * The delay of a `retry()` that names none and of a throw (a wrangler consumer's `retry_delay`);
   * left out, `retry()` is immediate and a throw backs off exponentially.
   */
  retryDelaySeconds?: number;
  /** The second argument of the handler. */
  env?: Env;
  /** Aborting it ends the long polls at once and stops the consumer after the batches in hand. */
  signal?: AbortSignal;
  /** Counters to add to (a fresh set when left out). */
  metrics?: Metrics;
  /** Told about a handler's throw or a failed consume (default: printed to stderr). */
  onError?: (error: unknown) => void;
}

/** Runs until `signal` aborts; resolves once every loop has settled its last batch. */
export async function consume<Env, Body = unknown>(
  queue: Queue,
  handler: QueueHandler<Env, Body>,
  options: ConsumerOptions<Env> = {},
): Promise<Metrics> {
  const metrics = options.metrics ?? newMetrics();
  const loops = Math.max(1, Math.floor(options.concurrency ?? 1));
  await Promise.all(Array.from({ length: loops }, () => loop(queue, handler, options, metrics)));
  return metrics;
}

async function loop<Env, Body>(
  queue: Queue,
  handler: QueueHandler<Env, Body>,
  options: ConsumerOptions<Env>,
  metrics: Metrics,
): Promise<void> {
  const report = options.onError ?? ((error: unknown) => console.error("aqs consumer:", error));
  let failures = 0;
  const signal = options.signal;
  const poll = {
    maxMessages: options.messagesPerRun ?? 10,
    waitSeconds: options.waitSeconds ?? 20,
    ...(options.visibilitySeconds === undefined ? {} : { visibilitySeconds: options.visibilitySeconds }),
    ...(signal === undefined ? {} : { signal }),
  };
  // The last batch's acknowledgements, carried by the next long poll.
  let acks: string[] = [];
  while (!signal?.aborted) {
    let wire;
    try {
      if (acks.length === 0) {
        wire = await queue.consume(poll);
      } else {
        const answer = await queue.consumeAndAck(acks, poll);
        acks = [];
        counted(answer.ack, metrics, report);
        wire = answer.messages;
      }
      failures = 0;
    } catch (error) {
      if (signal?.aborted) break; // the stop ended the poll
      report(error);
      failures++;
      await sleep(Math.min(250 * 2 ** failures, 10_000), signal, true);
      continue;
    }
    if (wire.length === 0) continue;
    if (signal?.aborted) {
      // Fetched but not started: back to the queue now rather than when the lease runs out.
      await settle(queue, wire.map((m) => m.receipt), [], metrics, report);
      break;
    }
    const batch = new MessageBatch<Body>(queue.name, wire, options.retryDelaySeconds);
    acks = await handle(queue, batch, handler, options.env as Env, metrics, report);
  }
  // Stopping: the last batch is acknowledged now. A poll the stop cut short may have acknowledged
  // it already; its receipts then answer lease_lost, which is no news.
  await settle(queue, [], acks, metrics, report, {}, true);
}

/** Counts what an acknowledgement did and reports the receipts that did nothing. */
function counted(answer: AckAnswer, metrics: Metrics, report: (error: unknown) => void, quiet = false): void {
  metrics.messages_acked += answer.acked;
  for (const failure of answer.failed) {
    if (quiet && failure.error === "lease_lost") continue;
    report(new Error(`ack ${failure.error}: ${failure.message}`));
  }
}

/** Calls the handler with one batch and settles every message by its outcome. */
export async function runOne<Env, Body>(
  queue: Queue,
  batch: MessageBatch<Body>,
  handler: QueueHandler<Env, Body>,
  env: Env,
  metrics: Metrics,
  report: (error: unknown) => void,
): Promise<void> {
  const acks = await handle(queue, batch, handler, env, metrics, report);
  await settle(queue, [], acks, metrics, report);
}

/**
 * Calls the handler with one batch and returns the messages it retries to the queue; answers the
 * receipts of those it acknowledges, for the caller to settle.
 */
async function handle<Env, Body>(
  queue: Queue,
  batch: MessageBatch<Body>,
  handler: QueueHandler<Env, Body>,
  env: Env,
  metrics: Metrics,
  report: (error: unknown) => void,
): Promise<string[]> {
  metrics.runs++;
  let threw = false;
  let error: unknown;
  const ctx = new Context();
  try {
    await handler(batch, env, ctx);
  } catch (caught) {
    threw = true;
    error = caught;
    report(caught);
  }
  await ctx.drain(report);
  const acks: string[] = [];
  const retries: Array<[Message<Body>, Extract<Decision, { kind: "retry" }>]> = [];
  for (const [message, decision] of batch.outcome(threw)) {
    if (decision.kind === "ack") acks.push(message.receipt);
    else retries.push([message, decision]);
  }
  const reason = threw ? describe(error) : "retried by the handler";
  const byDelay = new Map<number, string[]>();
  for (const [message, decision] of retries) {
    const list = byDelay.get(decision.delaySeconds) ?? [];
    list.push(message.receipt);
    byDelay.set(decision.delaySeconds, list);
  }
  for (const [delaySeconds, receipts] of byDelay) {
    await settle(queue, receipts, [], metrics, report, { delaySeconds, error: reason });
  }
  return acks;
}

/**
 * Nacks `nacks` (with `retry`'s delay) and acks `acks`, 100 receipts per request; `quiet` leaves
 * out the acknowledgements that were made already (lease_lost).
 */
async function settle(
  queue: Queue,
  nacks: string[],
  acks: string[],
  metrics: Metrics,
  report: (error: unknown) => void,
  retry: { delaySeconds?: number; error?: string } = {},
  quiet = false,
): Promise<void> {
  for (let i = 0; i < acks.length; i += BATCH_MAX) {
    try {
      counted(await queue.ack(acks.slice(i, i + BATCH_MAX)), metrics, report, quiet);
    } catch (error) {
      // The lease runs out and the message is delivered again: nothing is lost.
      report(error);
    }
  }
  for (let i = 0; i < nacks.length; i += BATCH_MAX) {
    try {
      const answer = await queue.nack(nacks.slice(i, i + BATCH_MAX), retry);
      metrics.messages_retried += answer.nacked;
      for (const failure of answer.failed) report(new Error(`nack ${failure.error}: ${failure.message}`));
    } catch (error) {
      report(error);
    }
  }
}

function describe(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.slice(0, 1000);
}
