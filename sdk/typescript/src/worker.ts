/**
 * The runner behind `aqs-worker`: loads a Worker module, gives its `queue(batch, env)` the queue's
 * batches (consume and both modes), serves its `fetch(request, env)` over HTTP when it exports
 * one, and counts runs, messages acked and retried, and requests (a summary line per minute, and
 * JSON on `127.0.0.1:<metricsPort>`). Aborting `signal` ends the long polls at once, finishes the
 * batches in hand, then resolves.
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { SendOptions } from "./body.js";
import { consume, type QueueHandler } from "./consumer.js";
import { newMetrics, summary, type Metrics } from "./metrics.js";
import { Queue, type BatchEntry } from "./queue.js";
import type { Published } from "./wire.js";

export type Mode = "consume" | "send" | "both";

/** `env[alias]` in a send mode: the queue as a producer. */
export interface Binding {
  send(body: unknown, options?: SendOptions): Promise<Published>;
  sendBatch(entries: readonly BatchEntry[]): Promise<Published[]>;
}

type FetchHandler = (request: Request, env: Record<string, unknown>) => Response | Promise<Response>;

export interface WorkerOptions {
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
  /** Port of the `fetch` server (0 picks a free one; default 8787). */
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

export async function runWorker(options: WorkerOptions): Promise<Metrics> {
  const log = options.log ?? ((line: string) => process.stderr.write(`aqs-worker: ${line}\n`));
  const mode = options.mode ?? "consume";
  const alias = options.alias ?? "QUEUE";
  const loaded = (await import(pathToFileURL(resolve(options.module)).href)) as Record<string, unknown>;
  const exported = (name: string): unknown => {
    const fallback = loaded.default as Record<string, unknown> | undefined;
    return loaded[name] ?? fallback?.[name];
  };
  const queueHandler = exported("queue");
  const fetchHandler = exported("fetch");
  const consuming = mode === "consume" || mode === "both";
  if (consuming && typeof queueHandler !== "function") {
    throw new Error(`${options.module} exports no queue(batch, env) function; mode ${mode} needs one`);
  }
  if (!consuming && typeof fetchHandler !== "function") {
    throw new Error(`${options.module} exports no fetch(request, env) function: in send mode there is nothing to run`);
  }

  const queue = new Queue({ url: options.url, token: options.token, queue: options.queue });
  const env: Record<string, unknown> = {};
  if (mode === "send" || mode === "both") {
    const binding: Binding = {
      send: (body, sendOptions) => queue.send(body, sendOptions),
      sendBatch: (entries) => queue.sendBatch(entries),
    };
    env[alias] = binding;
  }
  const metrics = newMetrics();
  const servers: Server[] = [];
  if (typeof fetchHandler === "function") {
    const server = serveFetch(fetchHandler as FetchHandler, env, metrics, log);
    const port = await listen(server, options.port ?? 8787, options.host ?? "127.0.0.1");
    log(`serving fetch on http://${options.host ?? "127.0.0.1"}:${port}/`);
    servers.push(server);
  }
  if (options.metricsPort !== undefined) {
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(metrics));
    });
    const port = await listen(server, options.metricsPort, "127.0.0.1");
    log(`metrics on http://127.0.0.1:${port}/`);
    servers.push(server);
  }
  const ticker = setInterval(() => log(summary(metrics)), options.summaryEveryMs ?? 60_000);
  ticker.unref();

  if (consuming) {
    log(
      `consuming ${options.queue}: ${options.messagesPerRun ?? 10} per run, wait ${options.waitSeconds ?? 20} s, ` +
        `concurrency ${options.concurrency ?? 1}`,
    );
    await consume(queue, queueHandler as QueueHandler<Record<string, unknown>>, {
      env,
      metrics,
      ...(options.messagesPerRun === undefined ? {} : { messagesPerRun: options.messagesPerRun }),
      ...(options.waitSeconds === undefined ? {} : { waitSeconds: options.waitSeconds }),
      ...(options.visibilitySeconds === undefined ? {} : { visibilitySeconds: options.visibilitySeconds }),
      ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      onError: (error) => log(`error: ${error instanceof Error ? error.message : String(error)}`),
    });
  } else {
    await new Promise<void>((resolveStop) => {
      if (options.signal?.aborted) resolveStop();
      options.signal?.addEventListener("abort", () => resolveStop(), { once: true });
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
  log(`stopped: ${summary(metrics)}`);
  return metrics;
}

function serveFetch(
  handler: FetchHandler,
  env: Record<string, unknown>,
  metrics: Metrics,
  log: (line: string) => void,
): Server {
  return createServer((req, res) => {
    metrics.requests++;
    answer(handler, env, req, res).catch((error: unknown) => {
      log(`fetch threw: ${error instanceof Error ? error.message : String(error)}`);
      if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" });
      res.end("internal error");
    });
  });
}

async function answer(
  handler: FetchHandler,
  env: Record<string, unknown>,
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
  const response = await handler(request, env);
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
