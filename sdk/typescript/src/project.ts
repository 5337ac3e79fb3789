/**
 * Runs a Cloudflare Worker project as its wrangler configuration describes it (see wrangler.ts):
 * bundles `main`, builds `env` from `vars` and `queues.producers`, and runs one consumer per
 * `queues.consumers` entry, each queue with its own token. `max_retries` and `dead_letter_queue`
 * belong to the queue itself in AQS (its max attempts and its dead letters): they are announced
 * once at start, not applied.
 */

import { bundle } from "./bundle.js";
import type { Metrics } from "./metrics.js";
import { Queue } from "./queue.js";
import { binding, defaultLog, loadWorker, runPlan, type ConsumerPlan, type RunnerOptions } from "./worker.js";
import { ConfigError, readConfig, tokensFor } from "./wrangler.js";

export interface ProjectOptions extends RunnerOptions {
  /** The wrangler configuration file. */
  config: string;
  /** The service's origin. */
  url: string;
  /** Where the tokens are read from (`AQS_TOKEN_<QUEUE>`, `AQS_TOKEN`); default `process.env`. */
  environment?: Record<string, string | undefined>;
}

export async function runProject(options: ProjectOptions): Promise<Metrics> {
  const log = options.log ?? defaultLog;
  const project = readConfig(options.config);
  const queues = [...project.producers.map((p) => p.queue), ...project.consumers.map((c) => c.queue)];
  const tokens = tokensFor(queues, options.environment ?? process.env);
  const handlers = await loadWorker(await bundle(project.main, project.dir), true);
  if (project.consumers.length > 0 && handlers.queue === undefined) {
    throw new ConfigError(`${project.main} exports no queue(batch, env, ctx) handler, but the configuration names consumers`);
  }
  if (project.consumers.length === 0 && handlers.fetch === undefined) {
    throw new ConfigError(`${project.main} exports no fetch handler and the configuration names no consumers: nothing to run`);
  }

  const clients = new Map<string, Queue>();
  const client = (slug: string): Queue => {
    let queue = clients.get(slug);
    if (queue === undefined) {
      queue = new Queue({ url: options.url, token: tokens.get(slug)!, queue: slug });
      clients.set(slug, queue);
    }
    return queue;
  };
  const env: Record<string, unknown> = { ...project.vars };
  for (const producer of project.producers) {
    env[producer.binding] = binding(client(producer.queue), producer.deliveryDelaySeconds);
    log(`env.${producer.binding} sends to ${producer.queue}`);
  }
  const consumers: ConsumerPlan[] = project.consumers.map((consumer) => {
    const settings: string[] = [];
    if (consumer.maxRetries !== undefined) settings.push(`max_retries = ${consumer.maxRetries}`);
    if (consumer.deadLetterQueue !== undefined) settings.push(`dead_letter_queue = "${consumer.deadLetterQueue}"`);
    if (settings.length > 0) {
      log(
        `${consumer.queue}: ${settings.join(", ")}: in AQS these are the queue's own settings (its max attempts, ` +
          "after which a message goes to the queue's dead letters); set them on the queue in the console or the " +
          "management API, the runner does not apply them",
      );
    }
    if (consumer.batchTimeoutCut !== undefined) {
      log(`${consumer.queue}: max_batch_timeout = ${consumer.batchTimeoutCut} is longer than a long poll's 20 s; polling 20 s`);
    }
    const plan: ConsumerPlan = { queue: client(consumer.queue) };
    if (consumer.messagesPerRun !== undefined) plan.messagesPerRun = consumer.messagesPerRun;
    if (consumer.waitSeconds !== undefined) plan.waitSeconds = consumer.waitSeconds;
    if (consumer.concurrency !== undefined) plan.concurrency = consumer.concurrency;
    if (consumer.retryDelaySeconds !== undefined) plan.retryDelaySeconds = consumer.retryDelaySeconds;
    return plan;
  });
  for (const queue of project.skipped) log(`${queue}: an HTTP pull consumer; its clients use the queue API directly`);
  return runPlan({
    handlers,
    env,
    consumers,
    ...(options.port === undefined ? {} : { port: options.port }),
    ...(options.host === undefined ? {} : { host: options.host }),
    ...(options.metricsPort === undefined ? {} : { metricsPort: options.metricsPort }),
    log,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    ...(options.summaryEveryMs === undefined ? {} : { summaryEveryMs: options.summaryEveryMs }),
  });
}
