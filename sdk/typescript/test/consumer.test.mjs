// The consumer loop stopping: aborting its signal ends a long poll at once (the server lets go of
// the poll, so nothing is leased behind the consumer's back), and a batch that comes back after
// the stop is returned to the queue unstarted.

import assert from "node:assert/strict";
import { test } from "node:test";
import { Queue, consume } from "../dist/index.js";
import { URL_BASE, drain, freshQueue } from "../testkit/kit.mjs";

test("aborting the signal ends a 20-second long poll at once", async () => {
  const { queue } = await freshQueue();
  const controller = new AbortController();
  let batches = 0;
  const errors = [];
  const started = Date.now();
  const stopped = consume(queue, () => batches++, {
    waitSeconds: 20,
    signal: controller.signal,
    onError: (error) => errors.push(error),
  });
  // Long enough for the poll to be waiting on the server.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const abortedAt = Date.now();
  controller.abort();
  const counted = await stopped;
  const took = Date.now() - abortedAt;
  assert.ok(took < 1000, `stopped ${took} ms after the abort, not at the end of the poll`);
  assert.ok(Date.now() - started < 5000);
  assert.equal(batches, 0);
  assert.deepEqual(errors, [], "an aborted poll is a stop, not an error");
  assert.equal(counted.runs, 0);
  // The server let go of the poll too: a message published now is not leased by it.
  await queue.send({ n: 1 });
  const [message] = await drain(queue, 1, 0);
  assert.ok(message, "the message is ready");
  assert.equal(message.attempts, 1, "no earlier delivery");
});

test("an aborted consume call rejects with an AbortError, and one aborted before it starts never sends", async () => {
  const { queue } = await freshQueue();
  const controller = new AbortController();
  const poll = queue.consume({ waitSeconds: 20, signal: controller.signal });
  setTimeout(() => controller.abort(), 300);
  const started = Date.now();
  await assert.rejects(poll, { name: "AbortError" });
  assert.ok(Date.now() - started < 2000);
  await assert.rejects(queue.consume({ waitSeconds: 20, signal: controller.signal }), { name: "AbortError" });
  assert.equal((await queue.stats()).delivered_today, 0);
});

test("a batch that arrives after the stop goes back to the queue unstarted, at once", async () => {
  const { slug, token } = await freshQueue();
  const controller = new AbortController();
  // A queue whose poll returns just after the stop was asked for: the batch is leased on the
  // server, and the loop must hand it back rather than start it or leave it to its lease.
  class StoppedDuringPoll extends Queue {
    async consume(options) {
      const { signal: _ignored, ...rest } = options;
      const got = await super.consume(rest);
      if (got.length > 0) controller.abort();
      return got;
    }
  }
  const queue = new StoppedDuringPoll({ url: URL_BASE, token, queue: slug });
  await queue.sendBatch([{ body: { n: 1 } }, { body: { n: 2 } }]);
  let handled = 0;
  const counted = await consume(queue, () => handled++, { waitSeconds: 1, signal: controller.signal });
  assert.equal(handled, 0, "the handler never ran");
  assert.equal(counted.messages_retried, 2);
  const back = await drain(queue, 2, 0);
  assert.equal(back.length, 2, "both are ready again, not waiting for their lease");
  assert.ok(back.every((m) => m.attempts === 2), "each was fetched once and returned by a nack");
});

test("the loop acknowledges each batch with its next poll, and the last one when it stops", async () => {
  const { slug, token } = await freshQueue();
  const calls = { consume: 0, consumeAndAck: 0, ack: 0 };
  class Counting extends Queue {
    async consume(options) {
      calls.consume++;
      return super.consume(options);
    }
    async consumeAndAck(receipts, options) {
      calls.consumeAndAck++;
      return super.consumeAndAck(receipts, options);
    }
    async ack(receipts) {
      calls.ack++;
      return super.ack(receipts);
    }
  }
  const queue = new Counting({ url: URL_BASE, token, queue: slug });
  await queue.sendBatch(Array.from({ length: 6 }, (_, n) => ({ body: { n } })));
  const controller = new AbortController();
  let handled = 0;
  const counted = await consume(
    queue,
    (batch) => {
      handled += batch.messages.length;
      if (handled === 6) controller.abort();
    },
    { messagesPerRun: 2, waitSeconds: 1, signal: controller.signal },
  );
  assert.equal(handled, 6);
  assert.equal(counted.messages_acked, 6);
  assert.deepEqual(calls, { consume: 1, consumeAndAck: 2, ack: 1 }, "three batches: one request each, and one ack at the stop");
  const stats = await queue.stats();
  assert.equal(stats.depth.total, 0, "every message acknowledged and gone");
});

test("consumeAndAck acknowledges first and says what each receipt did", async () => {
  const { queue } = await freshQueue();
  await queue.sendBatch([{ body: "a" }, { body: "b" }]);
  const first = await queue.consume({ maxMessages: 1 });
  const answer = await queue.consumeAndAck([first[0].receipt], { maxMessages: 10 });
  assert.deepEqual(answer.ack, { acked: 1, failed: [] });
  assert.equal(answer.messages.length, 1, "the other message; the acknowledged one is gone");
  const again = await queue.consumeAndAck([first[0].receipt]);
  assert.equal(again.ack.failed[0].error, "lease_lost");
  await assert.rejects(queue.consumeAndAck([]), /1 to 100 receipts/);
});
