// Bodies round-trip through a real queue: what `send` puts on the wire and what a handler's
// `message.body` holds, by content type.

import assert from "node:assert/strict";
import { test } from "node:test";
import { MessageBatch, decode } from "../dist/index.js";
import { drain, freshQueue } from "../testkit/kit.mjs";

test("JSON, text and binary bodies arrive decoded, with the message's fields", async () => {
  const { queue, slug } = await freshQueue();
  const bytes = new Uint8Array([0, 159, 146, 150, 255]);
  const before = Date.now();
  await queue.send({ type: "resize", key: "avatars/42.png" });
  await queue.send("plain text message");
  await queue.send(bytes);
  await queue.send([1, 2, 3]);
  await queue.send('{"a":1}', { contentType: "application/vnd.aqs.test+json" });
  await queue.send("not json {", { contentType: "application/json" });
  await queue.send("<p>hi</p>", { contentType: "text/html; charset=utf-8" });

  const wire = await drain(queue, 7);
  assert.equal(wire.length, 7);
  assert.deepEqual(
    wire.map((m) => m.content_type),
    [
      "application/json",
      "text/plain",
      "application/octet-stream",
      "application/json",
      "application/vnd.aqs.test+json",
      "application/json",
      "text/html; charset=utf-8",
    ],
  );
  const batch = new MessageBatch(slug, wire);
  assert.equal(batch.queue, slug);
  const bodies = batch.messages.map((m) => m.body);
  assert.deepEqual(bodies[0], { type: "resize", key: "avatars/42.png" });
  assert.equal(bodies[1], "plain text message");
  assert.ok(bodies[2] instanceof Uint8Array);
  assert.deepEqual([...bodies[2]], [...bytes]);
  assert.deepEqual(bodies[3], [1, 2, 3]);
  assert.deepEqual(bodies[4], { a: 1 });
  assert.equal(bodies[5], "not json {", "a JSON body that does not parse stays a string");
  assert.equal(bodies[6], "<p>hi</p>");
  for (const message of batch.messages) {
    assert.match(message.id, /^[0-9a-f]{32}$/);
    assert.ok(message.timestamp instanceof Date);
    assert.ok(message.timestamp.getTime() >= before - 1000, "timestamp is published_at");
    assert.equal(message.attempts, 1, "attempts counts this delivery");
    assert.deepEqual(message.attributes, {});
  }
});

test("a message without a content type is parsed as JSON when it parses", () => {
  const base64 = (text) => Buffer.from(text).toString("base64");
  assert.deepEqual(decode(base64('{"x":[1]}'), ""), { x: [1] });
  assert.equal(decode(base64("hello"), undefined), "hello");
  assert.ok(decode(base64("%PDF"), "application/pdf") instanceof Uint8Array);
});
