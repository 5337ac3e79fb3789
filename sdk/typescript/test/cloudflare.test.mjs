// Worker projects written for Cloudflare Queues, run by `aqs-worker --config` against the live
// instance: each fixture in test/fixtures is copied with the fresh queues' slugs in place of its
// queue names and run as it is, with only credentials in the environment.

import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { copyProject, drain, freshQueue, metrics, startWorker, tokenVariable, until } from "../testkit/kit.mjs";

const text = (m) => Buffer.from(m.body_base64, "base64").toString("utf8");

test("a TypeScript producer + consumer with a wrangler.jsonc: fetch sends, queue receives, vars in env", async (t) => {
  const jobs = await freshQueue({ name: "cf-image-jobs" });
  const dir = copyProject(t, "producer-consumer-ts", { "cf-image-jobs": jobs.slug });
  // One queue: AQS_TOKEN is enough. --port 0 instead of the default 8787 (tests run side by side).
  const worker = startWorker(["--config", join(dir, "wrangler.jsonc"), "--port", "0", "--metrics", "0"], { token: jobs.token });
  t.after(() => worker.stop("SIGKILL"));
  const port = await worker.port("serving fetch");
  await worker.line(new RegExp(`consuming ${jobs.slug}: 5 per run, wait 1 s, concurrency 1`));
  assert.ok(worker.stderr.some((l) => l.endsWith(`env.MY_QUEUE sends to ${jobs.slug}`)), worker.stderr.join("\n"));

  const one = await fetch(`http://127.0.0.1:${port}/?key=avatars/42.png`);
  assert.equal(one.status, 202);
  assert.equal(await one.text(), "queued", "vars.GREETING is env.GREETING");
  await worker.line(/^processed .* resize avatars\/42\.png attempt=1/);

  const sentAt = Date.now();
  const batch = await fetch(`http://127.0.0.1:${port}/batch?key=a.png&key=b.png&key=c.png`);
  assert.equal(await batch.text(), "queued 3");
  await Promise.all(["a", "b", "c"].map((key) => worker.line(new RegExp(`thumbnail ${key}\\.png`))));
  const thumbnails = worker.stdout.filter((l) => l.includes(" thumbnail "));
  assert.equal(thumbnails.length, 3);
  for (const line of thumbnails) {
    assert.ok(line.startsWith(`processed ${jobs.slug} thumbnail `), `batch.queue is the slug: ${line}`);
    const at = Number(line.match(/at=(\d+)/)[1]);
    assert.ok(at - sentAt >= 1800, `sendBatch's delaySeconds: 2 held the message back (${at - sentAt} ms)`);
  }
  const metricsPort = await worker.port("metrics");
  const counted = await until(() => metrics(metricsPort), (m) => m.messages_acked >= 4);
  assert.equal(counted.messages_acked, 4);
  assert.equal(counted.requests, 2);
  assert.deepEqual(await worker.stop(), { code: 0, signal: null });
  const stats = await jobs.queue.stats();
  assert.equal(stats.acked_today, 4);
  assert.equal(stats.depth.total, 0);
});

test("a wrangler.toml project consuming two queues tells them apart by batch.queue", async (t) => {
  const emails = await freshQueue({ name: "cf-emails" });
  const thumbnails = await freshQueue({ name: "cf-thumbnails" });
  const dir = copyProject(t, "two-queues-toml", { "cf-emails": emails.slug, "cf-thumbnails": thumbnails.slug });
  await emails.queue.sendBatch([{ body: { to: "a@example.com" } }, { body: { to: "b@example.com" } }]);
  await thumbnails.queue.sendBatch(["x.png", "y.jpg", "z.gif"].map((key) => ({ body: { key } })));
  // No arguments: the wrangler.toml of the current folder. A token per queue.
  const worker = startWorker(["--metrics", "0"], {
    cwd: dir,
    env: { [tokenVariable(emails.slug)]: emails.token, [tokenVariable(thumbnails.slug)]: thumbnails.token },
  });
  t.after(() => worker.stop("SIGKILL"));
  const port = await worker.port("metrics");
  const counted = await until(() => metrics(port), (m) => m.messages_acked >= 5);
  assert.equal(counted.messages_acked, 5);
  assert.equal(counted.messages_retried, 0);
  assert.deepEqual(await worker.stop(), { code: 0, signal: null });

  const said = worker.stderr.join("\n");
  assert.match(said, new RegExp(`consuming ${emails.slug}: 10 per run, wait 1 s, concurrency 1`));
  assert.match(said, new RegExp(`consuming ${thumbnails.slug}: 2 per run, wait 1 s, concurrency 2`));
  const announced = worker.stderr.filter((l) => l.includes("max_retries"));
  assert.equal(announced.length, 1, said);
  assert.match(announced[0], new RegExp(`${emails.slug}: max_retries = 5, dead_letter_queue = "cf-emails-dlq": in AQS these are the queue's own settings`));
  assert.doesNotMatch(said, /serving fetch/, "no fetch handler, no server");

  const emailsSeen = worker.stdout.filter((l) => l.startsWith("email to ")).sort();
  assert.deepEqual(emailsSeen, ["email to a@example.com from noreply@example.com", "email to b@example.com from noreply@example.com"]);
  const thumbs = worker.stdout.filter((l) => l.startsWith("thumbnail "));
  assert.deepEqual(thumbs.map((l) => l.split(" ")[1]).sort(), ["x.thumb.png", "y.thumb.jpg", "z.thumb.gif"]);
  assert.ok(thumbs.every((l) => /\((1|2) in batch\)$/.test(l)), "max_batch_size = 2");
  assert.equal((await emails.queue.stats()).depth.total, 0);
  assert.equal((await thumbnails.queue.stats()).depth.total, 0);
});

test("retries: delaySeconds growing with attempts, retry_delay for a bare retry() and for a throw", async (t) => {
  const flaky = await freshQueue({ name: "cf-flaky-jobs" });
  const dir = copyProject(t, "retry-backoff", { "cf-flaky-jobs": flaky.slug });
  await flaky.queue.sendBatch([
    { body: { key: "b", mode: "backoff" } },
    { body: { key: "p", mode: "plain" } },
    { body: { key: "t", mode: "throw" } },
  ]);
  const worker = startWorker(["--config", join(dir, "wrangler.json"), "--metrics", "0"], {
    env: { [tokenVariable(flaky.slug)]: flaky.token },
  });
  t.after(() => worker.stop("SIGKILL"));
  const port = await worker.port("metrics");
  const counted = await until(() => metrics(port), (m) => m.messages_acked >= 3, 60);
  assert.deepEqual(await worker.stop(), { code: 0, signal: null });
  assert.equal(counted.messages_acked, 3);
  assert.equal(counted.messages_retried, 4, "b twice, p once, t once");
  assert.match(worker.stderr.join("\n"), new RegExp(`consuming ${flaky.slug}: 1 per run, wait 1 s, concurrency 3, retry delay 3 s`));

  const attempts = (key) =>
    worker.stdout.filter((l) => l.startsWith(`attempt ${key} `)).map((l) => l.split(" ").slice(2).map(Number));
  const gaps = (key) => attempts(key).slice(1).map(([, at], i) => at - attempts(key)[i][1]);
  assert.deepEqual(attempts("b").map(([n]) => n), [1, 2, 3]);
  const [first, second] = gaps("b");
  // 2 ** attempts: 2 s after the first attempt, 4 s after the second.
  assert.ok(first >= 1800, `first backoff ${first} ms`);
  assert.ok(second >= 3800, `second backoff ${second} ms, longer than the first`);
  assert.deepEqual(attempts("p").map(([n]) => n), [1, 2]);
  assert.ok(gaps("p")[0] >= 2800, `retry() waited retry_delay (3 s): ${gaps("p")[0]} ms`);
  assert.deepEqual(attempts("t").map(([n]) => n), [1, 2]);
  assert.ok(gaps("t")[0] >= 2800, `a throw waited retry_delay (3 s), not the 2 s backoff: ${gaps("t")[0]} ms`);
  assert.ok(worker.stderr.some((l) => l.includes("t failed")), "the throw is reported");
  const stats = await flaky.queue.stats();
  assert.equal(stats.depth.total, 0);
  assert.equal(stats.dead_letters, 0);
});

test("ctx.waitUntil: the work handed to it finishes before the batch is acked; a rejection is only reported", async (t) => {
  const orders = await freshQueue({ name: "cf-orders" });
  const audit = await freshQueue({ name: "cf-audit" });
  const dir = copyProject(t, "wait-until", { "cf-orders": orders.slug, "cf-audit": audit.slug });
  await orders.queue.sendBatch([{ body: { id: "o-1", total: 10 } }, { body: { id: "o-2", total: 25 } }]);
  const worker = startWorker(["--metrics", "0"], {
    cwd: dir,
    env: { [tokenVariable(orders.slug)]: orders.token, [tokenVariable(audit.slug)]: audit.token },
  });
  t.after(() => worker.stop("SIGKILL"));
  const port = await worker.port("metrics");
  // Each audit finishes a second after the handler returned; the ack may only come after both.
  const counted = await until(() => metrics(port), (m) => m.messages_acked >= 2, 20);
  const ackedSeenAt = Date.now();
  assert.equal(counted.messages_acked, 2, "acked, not retried, despite the rejected waitUntil promise");
  assert.equal(counted.messages_retried, 0);
  const audits = await Promise.all(["o-1", "o-2"].map((id) => worker.line(new RegExp(`^audited ${id} at=`))));
  for (const line of audits) {
    const at = Number(line.match(/at=(\d+)/)[1]);
    assert.ok(ackedSeenAt >= at, `acked (seen at ${ackedSeenAt}) after the waitUntil work ended (${at})`);
  }
  assert.deepEqual(await worker.stop(), { code: 0, signal: null });
  assert.deepEqual(worker.stdout.filter((l) => l.startsWith("order ")).sort(), ["order o-1", "order o-2"]);
  assert.ok(worker.stderr.some((l) => l.includes("a ctx.waitUntil promise rejected: the analytics endpoint is down")), worker.stderr.join("\n"));
  assert.match(worker.stderr.at(-1), /stopped: runs=\d+ acked=2 retried=0 requests=0/);
  assert.equal((await orders.queue.stats()).depth.total, 0);
  const audited = await drain(audit.queue, 2, 1);
  assert.deepEqual(audited.map((m) => JSON.parse(text(m)).order).sort(), ["o-1", "o-2"]);
});
