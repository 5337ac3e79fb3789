// The spec's producer sample ("Worker queue trigger"), as written there: every request publishes
// one JSON message (delayed 30 s, idempotency key resize-42) and a batch of two.
//
//   AQS_URL=http://127.0.0.1:8080 AQS_TOKEN=acq_… aqs-worker examples/fetch.mjs --queue image-jobs --alias JOBS --mode send --port 8787

export async function fetch(request, env) {
  await env.JOBS.send(
    { type: "resize", key: "avatars/42.png" },
    { contentType: "application/json", delaySeconds: 30, idempotencyKey: "resize-42" },
  );
  await env.JOBS.sendBatch([
    { body: { type: "thumbnail", key: "media/clip-9.mp4" }, contentType: "application/json" },
    "plain text message",
  ]);
  return new Response("queued", { status: 202 });
}
