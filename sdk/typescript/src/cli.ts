#!/usr/bin/env node
/**
 * Two forms. `aqs-worker ./worker.mjs --queue SLUG --alias JOBS --mode consume|send|both
 * --messages-per-run N --wait S [--concurrency C] [--port P] [--metrics P]`, with `AQS_URL` and
 * `AQS_TOKEN` from the environment, runs one module against one queue. `aqs-worker [--config
 * wrangler.jsonc]` (no arguments: the wrangler.json, wrangler.jsonc or wrangler.toml of the current
 * folder) runs a Cloudflare Worker project as its configuration describes, with `AQS_URL` and a
 * token per queue. Ctrl-C ends the long polls at once, finishes the batches in hand and exits 0; a
 * second Ctrl-C exits at once.
 */

import { parseArgs } from "node:util";
import { runProject } from "./project.js";
import { runWorker, type Mode } from "./worker.js";
import { findConfig } from "./wrangler.js";

const USAGE = `usage: aqs-worker [--config wrangler.jsonc|wrangler.json|wrangler.toml] [--port PORT] [--host HOST] [--metrics PORT]
       aqs-worker MODULE --queue SLUG [--alias NAME] [--mode consume|send|both]
       [--messages-per-run N] [--wait SECONDS] [--visibility SECONDS] [--concurrency N]
       [--port PORT] [--host HOST] [--metrics PORT]
With no MODULE, runs the Worker project of the wrangler configuration named (or found in this folder).
environment: AQS_URL (the service's origin); for a MODULE, AQS_TOKEN (an acq_ token of the queue);
for a project, AQS_TOKEN_<QUEUE> per queue (the slug upper-cased, every other character _), or
AQS_TOKEN when it uses one queue`;

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
        config: { type: "string" },
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
  const url = process.env.AQS_URL;
  if (!url) fail("set AQS_URL to the service's origin, e.g. http://127.0.0.1:8080");
  const projectForm = values.config !== undefined || positionals.length === 0;
  let config: string | undefined;
  if (projectForm) {
    if (positionals.length > 0) fail("give either a MODULE or --config, not both");
    const single = ["queue", "alias", "mode", "messages-per-run", "wait", "visibility", "concurrency"] as const;
    const misplaced = single.filter((name) => values[name] !== undefined);
    if (misplaced.length > 0) fail(`--${misplaced[0]} belongs to the MODULE form; a project sets it in its configuration`);
    config = values.config ?? findConfig(process.cwd());
    if (config === undefined) fail("name a Worker MODULE, or run where a wrangler.json, wrangler.jsonc or wrangler.toml is (or pass --config)");
  } else {
    if (positionals.length > 1) fail("name one Worker module");
    if (!values.queue) fail("--queue is required");
  }
  const module = positionals[0];
  const mode = (values.mode ?? "consume") as Mode;
  if (!["consume", "send", "both"].includes(mode)) fail("--mode must be consume, send or both");
  const token = process.env.AQS_TOKEN;
  if (!projectForm && !token) fail("set AQS_TOKEN to a token of the queue");

  const controller = new AbortController();
  const stop = (signal: string) => {
    if (controller.signal.aborted) process.exit(130);
    process.stderr.write(`aqs-worker: ${signal}: finishing the batch in hand, then stopping\n`);
    controller.abort();
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));

  const optional = <T>(key: string, value: T | undefined) => (value === undefined ? {} : { [key]: value });
  const shared = {
    signal: controller.signal,
    ...optional("port", integer("port", values.port, 0, 65_535)),
    ...optional("host", values.host),
    ...optional("metricsPort", integer("metrics", values.metrics, 0, 65_535)),
  };
  if (config !== undefined) {
    await runProject({ config, url, ...shared });
  } else {
    await runWorker({
      module: module!,
      url,
      token: token!,
      queue: values.queue!,
      mode,
      ...shared,
      ...optional("alias", values.alias),
      ...optional("messagesPerRun", integer("messages-per-run", values["messages-per-run"], 1, 100)),
      ...optional("waitSeconds", integer("wait", values.wait, 0, 20)),
      ...optional("visibilitySeconds", integer("visibility", values.visibility, 1, 43_200)),
      ...optional("concurrency", integer("concurrency", values.concurrency, 1, 1000)),
    });
  }
  process.exit(0);
}

main().catch((error: unknown) => {
  process.stderr.write(`aqs-worker: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
