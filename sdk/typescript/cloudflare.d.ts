/**
 * Cloudflare Workers' global type names, for a Worker project moved from Cloudflare Queues: list
 * `"aqs/cloudflare"` in its tsconfig's `compilerOptions.types` (where `@cloudflare/workers-types`
 * was) and `MessageBatch<Body>`, `Message<Body>`, `ExportedHandler<Env>`, `ExecutionContext` and
 * `Queue<Body>` type-check as written, with the web platform's `Request` and `Response`.
 */

/// <reference lib="dom" />
/// <reference lib="dom.iterable" />

import type * as aqs from "./dist/index.js";

declare global {
  type MessageBatch<Body = unknown> = aqs.MessageBatch<Body>;
  type Message<Body = unknown> = aqs.Message<Body>;
  type ExportedHandler<Env = unknown, QueueHandlerMessage = unknown, CfHostMetadata = unknown> = aqs.ExportedHandler<
    Env,
    QueueHandlerMessage,
    CfHostMetadata
  >;
  type ExportedHandlerFetchHandler<Env = unknown> = aqs.ExportedHandlerFetchHandler<Env>;
  type ExportedHandlerQueueHandler<Env = unknown, Body = unknown> = aqs.ExportedHandlerQueueHandler<Env, Body>;
  type ExecutionContext = aqs.ExecutionContext;
  type Queue<Body = unknown> = aqs.QueueBinding<Body>;
  type MessageSendRequest<Body = unknown> = aqs.MessageSendRequest<Body>;
  type QueueSendOptions = aqs.QueueSendOptions;
  type QueueSendBatchOptions = aqs.QueueSendBatchOptions;
  type QueueRetryOptions = aqs.QueueRetryOptions;
}

export {};
