/** The `aqs` package: a producer, the queue API, and a consumer with the Worker trigger's semantics. */

export { AqsError, ERROR_CODES, type ErrorCode } from "./errors.js";
export { Queue, BATCH_MAX, type QueueOptions, type BatchEntry, type ConsumeOptions } from "./queue.js";
export type { SendOptions } from "./body.js";
export { decode, encode } from "./body.js";
export { Message, MessageBatch, throwBackoffSeconds, type RetryOptions, type Decision } from "./batch.js";
export { consume, runOne, type QueueHandler, type ConsumerOptions } from "./consumer.js";
export { createSdk, push, type Sdk, type SdkOptions } from "./push.js";
export { newMetrics, type Metrics } from "./metrics.js";
export { runWorker, type WorkerOptions, type Binding } from "./worker.js";
export type * from "./wire.js";
export { runProject, type ProjectOptions } from "./project.js";
export { readConfig, findConfig, tokenVariable, ConfigError, type ProjectConfig } from "./wrangler.js";
export { BundleError } from "./bundle.js";
export type { ExecutionContext } from "./context.js";
export type { SendBatchOptions } from "./queue.js";
export type { CloudflareContentType } from "./body.js";
export type {
  ExportedHandler,
  ExportedHandlerFetchHandler,
  ExportedHandlerQueueHandler,
  QueueBinding,
  QueueSendOptions,
  QueueSendBatchOptions,
  QueueRetryOptions,
  MessageSendRequest,
} from "./cloudflare.js";
