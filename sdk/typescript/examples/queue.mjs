// The spec's queue handler ("Worker queue trigger"), as written there. `handle` is this example's
// work: it prints the body and fails for a body that asks to ({"fail": true}), so the retry path
// runs too.
//
//   AQS_URL=http://127.0.0.1:8080 AQS_TOKEN=acq_… aqs-worker examples/queue.mjs --queue image-jobs --alias JOBS --mode consume --messages-per-run 10 --wait 20

async function handle(body, env) {
  if (body && typeof body === "object" && body.fail) throw new Error("asked to fail");
  console.log(`handled ${JSON.stringify(body)}`);
}

export async function queue(batch, env) {
  for (const message of batch.messages) {
    try {
      await handle(message.body, env);
      message.ack();
    } catch (error) {
      message.retry({ delaySeconds: 60 });
    }
  }
}
