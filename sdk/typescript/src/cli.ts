#!/usr/bin/env node
/**
 * `aqs-worker ./worker.mjs --queue SLUG --alias JOBS --mode consume|send|both --messages-per-run N
 * --wait S [--concurrency C] [--port P] [--metrics P]`, with `AQS_URL` and `AQS_TOKEN` from the
 * environment. Ctrl-C ends the long poll at once, finishes the batch in hand and exits 0; a second
 * Ctrl-C exits at once.
 */

import { parseArgs } from "node:util";
import { runWorker, type Mode } from "./worker.js";

const USAGE = `usage: aqs-worker MODULE --queue SLUG [--alias NAME] [--mode consume|send|both]
       [--messages-per-run N] [--wait SECONDS] [--visibility SECONDS] [--concurrency N]
       [--port PORT] [--host HOST] [--metrics PORT]
environment: AQS_URL (the service's origin), AQS_TOKEN (an acq_ token of the queue)`;

function fail(message: string): never {
  process.stderr.write(`aqs-worker: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function integer(name: string, text: string | undefined, min: number, max: number): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) fail(`--${name} must be an integer from ${min} to ${max}`);
  return value;
}

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        queue: { type: "string" },
        alias: { type: "string" },
        mode: { type: "string" },
        "messages-per-run": { type: "string" },
        wait: { type: "string" },
        visibility: { type: "string" },
        concurrency: { type: "string" },
        port: { type: "string" },
        host: { type: "string" },
        metrics: { type: "string" },
        help: { type: "boolean" },
      },
    });
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const module = positionals[0];
  if (module === undefined || positionals.length > 1) fail("name one Worker module");
  if (!values.queue) fail("--queue is required");
  const mode = (values.mode ?? "consume") as Mode;
  if (!["consume", "send", "both"].includes(mode)) fail("--mode must be consume, send or both");
  const url = process.env.AQS_URL;
  const token = process.env.AQS_TOKEN;
  if (!url) fail("set AQS_URL to the service's origin, e.g. http://127.0.0.1:8080");
  if (!token) fail("set AQS_TOKEN to a token of the queue");

  const controller = new AbortController();
  const stop = (signal: string) => {
    if (controller.signal.aborted) process.exit(130);
    process.stderr.write(`aqs-worker: ${signal}: finishing the batch in hand, then stopping\n`);
    controller.abort();
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));

  const optional = <T>(key: string, value: T | undefined) => (value === undefined ? {} : { [key]: value });
  await runWorker({
    module,
    url,
    token,
    queue: values.queue,
    mode,
    signal: controller.signal,
    ...optional("alias", values.alias),
    ...optional("messagesPerRun", integer("messages-per-run", values["messages-per-run"], 1, 100)),
    ...optional("waitSeconds", integer("wait", values.wait, 0, 20)),
    ...optional("visibilitySeconds", integer("visibility", values.visibility, 1, 43_200)),
    ...optional("concurrency", integer("concurrency", values.concurrency, 1, 1000)),
    ...optional("port", integer("port", values.port, 0, 65_535)),
    ...optional("host", values.host),
    ...optional("metricsPort", integer("metrics", values.metrics, 0, 65_535)),
  });
  process.exit(0);
}

main().catch((error: unknown) => {
  process.stderr.write(`aqs-worker: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
