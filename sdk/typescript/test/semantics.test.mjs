// What a handler's answer does to each message, checked through the queue's stats, its dead
// letters and what a later consume sees: ack, retry, ackAll, retryAll, unmentioned, throw.

import assert from "node:assert/strict";
import { test } from "node:test";
import { MessageBatch, newMetrics, runOne, throwBackoffSeconds } from "../dist/index.js";
import { drain, freshQueue } from "../testkit/kit.mjs";

/** A fresh queue holding `bodies`, consumed as one batch the way the runner does. */
async function batchOf(bodies, settings = {}) {
  const fresh = await freshQueue(settings);
  await fresh.queue.sendBatch(bodies.map((n) => ({ body: { n } })));
  const wire = await drain(fresh.queue, bodies.length);
  assert.equal(wire.length, bodies.length);
  return { ...fresh, batch: new MessageBatch(fresh.slug, wire), metrics: newMetrics() };
}

async function run(ctx, handler) {
  const errors = [];
  await runOne(ctx.queue, ctx.batch, handler, {}, ctx.metrics, (e) => errors.push(e));
  return errors;
}

const byN = (batch, n) => batch.messages.find((m) => m.body.n === n);

test("message.ack() acknowledges and message.retry() returns the message", async () => {
  const ctx = await batchOf([1, 2, 3]);
  await run(ctx, (batch) => {
    byN(batch, 1).ack();
    byN(batch, 2).retry();
    byN(batch, 3).retry({ delaySeconds: 600 });
  });
  assert.deepEqual(ctx.metrics, { runs: 1, messages_acked: 1, messages_retried: 2, requests: 0 });
  const stats = await ctx.queue.stats();
  assert.equal(stats.acked_today, 1);
  assert.equal(stats.depth.total, 2);
  const again = await drain(ctx.queue, 2, 1);
  assert.equal(again.length, 1, "the delayed retry is not deliverable yet");
  assert.equal(JSON.parse(Buffer.from(again[0].body_base64, "base64")).n, 2);
  assert.equal(again[0].attempts, 2);
});

test("returning acknowledges every unmentioned message", async () => {
  const ctx = await batchOf([1, 2, 3, 4]);
  await run(ctx, (batch) => {
    byN(batch, 1).retry();
  });
  assert.equal(ctx.metrics.messages_acked, 3);
  assert.equal(ctx.metrics.messages_retried, 1);
  const stats = await ctx.queue.stats();
  assert.equal(stats.acked_today, 3);
  assert.equal(stats.depth.total, 1);
});

test("batch.ackAll() acknowledges the whole batch, and the last call for a message wins", async () => {
  const ctx = await batchOf([1, 2, 3]);
  await run(ctx, (batch) => {
    batch.messages[0].retry({ delaySeconds: 60 });
    batch.ackAll();
    byN(batch, 3).retry();
  });
  const stats = await ctx.queue.stats();
  assert.equal(stats.acked_today, 2);
  assert.equal(stats.depth.total, 1);
  const again = await drain(ctx.queue, 1, 1);
  assert.equal(JSON.parse(Buffer.from(again[0].body_base64, "base64")).n, 3);
});

test("batch.retryAll() returns the whole batch, with its delay", async () => {
  const now = await batchOf([1, 2]);
  await run(now, (batch) => batch.retryAll());
  const again = await drain(now.queue, 2, 1);
  assert.equal(again.length, 2);
  assert.ok(again.every((m) => m.attempts === 2));

  const later = await batchOf([1, 2]);
  await run(later, (batch) => batch.retryAll({ delaySeconds: 600 }));
  assert.equal(later.metrics.messages_retried, 2);
  assert.equal((await later.queue.stats()).depth.total, 2);
  assert.equal((await drain(later.queue, 2, 0)).length, 0, "both wait out their delay");
});

test("a throw returns every message not explicitly handled, with backoff; explicit calls survive", async () => {
  const ctx = await batchOf([1, 2, 3]);
  const errors = await run(ctx, (batch) => {
    byN(batch, 1).ack();
    byN(batch, 2).retry();
    throw new Error("boom");
  });
  assert.equal(errors.length, 1);
  assert.equal(ctx.metrics.messages_acked, 1);
  assert.equal(ctx.metrics.messages_retried, 2);
  const stats = await ctx.queue.stats();
  assert.equal(stats.acked_today, 1);
  assert.equal(stats.depth.total, 2);
  // Both come back for another attempt (the thrown one after its backoff; see the unit test below).
  const back = await drain(ctx.queue, 2, 20);
  assert.deepEqual(back.map((m) => JSON.parse(Buffer.from(m.body_base64, "base64")).n).sort(), [2, 3]);
  assert.ok(back.every((m) => m.attempts === 2));
});

test("a thrown message waits out its backoff before its next delivery", async () => {
  const { queue, slug } = await freshQueue({ max_attempts: 20 });
  await queue.send({ n: 1 });
  // Eight deliveries returned at once, so the ninth's backoff is the 5-minute cap.
  for (let i = 0; i < 8; i++) {
    const [message] = await drain(queue, 1, 5);
    await queue.nack([message.receipt]);
  }
  const ninth = await drain(queue, 1, 5);
  assert.equal(ninth[0].attempts, 9);
  await runOne(queue, new MessageBatch(slug, ninth), () => {
    throw new Error("again");
  }, {}, newMetrics(), () => {});
  const stats = await queue.stats();
  assert.equal(stats.depth.total, 1);
  assert.equal(stats.depth.ready, 0);
  assert.deepEqual(await drain(queue, 1, 1), [], "not deliverable during its backoff");
});

test("a throw on the last attempt dead-letters the batch with the error as its reason", async () => {
  const ctx = await batchOf([1, 2], { max_attempts: 1 });
  await run(ctx, () => {
    throw new Error("the handler failed on purpose");
  });
  const stats = await ctx.queue.stats();
  assert.equal(stats.dead_letters, 2);
  assert.equal(stats.depth.total, 0);
  const dead = await ctx.queue.deadLetters();
  assert.equal(dead.length, 2);
  assert.ok(dead.every((d) => d.reason.includes("the handler failed on purpose")), JSON.stringify(dead));
  assert.ok(dead.every((d) => d.attempts === 1));
});

test("the throw backoff starts at 2 s and doubles, capped at 5 minutes", () => {
  assert.deepEqual([1, 2, 3, 4, 8, 9, 50].map(throwBackoffSeconds), [2, 4, 8, 16, 256, 300, 300]);
});

test("extend moves a lease and answers a fresh receipt; a stale receipt is lease_lost", async () => {
  const { queue } = await freshQueue();
  await queue.send({ n: 1 });
  const [message] = await queue.consume({ maxMessages: 1, visibilitySeconds: 1 });
  const answer = await queue.extend([message.receipt], 600);
  assert.equal(answer.extended.length, 1);
  assert.equal(answer.extended[0].receipt, message.receipt);
  assert.ok(Date.parse(answer.extended[0].visible_at) - Date.now() > 590_000, answer.extended[0].visible_at);
  // Past the original one-second lease, the message is still not deliverable.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  assert.deepEqual(await drain(queue, 1, 0), [], "the extended lease still holds it");
  const acked = await queue.ack([answer.extended[0].new_receipt]);
  assert.equal(acked.acked, 1);
  const stale = await queue.extend([message.receipt], 60);
  assert.deepEqual([stale.extended.length, stale.failed[0].error], [0, "lease_lost"]);
});
