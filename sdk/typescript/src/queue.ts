/**
 * `Queue`: one queue of the service, as a producer (`send`, `sendBatch`) and as the rest of the
 * queue API (consume, ack, nack, extend, stats, peek, purge, dead letters) that consumers and tools use.
 *
 * Publishes are retried on 429, 503 and connection failures, so each one carries an idempotency
 * key: the caller's, or one generated here, so a retried publish cannot store a message twice
 * (a client made with `maxRetries: 0` never retries and sends only the caller's keys).
 */

import { randomUUID } from "node:crypto";
import { encode, isBytes, type SendOptions } from "./body.js";
import { AqsError, invalid } from "./errors.js";
import { Connection, type ConnectionOptions } from "./http.js";
import type {
  AckAnswer,
  ConsumedMessage,
  DeadLetter,
  ExtendAnswer,
  NackAnswer,
  PeekedMessage,
  Published,
  PublishRequest,
  Stats,
} from "./wire.js";

/** The most entries one batch publish takes (and receipts one ack or nack takes). */
export const BATCH_MAX = 100;

export interface QueueOptions extends ConnectionOptions {
  /** The queue's slug, the name in its address. */
  queue: string;
}

/** An entry of `sendBatch`: a body, or an object naming the body and its options. */
export type BatchEntry<Body = unknown> = string | Uint8Array | ArrayBuffer | ({ body: Body } & SendOptions);

/** Options of a whole `sendBatch` (Cloudflare's `QueueSendBatchOptions`). */
export interface SendBatchOptions {
  /** The delay of every entry that names none. */
  delaySeconds?: number;
}

export interface ConsumeOptions {
  /** 1 to 100 (default 10). */
  maxMessages?: number;
  /** 0 to 20 seconds of long poll (default 0). */
  waitSeconds?: number;
  /** The lease, in seconds; the queue's visibility timeout when left out. */
  visibilitySeconds?: number;
  /**
   * Aborting it ends the poll at once: the call rejects with the signal's reason. A batch the
   * server was handing over at that instant waits out its lease before it is delivered again.
   */
  signal?: AbortSignal;
}

/**
 * `Body` types what `send` takes, so `Queue<Body>` also reads as Cloudflare's producer binding type
 * in a Worker's `Env`.
 */
export class Queue<Body = unknown> {
  readonly name: string;
  readonly #conn: Connection;
  readonly #retries: boolean;

  constructor(options: QueueOptions) {
    if (!options.queue) throw invalid("queue is required (the queue's slug)");
    this.name = options.queue;
    this.#conn = new Connection(options);
    this.#retries = (options.maxRetries ?? 5) > 0;
  }

  /** Publishes one message: an object as JSON, a string as text, bytes as binary. */
  async send(body: Body, options: SendOptions = {}): Promise<Published> {
    return this.#conn.call<Published>("POST", this.#path("messages"), this.#withKey(encode(body, options)));
  }

  /**
   * Publishes up to 100 messages (an array or any iterable) in one request; more throws and sends
   * nothing. `options.delaySeconds` delays every entry that names no delay of its own.
   */
  async sendBatch(entries: Iterable<BatchEntry<Body>>, options: SendBatchOptions = {}): Promise<Published[]> {
    const list = entries !== null && typeof entries === "object" && Symbol.iterator in entries ? Array.from(entries) : null;
    if (list === null || list.length === 0 || list.length > BATCH_MAX) {
      throw invalid(`sendBatch takes 1 to ${BATCH_MAX} entries; got ${list === null ? "none" : list.length}`);
    }
    const messages = list.map((entry, index) => {
      const request = encodeEntry(entry, index);
      if (options.delaySeconds !== undefined && request.delay_seconds === undefined) request.delay_seconds = options.delaySeconds;
      return this.#withKey(request);
    });
    const answer = await this.#conn.call<{ messages: Published[] }>("POST", this.#path("messages/batch"), { messages });
    return answer.messages;
  }

  /** Leases up to `maxMessages` messages; each comes with the receipt that settles it. */
  async consume(options: ConsumeOptions = {}): Promise<ConsumedMessage[]> {
    const request = {
      max_messages: options.maxMessages ?? 10,
      max_wait_seconds: options.waitSeconds ?? 0,
      ...(options.visibilitySeconds === undefined ? {} : { visibility_seconds: options.visibilitySeconds }),
    };
    const answer = await this.#conn.call<{ messages: ConsumedMessage[] }>(
      "POST",
      this.#path("consume"),
      request,
      options.signal,
    );
    return answer.messages;
  }

  /**
   * Acknowledges `receipts` (1 to 100, a consumer's previous batch) as `ack` would, then leases as
   * `consume` does: one request instead of two. Answers the messages and what the acknowledgements
   * did. Aborted by `options.signal`, the acknowledgements may or may not have been made.
   */
  async consumeAndAck(
    receipts: readonly string[],
    options: ConsumeOptions = {},
  ): Promise<{ messages: ConsumedMessage[]; ack: AckAnswer }> {
    if (receipts.length === 0 || receipts.length > BATCH_MAX) {
      throw invalid(`consumeAndAck takes 1 to ${BATCH_MAX} receipts; got ${receipts.length}`);
    }
    const request = {
      max_messages: options.maxMessages ?? 10,
      max_wait_seconds: options.waitSeconds ?? 0,
      ...(options.visibilitySeconds === undefined ? {} : { visibility_seconds: options.visibilitySeconds }),
      ack: receipts,
    };
    return this.#conn.call<{ messages: ConsumedMessage[]; ack: AckAnswer }>(
      "POST",
      this.#path("consume"),
      request,
      options.signal,
    );
  }

  async ack(receipts: readonly string[]): Promise<AckAnswer> {
    return this.#conn.call<AckAnswer>("POST", this.#path("ack"), { receipts });
  }

  /** Returns messages for another attempt, after `delaySeconds`; `error` is kept as the reason. */
  async nack(receipts: readonly string[], options: { delaySeconds?: number; error?: string } = {}): Promise<NackAnswer> {
    const request = {
      receipts,
      ...(options.delaySeconds ? { delay_seconds: options.delaySeconds } : {}),
      ...(options.error ? { error: options.error } : {}),
    };
    return this.#conn.call<NackAnswer>("POST", this.#path("nack"), request);
  }

  /**
   * A heartbeat for long work: each named lease now ends `visibilitySeconds` (1 s to 12 h) from
   * now. Use the answer's `new_receipt`s from then on; a stale receipt comes back in `failed` as
   * `lease_lost`.
   */
  async extend(receipts: readonly string[], visibilitySeconds: number): Promise<ExtendAnswer> {
    return this.#conn.call<ExtendAnswer>("POST", this.#path("extend"), {
      receipts,
      visibility_seconds: visibilitySeconds,
    });
  }

  async stats(): Promise<Stats> {
    return this.#conn.call<Stats>("GET", this.#path("stats"));
  }

  async peek(limit = 10): Promise<PeekedMessage[]> {
    const answer = await this.#conn.call<{ messages: PeekedMessage[] }>("GET", this.#path(`messages/peek?limit=${limit}`));
    return answer.messages;
  }

  /** Deletes waiting ready messages (`"dead"`: the dead letters). */
  async purge(state: "ready" | "dead" = "ready"): Promise<number> {
    return (await this.#conn.call<{ purged: number }>("POST", this.#path("purge"), { state })).purged;
  }

  async deadLetters(limit = 10): Promise<DeadLetter[]> {
    const answer = await this.#conn.call<{ dead_letters: DeadLetter[] }>("GET", this.#path(`dead-letters?limit=${limit}`));
    return answer.dead_letters;
  }

  /** Moves dead letters back to the queue: the ids given, or all of them. */
  async replayDeadLetters(ids?: readonly string[]): Promise<number> {
    const body = ids === undefined ? { all: true } : { ids };
    return (await this.#conn.call<{ replayed: number }>("POST", this.#path("dead-letters/replay"), body)).replayed;
  }

  async purgeDeadLetters(ids?: readonly string[]): Promise<number> {
    const body = ids === undefined ? { all: true } : { ids };
    return (await this.#conn.call<{ purged: number }>("POST", this.#path("dead-letters/purge"), body)).purged;
  }

  #withKey(request: PublishRequest): PublishRequest {
    if (request.idempotency_key !== undefined || !this.#retries) return request;
    return { ...request, idempotency_key: randomUUID() };
  }

  #path(route: string): string {
    return `${encodeURIComponent(this.name)}/${route}`;
  }
}

/** In a batch a string or bytes is a body, and an object is always an entry with a `body`. */
function encodeEntry(entry: BatchEntry<unknown>, index: number): PublishRequest {
  if (typeof entry === "string" || isBytes(entry)) return encode(entry);
  if (entry === null || typeof entry !== "object" || Array.isArray(entry) || !("body" in entry)) {
    throw new AqsError("invalid_request", `entries[${index}] must be a string, bytes or {body, ...options}`, 0, {
      index,
    });
  }
  const { body, ...options } = entry;
  return encode(body, options);
}
