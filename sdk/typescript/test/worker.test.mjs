// `aqs-worker` as a process: the spec's two samples run unchanged, a thousand messages through
// concurrent batches with none lost, the metrics endpoint, and Ctrl-C.

import assert from "node:assert/strict";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { EXAMPLES, drain, freshQueue, metrics, startWorker, until } from "../testkit/kit.mjs";

const RECORD = fileURLToPath(new URL("../testkit/record.mjs", import.meta.url));
const text = (m) => Buffer.from(m.body_base64, "base64").toString("utf8");

test("the spec's queue sample acks what it handled and retries what failed, in 60 s", async (t) => {
  // The queue infra/test made through the management API, when it is there.
  const fresh = process.env.AQS_QUEUE ? null : await freshQueue();
  const slug = process.env.AQS_QUEUE ?? fresh.slug;
  const token = process.env.AQS_QUEUE ? process.env.AQS_TOKEN : fresh.token;
  const { Queue } = await import("../dist/index.js");
  const queue = new Queue({ url: process.env.AQS_URL, token, queue: slug });
  const before = await queue.stats();
  await queue.sendBatch([{ body: { type: "resize", key: "avatars/42.png" } }, { body: { fail: true } }]);
  const worker = startWorker(
    [join(EXAMPLES, "queue.mjs"), "--queue", slug, "--alias", "JOBS", "--mode", "consume", "--messages-per-run", "10", "--wait", "1", "--metrics", "0"],
    { token },
  );
  t.after(() => worker.stop("SIGKILL"));
  const port = await worker.port("metrics");
  const counted = await until(() => metrics(port), (m) => m.messages_acked + m.messages_retried >= 2);
  assert.equal(counted.messages_acked, 1);
  assert.equal(counted.messages_retried, 1);
  assert.ok(worker.stdout.includes('handled {"type":"resize","key":"avatars/42.png"}'), worker.stdout.join("\n"));
  assert.deepEqual(await worker.stop(), { code: 0, signal: null });
  const stats = await queue.stats();
  assert.equal(stats.acked_today - before.acked_today, 1);
  assert.equal(stats.depth.ready, before.depth.ready, "the failed message waits out its 60 s");
  assert.equal(stats.depth.total - before.depth.total, 1);
});

test("the spec's fetch sample is served, and publishes through env.JOBS in send mode", async (t) => {
  const { queue, slug, token } = await freshQueue();
  const worker = startWorker(
    [join(EXAMPLES, "fetch.mjs"), "--queue", slug, "--alias", "JOBS", "--mode", "send", "--port", "0", "--metrics", "0"],
    { token },
  );
  t.after(() => worker.stop("SIGKILL"));
  const port = await worker.port("serving fetch");
  const response = await fetch(`http://127.0.0.1:${port}/anything`, { method: "POST", body: "x" });
  assert.equal(response.status, 202);
  assert.equal(await response.text(), "queued");
  const second = await fetch(`http://127.0.0.1:${port}/`);
  assert.equal(second.status, 202);
  assert.deepEqual(await metrics(await worker.port("metrics")), { runs: 0, messages_acked: 0, messages_retried: 0, requests: 2 });
  assert.deepEqual(await worker.stop(), { code: 0, signal: null });

  const stats = await queue.stats();
  assert.equal(stats.depth.delayed, 1, "the keyed, delayed send was stored once");
  assert.equal(stats.depth.ready, 4, "each request's batch of two");
  assert.equal(stats.delivered_today, 0, "send mode never consumes");
  const got = await drain(queue, 4, 0);
  assert.deepEqual(
    got.map((m) => [m.content_type, text(m)]).slice(0, 2),
    [
      ["application/json", '{"type":"thumbnail","key":"media/clip-9.mp4"}'],
      ["text/plain", "plain text message"],
    ],
  );
});

test("a thousand messages through concurrent batches: every one handled and acked, none lost", async (t) => {
  const { queue, slug, token } = await freshQueue({ visibility_timeout_seconds: 120 });
  const ids = new Set();
  for (let start = 0; start < 1000; start += 100) {
    const published = await queue.sendBatch(Array.from({ length: 100 }, (_, i) => ({ body: { n: start + i } })));
    for (const p of published) ids.add(p.id);
  }
  assert.equal(ids.size, 1000);
  const worker = startWorker(
    [RECORD, "--queue", slug, "--alias", "JOBS", "--mode", "both", "--messages-per-run", "25", "--wait", "1", "--concurrency", "8", "--metrics", "0"],
    { token },
  );
  t.after(() => worker.stop("SIGKILL"));
  const port = await worker.port("metrics");
  const counted = await until(() => metrics(port), (m) => m.messages_acked >= 1000, 120);
  assert.deepEqual(await worker.stop(), { code: 0, signal: null });
  assert.equal(counted.messages_acked, 1000);
  assert.equal(counted.messages_retried, 0);
  assert.ok(counted.runs >= 40, `batches of at most 25: ${counted.runs} runs`);
  const handled = worker.stdout.filter((l) => l.startsWith("handled ")).map((l) => l.split(" ")[1]);
  assert.equal(new Set(handled).size, 1000);
  assert.ok(handled.every((id) => ids.has(id)));
  assert.ok(worker.stdout.some((l) => l.endsWith("send=function")), "mode both binds env.JOBS.send");
  const stats = await queue.stats();
  assert.equal(stats.depth.total, 0);
  assert.equal(stats.dead_letters, 0);
});

test("consume mode has no env.JOBS.send; the metrics endpoint serves the four counters", async (t) => {
  const { queue, slug, token } = await freshQueue();
  await queue.sendBatch([{ body: { n: 1 } }, { body: { n: 2 } }]);
  const worker = startWorker(
    [RECORD, "--queue", slug, "--alias", "JOBS", "--mode", "consume", "--wait", "1", "--metrics", "0"],
    { token },
  );
  t.after(() => worker.stop("SIGKILL"));
  const port = await worker.port("metrics");
  const counted = await until(() => metrics(port), (m) => m.messages_acked >= 2);
  assert.deepEqual(Object.keys(counted).sort(), ["messages_acked", "messages_retried", "requests", "runs"]);
  assert.equal(counted.messages_acked, 2);
  assert.ok(worker.stdout.some((l) => l.endsWith("send=undefined")), worker.stdout.join("\n"));
  assert.deepEqual(await worker.stop(), { code: 0, signal: null });
  assert.match(worker.stderr.at(-1), /stopped: runs=\d+ acked=2 retried=0 requests=0/);
});

test("Ctrl-C finishes the batch in hand, acks it and exits 0", async (t) => {
  const { queue, slug, token } = await freshQueue();
  await queue.sendBatch([{ body: { n: 1 } }, { body: { n: 2 } }, { body: { n: 3 } }]);
  const gate = join(tmpdir(), `aqs-gate-${randomUUID()}`);
  const worker = startWorker([RECORD, "--queue", slug, "--mode", "consume", "--messages-per-run", "10", "--wait", "1"], {
    token,
    env: { WORKER_GATE: gate },
  });
  t.after(() => worker.stop("SIGKILL"));
  t.after(() => rmSync(gate, { force: true }));
  await worker.line(/^started$/);
  worker.child.kill("SIGINT");
  await worker.line(/SIGINT: finishing the batch in hand/);
  writeFileSync(gate, "go");
  assert.deepEqual(await worker.exited, { code: 0, signal: null });
  assert.equal(worker.stdout.filter((l) => l.startsWith("handled ")).length, 3);
  const stats = await queue.stats();
  assert.equal(stats.acked_today, 3);
  assert.equal(stats.depth.total, 0);
});

test("Ctrl-C during a long poll stops the worker at once, and the poll leases nothing", async (t) => {
  const { queue, slug, token } = await freshQueue();
  await queue.send({ n: 1 });
  const worker = startWorker([RECORD, "--queue", slug, "--mode", "consume", "--wait", "20"], { token });
  t.after(() => worker.stop("SIGKILL"));
  // The first batch is handled; the next poll then waits on the server for up to 20 s.
  await worker.line(/^handled /);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const signalledAt = Date.now();
  worker.child.kill("SIGINT");
  assert.deepEqual(await worker.exited, { code: 0, signal: null });
  const took = Date.now() - signalledAt;
  assert.ok(took < 3000, `exited ${took} ms after Ctrl-C, not when the 20 s poll ended`);
  assert.ok(worker.stderr.some((l) => /SIGINT: finishing the batch in hand/.test(l)), worker.stderr.join("\n"));
  // Nothing consumes on the server's side any more: a message published now stays ready.
  await queue.send({ n: 7 });
  const [back] = await drain(queue, 1, 0);
  assert.ok(back, "the message is ready");
  assert.equal(JSON.parse(text(back)).n, 7);
  assert.equal(back.attempts, 1, "the aborted poll did not lease it");
});

test("the runner logs a summary line each period (a minute by default)", async () => {
  const { runWorker } = await import("../dist/index.js");
  const { queue, slug, token } = await freshQueue();
  await queue.send({ n: 1 });
  const controller = new AbortController();
  const lines = [];
  const counted = await runWorker({
    module: RECORD,
    url: process.env.AQS_URL,
    token,
    queue: slug,
    mode: "consume",
    waitSeconds: 1,
    summaryEveryMs: 100,
    signal: controller.signal,
    log: (line) => {
      lines.push(line);
      if (line === "runs=1 acked=1 retried=0 requests=0") controller.abort();
    },
  });
  assert.deepEqual(counted, { runs: 1, messages_acked: 1, messages_retried: 0, requests: 0 });
  assert.equal(lines.at(-1), "stopped: runs=1 acked=1 retried=0 requests=0");
});
