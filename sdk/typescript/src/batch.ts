/**
 * The batch a `queue(batch, env)` handler receives, and what its answer means (the Worker queue
 * trigger's contract):
 * - `message.ack()` / `message.retry({delaySeconds})` decide one message; `batch.ackAll()` /
 *   `batch.retryAll()` decide every message; the last call for a message wins.
 * - a handler that returns acknowledges every message it did not mention;
 * - a handler that throws returns every message it did not decide, after an exponential backoff
 *   from 2 s (capped at 5 min); explicit decisions survive the throw. The server dead-letters a
 *   message once it used the queue's attempts.
 * A batch made with a `retryDelaySeconds` (a wrangler consumer's `retry_delay`) uses it for a
 * `retry()` without a delay and for a throw, as Cloudflare does.
 */

import { decode } from "./body.js";
import type { ConsumedMessage } from "./wire.js";

export interface RetryOptions {
  delaySeconds?: number;
}

export type Decision = { kind: "ack" } | { kind: "retry"; delaySeconds: number };

/** The backoff of a thrown batch: 2 s, 4 s, 8 s, … by the message's attempt, at most 5 minutes. */
export function throwBackoffSeconds(attempts: number): number {
  const exponent = Math.min(Math.max(attempts, 1) - 1, 16);
  return Math.min(2 * 2 ** exponent, 300);
}

export class Message<Body = unknown> {
  readonly id: string;
  /** When the message was published. */
  readonly timestamp: Date;
  /** An object for JSON, a string for text, a `Uint8Array` otherwise. */
  readonly body: Body;
  /** This delivery's number: 1 on the first. */
  readonly attempts: number;
  readonly content_type: string;
  readonly attributes: Record<string, unknown>;
  readonly group_id: string | null;
  /** The receipt that settles this delivery. */
  readonly receipt: string;
  #decision: Decision | undefined;
  readonly #retryDelaySeconds: number;

  constructor(wire: ConsumedMessage, retryDelaySeconds = 0) {
    this.#retryDelaySeconds = retryDelaySeconds;
    this.id = wire.id;
    this.timestamp = new Date(wire.published_at);
    this.body = decode(wire.body_base64, wire.content_type) as Body;
    this.attempts = wire.attempts;
    this.content_type = wire.content_type;
    this.attributes = wire.attributes ?? {};
    this.group_id = wire.group_id;
    this.receipt = wire.receipt;
  }

  ack(): void {
    this.#decision = { kind: "ack" };
  }

  retry(options: RetryOptions = {}): void {
    this.#decision = { kind: "retry", delaySeconds: delayOf(options, this.#retryDelaySeconds) };
  }

  /** The handler's explicit decision, if it made one. */
  get decision(): Decision | undefined {
    return this.#decision;
  }
}

export class MessageBatch<Body = unknown> {
  /** The queue's slug. */
  readonly queue: string;
  readonly messages: readonly Message<Body>[];
  readonly #retryDelaySeconds: number | undefined;

  /** `retryDelaySeconds`: the delay of a `retry()` that names none and of a throw. */
  constructor(queue: string, messages: readonly ConsumedMessage[], retryDelaySeconds?: number) {
    this.queue = queue;
    this.#retryDelaySeconds = retryDelaySeconds;
    this.messages = messages.map((m) => new Message<Body>(m, retryDelaySeconds));
  }

  ackAll(): void {
    for (const message of this.messages) message.ack();
  }

  retryAll(options: RetryOptions = {}): void {
    for (const message of this.messages) message.retry(options);
  }

  /** What becomes of each message once the handler returned (`threw`: it threw). */
  outcome(threw: boolean): Map<Message<Body>, Decision> {
    const out = new Map<Message<Body>, Decision>();
    for (const message of this.messages) {
      const fallback: Decision = threw
        ? { kind: "retry", delaySeconds: this.#retryDelaySeconds ?? throwBackoffSeconds(message.attempts) }
        : { kind: "ack" };
      out.set(message, message.decision ?? fallback);
    }
    return out;
  }
}

function delayOf(options: RetryOptions, fallback: number): number {
  const delay = options.delaySeconds ?? fallback;
  if (!Number.isFinite(delay) || delay < 0) throw new RangeError("delaySeconds must be a number of seconds, 0 or more");
  return Math.floor(delay);
}
