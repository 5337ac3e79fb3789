// BullMQ, measured on the same Redis and machine as AQS, so the two can be compared in one run
// (docs/performance.md). infra/bench runs it from a copy of this folder:
//   npm ci --prefix bench/peers/bullmq && REDIS_URL=redis://127.0.0.1:6379 N=30000 node bench/peers/bullmq/bench.mjs
// Prints one JSON line per scenario: {"peer":"bullmq","scenario":...,"messages":N,"seconds":s,"msgs_per_s":r}
// With HANDLER_URL (the bench's lean push handler, `aqs-bench handler`), also the peer of push delivery:
// a Worker of concurrency 100 whose processor POSTs each job to the handler, as AQS's message mode does.
import { Queue, Worker } from 'bullmq';

const url = new URL(process.env.REDIS_URL || 'redis://127.0.0.1:6379');
const connection = { host: url.hostname, port: Number(url.port || 6379) };
const N = Number(process.env.N || 30000);
const CONCURRENCY = Number(process.env.CONCURRENCY || 64);
const BODY = { type: 'resize', key: 'avatars/42.png', pad: 'x'.repeat(Number(process.env.PAD || 64)) };
const name = `peer-bench-${process.pid}-${Date.now()}`;
const queue = new Queue(name, { connection });

function report(scenario, messages, ms) {
  const seconds = ms / 1000;
  console.log(JSON.stringify({ peer: 'bullmq', scenario, messages, seconds, msgs_per_s: Math.round(messages / seconds) }));
}

// One message per call, CONCURRENCY callers at once (the peer of single-message publish).
let next = 0;
let t0 = performance.now();
await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
  while (next < N) { next++; await queue.add('job', BODY, { removeOnComplete: true }); }
}));
report('add', N, performance.now() - t0);

// Batches of 100 (the peer of batch publish).
t0 = performance.now();
for (let k = 0; k < N; k += 100) {
  await queue.addBulk(Array.from({ length: 100 }, () => ({ name: 'job', data: BODY, opts: { removeOnComplete: true } })));
}
report('add_bulk_100', N, performance.now() - t0);

// Drain both with a worker of concurrency 100 (the peer of consume + ack).
let done = 0;
t0 = performance.now();
await new Promise((resolve) => {
  new Worker(name, async () => { if (++done === 2 * N) resolve(); }, { connection, concurrency: 100 });
});
report('worker_100', 2 * N, performance.now() - t0);
await queue.obliterate({ force: true });

// Push: N jobs added untimed, then drained by a Worker of concurrency 100 whose processor POSTs
// each job to the handler, with the body AQS's message mode sends; a non-2xx fails the job.
if (process.env.HANDLER_URL) {
  const pushed = new Queue(`${name}-push`, { connection });
  for (let k = 0; k < N; k += 100) {
    await pushed.addBulk(Array.from({ length: 100 }, () => ({ name: 'job', data: BODY, opts: { removeOnComplete: true, removeOnFail: true } })));
  }
  let posted = 0;
  t0 = performance.now();
  await new Promise((resolve, reject) => {
    new Worker(pushed.name, async (job) => {
      const body = JSON.stringify({ id: job.id, queue: pushed.name, payload: JSON.stringify(job.data), attempts: job.attemptsMade });
      const answer = await fetch(process.env.HANDLER_URL, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      await answer.arrayBuffer();
      if (!answer.ok) { reject(new Error(`handler answered ${answer.status}`)); return; }
      if (++posted === N) resolve();
    }, { connection, concurrency: 100 });
  });
  report('push_worker_100', N, performance.now() - t0);
  await pushed.obliterate({ force: true });
}
process.exit(0);
