/**
 * Cloudflare Workers' type names for the handlers and bindings `aqs-worker` runs, so a Worker
 * written for Cloudflare Queues type-checks against this package: `ExportedHandler<Env,
 * QueueHandlerMessage>`, `ExecutionContext`, `MessageBatch<Body>`, `Message<Body>` (the classes
 * in batch.ts), `Queue<Body>` (the producer binding), `MessageSendRequest`, `QueueSendOptions`,
 * `QueueSendBatchOptions`, `QueueRetryOptions`. `cloudflare.d.ts` at the package's root declares
 * them globally, as `@cloudflare/workers-types` does.
 */

import type { MessageBatch, RetryOptions } from "./batch.js";
import type { SendOptions } from "./body.js";
import type { ExecutionContext } from "./context.js";
import type { SendBatchOptions } from "./queue.js";
import type { Published } from "./wire.js";

export type ExportedHandlerFetchHandler<Env = unknown> = (
  request: Request,
  env: Env,
  ctx: ExecutionContext,
) => Response | Promise<Response>;

export type ExportedHandlerQueueHandler<Env = unknown, Message = unknown> = (
  batch: MessageBatch<Message>,
  env: Env,
  ctx: ExecutionContext,
) => void | Promise<void>;

/**
 * What a Worker module exports (`export default { fetch, queue } satisfies ExportedHandler<Env>`).
 * The third parameter is Cloudflare's request metadata type, taken for compatibility: requests
 * here carry none.
 */
export interface ExportedHandler<Env = unknown, QueueHandlerMessage = unknown, _CfHostMetadata = unknown> {
  fetch?: ExportedHandlerFetchHandler<Env>;
  queue?: ExportedHandlerQueueHandler<Env, QueueHandlerMessage>;
}

/** The producer binding `env[binding]` (Cloudflare's `Queue<Body>`). */
export interface QueueBinding<Body = unknown> {
  send(body: Body, options?: QueueSendOptions): Promise<Published>;
  sendBatch(messages: Iterable<MessageSendRequest<Body>>, options?: QueueSendBatchOptions): Promise<Published[]>;
}

export type QueueSendOptions = SendOptions;
export type QueueSendBatchOptions = SendBatchOptions;
export type QueueRetryOptions = RetryOptions;
export type MessageSendRequest<Body = unknown> = { body: Body } & SendOptions;
