// A Worker for the runner's tests: prints "handled <id> <n>" per message and what the binding
// offers, and, when WORKER_GATE names a file, waits for that file before returning each batch.
import { existsSync } from "node:fs";

export async function queue(batch, env) {
  console.log(`batch ${batch.queue} ${batch.messages.length} send=${typeof env.JOBS?.send}`);
  if (process.env.WORKER_GATE) {
    console.log("started");
    while (!existsSync(process.env.WORKER_GATE)) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  for (const message of batch.messages) console.log(`handled ${message.id} ${message.body.n}`);
}
