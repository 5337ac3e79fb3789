/**
 * The runner behind `aqs-worker`: loads a Worker module, gives its `queue(batch, env, ctx)` each
 * consumed queue's batches, serves its `fetch(request, env, ctx)` over HTTP when it exports one,
 * and counts runs, messages acked and retried, and requests (a summary line per minute, and JSON on
 * `127.0.0.1:<metricsPort>`). Aborting `signal` ends the long polls at once, finishes the batches
 * in hand (and what `fetch` handed to `ctx.waitUntil`), then resolves. `runWorker` is the
 * single-queue form (`aqs-worker MODULE --queue SLUG ...`); project.ts runs a wrangler project
 * through the same `runPlan`.
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { SendOptions } from "./body.js";
import { bundle, isTypeScript } from "./bundle.js";
import { consume, type QueueHandler } from "./consumer.js";
import { Context } from "./context.js";
import { newMetrics, summary, type Metrics } from "./metrics.js";
import { Queue, type BatchEntry, type SendBatchOptions } from "./queue.js";
import type { Published } from "./wire.js";

export type Mode = "consume" | "send" | "both";

/** `env[alias]` in a send mode: the queue as a producer. */
export interface Binding {
  send(body: unknown, options?: SendOptions): Promise<Published>;
  sendBatch(entries: Iterable<BatchEntry>, options?: SendBatchOptions): Promise<Published[]>;
}

type FetchHandler = (request: Request, env: Record<string, unknown>, ctx: Context) => Response | Promise<Response>;

/** What every way of running a Worker shares: the `fetch` server, the counters and the status lines. */
export interface RunnerOptions {
  /** Port of the `fetch` server (0 picks a free one; default 8787, as `wrangler dev`). */
  port?: number;
  host?: string;
  /** Serves the counters as JSON on 127.0.0.1 at this port (0 picks a free one). */
  metricsPort?: number;
  /** Where status lines go (default stderr). */
  log?: (line: string) => void;
  signal?: AbortSignal;
  /** The summary line's period (default one minute). */
  summaryEveryMs?: number;
}

/** Status lines to stderr, prefixed with the runner's name. */
export function defaultLog(line: string): void {
  process.stderr.write(`aqs-worker: ${line}\n`);
}

export interface WorkerOptions extends RunnerOptions {
  /** Path of the Worker module (exports `queue` and/or `fetch`, or a default object holding them). */
  module: string;
  url: string;
  token: string;
  /** The queue's slug. */
  queue: string;
  /** The name of the binding in `env` (default `QUEUE`). */
  alias?: string;
  mode?: Mode;
  messagesPerRun?: number;
  waitSeconds?: number;
  visibilitySeconds?: number;
  /** Batches handled at once (default 1). */
  concurrency?: number;
}

export async function runWorker(options: WorkerOptions): Promise<Metrics> {
  const mode = options.mode ?? "consume";
  const alias = options.alias ?? "QUEUE";
  const handlers = await loadWorker(options.module);
  const consuming = mode === "consume" || mode === "both";
  if (consuming && handlers.queue === undefined) {
    throw new Error(`${options.module} exports no queue(batch, env) function; mode ${mode} needs one`);
  }
  if (!consuming && handlers.fetch === undefined) {
    throw new Error(`${options.module} exports no fetch(request, env) function: in send mode there is nothing to run`);
  }
  const queue = new Queue({ url: options.url, token: options.token, queue: options.queue });
  const env: Record<string, unknown> = {};
  if (mode === "send" || mode === "both") env[alias] = binding(queue);
  const consumers: ConsumerPlan[] = [];
  if (consuming) {
    const plan: ConsumerPlan = { queue };
    if (options.messagesPerRun !== undefined) plan.messagesPerRun = options.messagesPerRun;
    if (options.waitSeconds !== undefined) plan.waitSeconds = options.waitSeconds;
    if (options.visibilitySeconds !== undefined) plan.visibilitySeconds = options.visibilitySeconds;
    if (options.concurrency !== undefined) plan.concurrency = options.concurrency;
    consumers.push(plan);
  }
  return runPlan({ ...options, handlers, env, consumers });
}

/** A Worker module's handlers. */
export interface Handlers {
  queue?: QueueHandler<Record<string, unknown>>;
  fetch?: FetchHandler;
}

/**
 * Imports a Worker module (bundled first when it is TypeScript) and finds its handlers: named
 * exports, or methods of the default export (called on it, so `this` works as on Cloudflare).
 */
export async function loadWorker(module: string, bundled = false): Promise<Handlers> {
  const path = resolve(module);
  const file = bundled || !isTypeScript(path) ? path : await bundle(path, process.cwd());
  const loaded = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  const fallback = loaded.default as Record<string, unknown> | undefined;
  const find = (name: string): ((...args: unknown[]) => unknown) | undefined => {
    if (typeof loaded[name] === "function") return loaded[name] as (...args: unknown[]) => unknown;
    const method = fallback?.[name];
    return typeof method === "function" ? (method as (...args: unknown[]) => unknown).bind(fallback) : undefined;
  };
  const handlers: Handlers = {};
  const queue = find("queue");
  const fetch = find("fetch");
  if (queue !== undefined) handlers.queue = queue as QueueHandler<Record<string, unknown>>;
  if (fetch !== undefined) handlers.fetch = fetch as FetchHandler;
  return handlers;
}

/** `env[name]` for a producer: `send` and `sendBatch`, with `delaySeconds` for sends that name none. */
export function binding(queue: Queue, delaySeconds?: number): Binding {
  if (delaySeconds === undefined) {
    return { send: (body, options) => queue.send(body, options), sendBatch: (entries, options) => queue.sendBatch(entries, options) };
  }
  return {
    send: (body, options = {}) => queue.send(body, { ...options, delaySeconds: options.delaySeconds ?? delaySeconds }),
    sendBatch: (entries, options = {}) => queue.sendBatch(entries, { ...options, delaySeconds: options.delaySeconds ?? delaySeconds }),
  };
}

/** One consumer loop set: a queue and how to poll it. */
export interface ConsumerPlan {
  queue: Queue;
  messagesPerRun?: number;
  waitSeconds?: number;
  visibilitySeconds?: number;
  concurrency?: number;
  retryDelaySeconds?: number;
}

export interface Plan extends RunnerOptions {
  handlers: Handlers;
  env: Record<string, unknown>;
  consumers: ConsumerPlan[];
}

/** Serves `fetch`, runs every consumer, and resolves once the signal stopped them all. */
export async function runPlan(plan: Plan): Promise<Metrics> {
  const log = plan.log ?? defaultLog;
  const { env } = plan;
  const metrics = newMetrics();
  const servers: Server[] = [];
  const background = new Set<Promise<void>>();
  if (plan.handlers.fetch !== undefined) {
    const server = serveFetch(plan.handlers.fetch, env, metrics, log, background);
    const port = await listen(server, plan.port ?? 8787, plan.host ?? "127.0.0.1");
    log(`serving fetch on http://${plan.host ?? "127.0.0.1"}:${port}/`);
    servers.push(server);
  }
  if (plan.metricsPort !== undefined) {
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(metrics));
    });
    const port = await listen(server, plan.metricsPort, "127.0.0.1");
    log(`metrics on http://127.0.0.1:${port}/`);
    servers.push(server);
  }
  const ticker = setInterval(() => log(summary(metrics)), plan.summaryEveryMs ?? 60_000);
  ticker.unref();

  const handler = plan.handlers.queue;
  if (plan.consumers.length > 0 && handler !== undefined) {
    await Promise.all(
      plan.consumers.map((consumer) => {
        const retry = consumer.retryDelaySeconds === undefined ? "" : `, retry delay ${consumer.retryDelaySeconds} s`;
        log(
          `consuming ${consumer.queue.name}: ${consumer.messagesPerRun ?? 10} per run, wait ${consumer.waitSeconds ?? 20} s, ` +
            `concurrency ${consumer.concurrency ?? 1}${retry}`,
        );
        return consume(consumer.queue, handler, {
          env,
          metrics,
          ...(consumer.messagesPerRun === undefined ? {} : { messagesPerRun: consumer.messagesPerRun }),
          ...(consumer.waitSeconds === undefined ? {} : { waitSeconds: consumer.waitSeconds }),
          ...(consumer.visibilitySeconds === undefined ? {} : { visibilitySeconds: consumer.visibilitySeconds }),
          ...(consumer.concurrency === undefined ? {} : { concurrency: consumer.concurrency }),
          ...(consumer.retryDelaySeconds === undefined ? {} : { retryDelaySeconds: consumer.retryDelaySeconds }),
          ...(plan.signal === undefined ? {} : { signal: plan.signal }),
          onError: (error) => log(`error: ${error instanceof Error ? error.message : String(error)}`),
        });
      }),
    );
  } else {
    await new Promise<void>((resolveStop) => {
      if (plan.signal?.aborted) resolveStop();
      plan.signal?.addEventListener("abort", () => resolveStop(), { once: true });
    });
  }
  clearInterval(ticker);
  await Promise.all(
    servers.map(
      (server) =>
        new Promise<void>((done) => {
          server.close(() => done());
          // Node 18 waits for idle keep-alive connections to time out; 19 and later close them.
          server.closeIdleConnections();
        }),
    ),
  );
  await Promise.all(background);
  log(`stopped: ${summary(metrics)}`);
  return metrics;
}

/** The HTTP server for `fetch`; what a request hands to `ctx.waitUntil` is tracked in `background`. */
function serveFetch(
  handler: FetchHandler,
  env: Record<string, unknown>,
  metrics: Metrics,
  log: (line: string) => void,
  background: Set<Promise<void>>,
): Server {
  const report = (error: unknown) => log(error instanceof Error ? error.message : String(error));
  return createServer((req, res) => {
    metrics.requests++;
    const ctx = new Context();
    answer(handler, env, ctx, req, res)
      .catch((error: unknown) => {
        const passing = ctx.passThrough ? " (passThroughOnException: there is no origin to pass it to)" : "";
        log(`fetch threw${passing}: ${error instanceof Error ? error.message : String(error)}`);
        if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
        res.end("internal error");
      })
      .finally(() => {
        const waiting = ctx.drain(report).finally(() => background.delete(waiting));
        background.add(waiting);
      });
  });
}

async function answer(
  handler: FetchHandler,
  env: Record<string, unknown>,
  ctx: Context,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (Array.isArray(value)) for (const one of value) headers.append(name, one);
    else if (value !== undefined) headers.set(name, value);
  }
  const method = req.method ?? "GET";
  const url = new URL(req.url ?? "/", `http://${req.headers.host ?? "127.0.0.1"}`);
  const hasBody = method !== "GET" && method !== "HEAD";
  const request = new Request(url, { method, headers, ...(hasBody ? { body: Buffer.concat(chunks) } : {}) });
  const response = await handler(request, env, ctx);
  const outHeaders: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    outHeaders[name] = value;
  });
  res.writeHead(response.status, outHeaders);
  res.end(Buffer.from(await response.arrayBuffer()));
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolveListen, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolveListen((server.address() as AddressInfo).port));
  });
}
