/**
 * The push spec's producer: `push(queue, payload, delaySecs?)` returns the message id and throws
 * when the enqueue is refused. A non-string payload is `JSON.stringify`'d (sent as
 * `application/json`); a string is sent as it is (`text/plain`), so the handler's `payload` is
 * that text either way.
 */

import { AqsError } from "./errors.js";
import { Queue } from "./queue.js";

export interface SdkOptions {
  /** The service's origin; `AQS_URL` when left out. */
  url?: string;
  /** The token for every queue; `AQS_TOKEN` when left out. */
  token?: string;
  /** Tokens by queue slug, for an app that pushes to several queues with one token each. */
  tokens?: Record<string, string>;
}

export interface Sdk {
  queue: { push(queue: string, payload: unknown, delaySecs?: number): Promise<string> };
}

/**
 * The push spec's `createSdk("<app-id>")` works as written: a string names the app, which AQS does
 * not need (a queue token says which member and queue), so the URL and token come from the
 * environment.
 */
export function createSdk(appOrOptions: SdkOptions | string = {}): Sdk {
  const options: SdkOptions = typeof appOrOptions === "string" ? {} : appOrOptions;
  const queues = new Map<string, Queue>();
  const queueFor = (name: string): Queue => {
    let queue = queues.get(name);
    if (queue === undefined) {
      const url = options.url ?? process.env.AQS_URL ?? "";
      const token = options.tokens?.[name] ?? options.token ?? process.env.AQS_TOKEN ?? "";
      if (!url) throw new AqsError("invalid_request", "no service URL: pass url or set AQS_URL");
      if (!token) throw new AqsError("invalid_request", `no token for queue ${name}: pass token or set AQS_TOKEN`);
      queue = new Queue({ url, token, queue: name });
      queues.set(name, queue);
    }
    return queue;
  };
  return {
    queue: {
      async push(name, payload, delaySecs) {
        const body = typeof payload === "string" ? payload : JSON.stringify(payload);
        if (body === undefined) throw new AqsError("invalid_request", "the payload cannot be serialised as JSON");
        const published = await queueFor(name).send(body, {
          contentType: typeof payload === "string" ? "text/plain" : "application/json",
          ...(delaySecs ? { delaySeconds: delaySecs } : {}),
        });
        return published.id;
      },
    },
  };
}

/** `push` with `AQS_URL` and `AQS_TOKEN` from the environment. */
export function push(queue: string, payload: unknown, delaySecs?: number): Promise<string> {
  return createSdk().queue.push(queue, payload, delaySecs);
}
