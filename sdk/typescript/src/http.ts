/**
 * One HTTP call to the queue API with the service's retry rules: a 429 or 503 is retried after its
 * `Retry-After` (seconds or an HTTP date), a connection failure after an exponential backoff, up
 * to `maxRetries` times. Callers make a request safe to repeat before asking for retries (a
 * publish always carries an idempotency key). A call given a signal ends as soon as it aborts,
 * mid-request or between tries, rejecting with the signal's reason (an `AbortError`).
 */

import { AqsError } from "./errors.js";

export interface ConnectionOptions {
  /** The service's origin, e.g. `http://127.0.0.1:8080` (without `/queue/v1`). */
  url: string;
  /** An `acq_…` token of the queue. */
  token: string;
  /** Retries of a 429, a 503 or a connection failure (default 5). */
  maxRetries?: number;
  /** The longest wait between two tries, in seconds (default 30). */
  maxRetryWaitSeconds?: number;
}

const RETRYABLE = new Set([429, 503]);

export class Connection {
  readonly origin: string;
  readonly #token: string;
  readonly #maxRetries: number;
  readonly #maxWaitMs: number;

  constructor(options: ConnectionOptions) {
    if (!options.url) throw new AqsError("invalid_request", "url is required (the service's origin)");
    if (!options.token) throw new AqsError("invalid_request", "token is required (an acq_ token)");
    this.origin = options.url.replace(/\/+$/, "").replace(/\/queue\/v1$/, "");
    this.#token = options.token;
    this.#maxRetries = options.maxRetries ?? 5;
    this.#maxWaitMs = (options.maxRetryWaitSeconds ?? 30) * 1000;
  }

  /**
   * Sends `body` (JSON) to `path` under `/queue/v1/` and returns the parsed JSON answer. Aborting
   * `signal` ends the call at once, whatever it is doing (a long poll, a wait before a retry).
   */
  async call<T>(method: "GET" | "POST", path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const url = `${this.origin}/queue/v1/${path}`;
    const init: RequestInit = {
      method,
      headers: {
        authorization: `Bearer ${this.#token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(signal === undefined ? {} : { signal }),
    };
    for (let attempt = 0; ; attempt++) {
      signal?.throwIfAborted();
      let response: Response;
      try {
        response = await fetch(url, init);
      } catch (error) {
        signal?.throwIfAborted();
        if (attempt >= this.#maxRetries) {
          throw new AqsError("service_unavailable", `cannot reach ${this.origin}: ${describe(error)}`);
        }
        await sleep(this.#backoffMs(attempt), signal);
        continue;
      }
      if (response.ok) {
        try {
          return (await response.json()) as T;
        } catch (error) {
          signal?.throwIfAborted(); // cut off mid-body
          throw error;
        }
      }
      const error = await toError(response);
      if (!RETRYABLE.has(response.status) || attempt >= this.#maxRetries) throw error;
      const wait = error.retryAfterSeconds === undefined ? this.#backoffMs(attempt) : error.retryAfterSeconds * 1000;
      await sleep(Math.min(wait, this.#maxWaitMs), signal);
    }
  }

  #backoffMs(attempt: number): number {
    return Math.min(100 * 2 ** attempt, this.#maxWaitMs);
  }
}

/** The API's error envelope `{error, message, index?}` as an `AqsError`. */
async function toError(response: Response): Promise<AqsError> {
  const text = await response.text();
  let parsed: { error?: unknown; message?: unknown; index?: unknown } = {};
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    // Not our envelope (a proxy's page, say): keep the status and the text.
  }
  const code = typeof parsed.error === "string" ? parsed.error : `http_${response.status}`;
  const message = typeof parsed.message === "string" ? parsed.message : text.slice(0, 200) || response.statusText;
  const retryAfterSeconds = retryAfter(response.headers.get("retry-after"));
  return new AqsError(code, message, response.status, {
    ...(typeof parsed.index === "number" ? { index: parsed.index } : {}),
    ...(retryAfterSeconds === undefined ? {} : { retryAfterSeconds }),
  });
}

/** `Retry-After` as seconds: a number of seconds, or an HTTP date from now. */
export function retryAfter(header: string | null): number | undefined {
  if (header === null || header.trim() === "") return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
  }
  return String(error);
}

/**
 * Waits `ms`; with a signal, no longer than until it aborts, and then rejects with its reason
 * (`quiet`: resolves instead, for loops that check the signal themselves).
 */
export function sleep(ms: number, signal?: AbortSignal, quiet = false): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      if (quiet) resolve();
      else reject(signal.reason);
      return;
    }
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      if (signal?.aborted && !quiet) reject(signal.reason);
      else resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
