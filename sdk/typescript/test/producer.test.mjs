// The producer: send and sendBatch options as the queue stores them, typed errors carrying the
// API's code, Retry-After honoured, and the push spec's `push(queue, payload, delaySecs?)`.

import assert from "node:assert/strict";
import { test } from "node:test";
import { AqsError, Queue, createSdk } from "../dist/index.js";
import { URL_BASE, drain, freshQueue } from "../testkit/kit.mjs";

const text = (m) => Buffer.from(m.body_base64, "base64").toString("utf8");

test("send stores delay, attributes, group id and content type as given", async () => {
  const { queue } = await freshQueue();
  const delayed = await queue.send({ later: true }, { delaySeconds: 600 });
  assert.ok(Date.parse(delayed.available_at) - Date.parse(delayed.published_at) >= 599_000);
  await queue.send("hello", { attributes: { tenant: "t-1", n: 2 }, groupId: "order-7", contentType: "text/x-note" });
  const stats = await queue.stats();
  assert.equal(stats.depth.delayed, 1);
  assert.equal(stats.depth.ready, 1);
  const [message] = await drain(queue, 1, 0);
  assert.equal(text(message), "hello");
  assert.deepEqual(message.attributes, { tenant: "t-1", n: 2 });
  assert.equal(message.group_id, "order-7");
  assert.equal(message.content_type, "text/x-note");
});

test("an idempotency key stores one message; another payload under it is idempotency_conflict", async () => {
  const { queue } = await freshQueue();
  const first = await queue.send({ type: "resize" }, { idempotencyKey: "resize-42" });
  const again = await queue.send({ type: "resize" }, { idempotencyKey: "resize-42" });
  assert.equal(first.duplicate, false);
  assert.equal(again.duplicate, true);
  assert.equal(again.id, first.id);
  await assert.rejects(queue.send({ type: "other" }, { idempotencyKey: "resize-42" }), (error) => {
    assert.ok(error instanceof AqsError);
    assert.equal(error.code, "idempotency_conflict");
    assert.equal(error.status, 409);
    return true;
  });
  // Without a key each send is its own message (the generated keys differ).
  await queue.send("same");
  await queue.send("same");
  assert.equal((await queue.stats()).depth.total, 3);
});

test("sendBatch mixes bodies and entries with options", async () => {
  const { queue } = await freshQueue();
  const published = await queue.sendBatch([
    { body: { type: "thumbnail", key: "media/clip-9.mp4" }, contentType: "application/json" },
    "plain text message",
    new Uint8Array([1, 2, 3]),
    { body: "keyed", idempotencyKey: "k-1", attributes: { a: "b" }, groupId: "g" },
    { body: "later", delaySeconds: 600 },
  ]);
  assert.equal(published.length, 5);
  const again = await queue.sendBatch([{ body: "keyed", idempotencyKey: "k-1", attributes: { a: "b" }, groupId: "g" }]);
  assert.equal(again[0].duplicate, true);
  assert.equal(again[0].id, published[3].id);
  const stats = await queue.stats();
  assert.equal(stats.depth.ready, 4);
  assert.equal(stats.depth.delayed, 1);
  const got = await drain(queue, 4, 0);
  assert.deepEqual(
    got.map((m) => [m.content_type, m.group_id]),
    [
      ["application/json", null],
      ["text/plain", null],
      ["application/octet-stream", null],
      ["text/plain", "g"],
    ],
  );
  assert.deepEqual(got[3].attributes, { a: "b" });
});

test("sendBatch of more than 100 entries throws and sends nothing", async () => {
  const { queue } = await freshQueue();
  const entries = Array.from({ length: 101 }, (_, i) => `m${i}`);
  await assert.rejects(queue.sendBatch(entries), (error) => error instanceof AqsError && error.code === "invalid_request");
  await assert.rejects(queue.sendBatch([]), AqsError);
  await assert.rejects(queue.sendBatch(["ok", { notBody: 1 }]), (error) => error.index === 1);
  assert.equal((await queue.stats()).depth.total, 0);
  assert.equal((await queue.sendBatch(entries.slice(0, 100))).length, 100);
  assert.equal((await queue.stats()).depth.total, 100);
});

test("refusals are AqsErrors carrying the API's code and status", async () => {
  const { queue, slug, pause } = await freshQueue();
  const stranger = new Queue({ url: URL_BASE, token: "acq_notatoken", queue: slug, maxRetries: 0 });
  await assert.rejects(stranger.send("x"), { name: "AqsError", code: "unauthorized", status: 401 });
  const other = await freshQueue();
  const wrongQueue = new Queue({ url: URL_BASE, token: other.token, queue: slug });
  await assert.rejects(wrongQueue.send("x"), { code: "not_found", status: 404 });
  await assert.rejects(queue.consume({ maxMessages: 101 }), { code: "invalid_request", status: 400 });
  await pause();
  await assert.rejects(queue.send("x"), { code: "queue_paused", status: 409 });
});

test("429 answers are retried after their Retry-After", async () => {
  const { queue, slug, token } = await freshQueue();
  const once = new Queue({ url: URL_BASE, token, queue: slug, maxRetries: 0 });
  // Stats allow 120 requests a minute per token: the 130th at once is refused...
  const answers = await Promise.allSettled(Array.from({ length: 130 }, () => once.stats()));
  const refused = answers.filter((a) => a.status === "rejected").map((a) => a.reason);
  assert.ok(refused.length > 0);
  assert.ok(refused.every((e) => e.code === "rate_limited" && e.status === 429 && e.retryAfterSeconds >= 1));
  // ...and a client that retries waits as told and gets its answer.
  const stats = await queue.stats();
  assert.equal(stats.depth.total, 0);
});

test("push(queue, payload, delaySecs?) returns the message id and throws when refused", async () => {
  const { queue, slug, token, pause } = await freshQueue();
  const sdk = createSdk({ url: URL_BASE, token });
  const id = await sdk.queue.push(slug, { to: "a@b.com" });
  assert.match(id, /^[0-9a-f]{32}$/);
  const textId = await sdk.queue.push(slug, "already a string");
  await sdk.queue.push(slug, { later: 1 }, 600);
  const stats = await queue.stats();
  assert.equal(stats.depth.ready, 2);
  assert.equal(stats.depth.delayed, 1);
  const got = await drain(queue, 2, 0);
  assert.deepEqual(
    got.map((m) => [m.id, text(m), m.content_type]),
    [
      [id, '{"to":"a@b.com"}', "application/json"],
      [textId, "already a string", "text/plain"],
    ],
  );
  await pause();
  await assert.rejects(sdk.queue.push(slug, { to: "c@d.com" }), { code: "queue_paused" });
});

test("the push spec's enqueue sample runs as written, configured by AQS_URL and AQS_TOKEN", async () => {
  const { queue, slug, token } = await freshQueue();
  const saved = process.env.AQS_TOKEN;
  process.env.AQS_TOKEN = token;
  try {
    const sdk = createSdk("<app-id>");
    const id = await sdk.queue.push(slug, { to: "a@b.com" });
    const [message] = await drain(queue, 1, 0);
    assert.equal(message.id, id);
    assert.equal(text(message), '{"to":"a@b.com"}');
  } finally {
    if (saved === undefined) delete process.env.AQS_TOKEN;
    else process.env.AQS_TOKEN = saved;
  }
});
