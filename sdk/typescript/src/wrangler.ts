/**
 * A Cloudflare Worker project's own configuration, as `aqs-worker --config` reads it: the first of
 * `wrangler.json`, `wrangler.jsonc`, `wrangler.toml` (wrangler's own order) in a folder, or the
 * file named. It takes `main`, `vars`, `queues.producers` and `queues.consumers`; every other key
 * (bindings of other kinds, `compatibility_date`, routes, ...) is Cloudflare's and is left alone.
 * A file that does not parse, or a setting out of range, is an error naming the file (and the line).
 */

import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { parse as parseJsonc, printParseErrorCode, type ParseError } from "jsonc-parser";
import { parse as parseToml, TomlError } from "smol-toml";

export const CONFIG_FILES = ["wrangler.json", "wrangler.jsonc", "wrangler.toml"] as const;

/** `queues.producers[]`: `env[binding]` sends to the queue whose slug is `queue`. */
export interface ProducerConfig {
  binding: string;
  queue: string;
  /** `delivery_delay`: the delay of a send that names none. */
  deliveryDelaySeconds?: number;
}

/** `queues.consumers[]`, in the runner's terms. */
export interface ConsumerConfig {
  queue: string;
  /** `max_batch_size`: messages per run, 1 to 100. */
  messagesPerRun?: number;
  /** `max_batch_timeout`: the long poll's wait, at most 20 s (a longer one is cut to 20). */
  waitSeconds?: number;
  /** `max_batch_timeout` as written, when it was cut to 20 s. */
  batchTimeoutCut?: number;
  /** `retry_delay`: the delay of `retry()` without one and of a throw. */
  retryDelaySeconds?: number;
  /** `max_concurrency`: batches in hand at once. */
  concurrency?: number;
  /** `max_retries` and `dead_letter_queue`: the queue's own settings in AQS, only announced. */
  maxRetries?: number;
  deadLetterQueue?: string;
}

export interface ProjectConfig {
  /** The configuration file, absolute. */
  path: string;
  /** Its folder: `main` and the bundle's relative paths start there. */
  dir: string;
  /** The Worker's name (`name`), when given. */
  name?: string;
  /** `main`, absolute. */
  main: string;
  vars: Record<string, unknown>;
  producers: ProducerConfig[];
  consumers: ConsumerConfig[];
  /** `queues.consumers` entries left out (HTTP pull consumers), by queue. */
  skipped: string[];
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/** The configuration file in `dir`, if there is one. */
export function findConfig(dir: string): string | undefined {
  return CONFIG_FILES.map((name) => join(dir, name)).find((path) => existsSync(path));
}

export function readConfig(file: string): ProjectConfig {
  const path = resolve(file);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new ConfigError(`cannot read ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const raw = path.endsWith(".toml") ? tomlOf(text, path) : jsonOf(text, path);
  return projectOf(raw, path);
}

function tomlOf(text: string, path: string): unknown {
  try {
    return parseToml(text);
  } catch (error) {
    if (error instanceof TomlError) {
      const first = error.message.split("\n")[0];
      throw new ConfigError(`${basename(path)}:${error.line}:${error.column}: ${first}`);
    }
    throw error;
  }
}

/** JSON with comments and trailing commas, as wrangler reads `wrangler.json` and `wrangler.jsonc`. */
function jsonOf(text: string, path: string): unknown {
  const errors: ParseError[] = [];
  const value: unknown = parseJsonc(text, errors, { allowTrailingComma: true, disallowComments: false });
  const first = errors[0];
  if (first !== undefined) {
    const before = text.slice(0, first.offset).split("\n");
    const line = before.length;
    const column = before[before.length - 1]!.length + 1;
    throw new ConfigError(`${basename(path)}:${line}:${column}: ${printParseErrorCode(first.error)}`);
  }
  return value;
}

type Table = Record<string, unknown>;

function isTable(value: unknown): value is Table {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function projectOf(raw: unknown, path: string): ProjectConfig {
  const where = basename(path);
  const bad = (message: string): never => {
    throw new ConfigError(`${where}: ${message}`);
  };
  if (!isTable(raw)) bad("the file must hold an object (a table)");
  const config = raw as Table;
  if (typeof config.main !== "string" || config.main === "") bad('"main" must name the Worker\'s entry (e.g. "src/index.ts")');
  const dir = dirname(path);
  const vars = config.vars === undefined ? {} : isTable(config.vars) ? config.vars : bad('"vars" must be an object');
  const queues = config.queues === undefined ? {} : isTable(config.queues) ? config.queues : bad('"queues" must be an object');
  const list = (key: string): Table[] => {
    const value = queues[key];
    if (value === undefined) return [];
    if (!Array.isArray(value) || !value.every(isTable)) bad(`"queues.${key}" must be a list of objects`);
    return value as Table[];
  };

  const producers = list("producers").map((entry, i) => {
    const at = `queues.producers[${i}]`;
    const producer: ProducerConfig = { binding: text(entry, "binding", at, bad), queue: text(entry, "queue", at, bad) };
    const delay = int(entry, "delivery_delay", at, 0, 43_200, bad);
    if (delay !== undefined) producer.deliveryDelaySeconds = delay;
    return producer;
  });
  const skipped: string[] = [];
  const consumers: ConsumerConfig[] = [];
  list("consumers").forEach((entry, i) => {
    const at = `queues.consumers[${i}]`;
    const queue = text(entry, "queue", at, bad);
    if (entry.type === "http_pull") {
      skipped.push(queue);
      return;
    }
    if (entry.type !== undefined && entry.type !== "worker") bad(`${at}.type must be "worker" or "http_pull"`);
    const consumer: ConsumerConfig = { queue };
    const size = int(entry, "max_batch_size", at, 1, 100, bad);
    if (size !== undefined) consumer.messagesPerRun = size;
    const timeout = num(entry, "max_batch_timeout", at, 0, 60, bad);
    if (timeout !== undefined) {
      consumer.waitSeconds = Math.min(20, Math.ceil(timeout));
      if (timeout > 20) consumer.batchTimeoutCut = timeout;
    }
    const retryDelay = int(entry, "retry_delay", at, 0, 43_200, bad);
    if (retryDelay !== undefined) consumer.retryDelaySeconds = retryDelay;
    const concurrency = entry.max_concurrency === null ? undefined : int(entry, "max_concurrency", at, 1, 250, bad);
    if (concurrency !== undefined) consumer.concurrency = concurrency;
    const retries = int(entry, "max_retries", at, 0, 100, bad);
    if (retries !== undefined) consumer.maxRetries = retries;
    if (entry.dead_letter_queue !== undefined) consumer.deadLetterQueue = text(entry, "dead_letter_queue", at, bad);
    consumers.push(consumer);
  });
  const seen = new Set<string>();
  for (const consumer of consumers) {
    if (seen.has(consumer.queue)) bad(`the queue "${consumer.queue}" has two consumers; name it once`);
    seen.add(consumer.queue);
  }
  const bindings = new Set<string>();
  for (const producer of producers) {
    if (bindings.has(producer.binding)) bad(`the binding "${producer.binding}" is named twice in queues.producers`);
    bindings.add(producer.binding);
  }
  return {
    path,
    dir,
    ...(typeof config.name === "string" ? { name: config.name } : {}),
    main: resolve(dir, config.main as string),
    // Plain JSON values, as Cloudflare gives them (the TOML parser's tables have no prototype).
    vars: JSON.parse(JSON.stringify(vars)) as Record<string, unknown>,
    producers,
    consumers,
    skipped,
  };
}

function text(entry: Table, key: string, at: string, bad: (message: string) => never): string {
  const value = entry[key];
  if (typeof value !== "string" || value === "") bad(`${at}.${key} must be a non-empty string`);
  return value as string;
}

function num(entry: Table, key: string, at: string, min: number, max: number, bad: (message: string) => never): number | undefined {
  const value = entry[key];
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value) || value < min || value > max) {
    bad(`${at}.${key} must be a number from ${min} to ${max}`);
  }
  return value as number;
}

function int(entry: Table, key: string, at: string, min: number, max: number, bad: (message: string) => never): number | undefined {
  const value = num(entry, key, at, min, max, bad);
  if (value !== undefined && !Number.isInteger(value)) bad(`${at}.${key} must be a whole number from ${min} to ${max}`);
  return value;
}

/** The environment variable holding a queue's token: `AQS_TOKEN_` and the slug, upper-cased, every other character `_`. */
export function tokenVariable(queue: string): string {
  return `AQS_TOKEN_${queue.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`;
}

/**
 * Each queue's token from `environment`: `AQS_TOKEN_<QUEUE>`, or `AQS_TOKEN` when the project uses
 * one queue. Every missing one is named in one error.
 */
export function tokensFor(queues: readonly string[], environment: Record<string, string | undefined>): Map<string, string> {
  const unique = [...new Set(queues)];
  const tokens = new Map<string, string>();
  const missing: string[] = [];
  for (const queue of unique) {
    const token = environment[tokenVariable(queue)] || (unique.length === 1 ? environment.AQS_TOKEN : undefined);
    if (token) tokens.set(queue, token);
    else missing.push(unique.length === 1 ? `${tokenVariable(queue)} (or AQS_TOKEN)` : tokenVariable(queue));
  }
  if (missing.length > 0) {
    const message =
      unique.length === 1
        ? `set ${missing[0]} to a token of the queue ${unique[0]}`
        : `set ${missing.join(", ")}: the project uses the queues ${unique.join(", ")}, each with a token of its own`;
    throw new ConfigError(message);
  }
  return tokens;
}
