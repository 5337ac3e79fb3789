// Shared by the test files: fresh members and queues on the running instance named by AQS_URL
// (infra/test starts one), and a child `aqs-worker` process to drive.

import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Queue } from "../dist/index.js";

export const URL_BASE = process.env.AQS_URL ?? "";
if (!URL_BASE) throw new Error("set AQS_URL to a running AQS (infra/test does)");
export const CLI = fileURLToPath(new URL("../dist/cli.js", import.meta.url));
export const EXAMPLES = fileURLToPath(new URL("../examples/", import.meta.url));
export const FIXTURES = fileURLToPath(new URL("../test/fixtures/", import.meta.url));
export const SDK = fileURLToPath(new URL("..", import.meta.url));

const QUEUES_PER_MEMBER = 10;
let member = null;

async function api(method, path, body, session) {
  const response = await fetch(`${URL_BASE}/api/v1/${path}`, {
    method,
    headers: { "content-type": "application/json", ...(session ? { authorization: `Bearer ${session}` } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const answer = await response.json();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(answer)}`);
  return answer;
}

/** A fresh queue (settings as the management API takes them) and its first token (every scope). */
export async function freshQueue(settings = {}) {
  if (member === null || member.queues === QUEUES_PER_MEMBER) {
    const email = `sdk-${randomUUID()}@example.com`;
    const { session } = await api("POST", "auth/signup", { email, password: `pw-${randomUUID()}` });
    member = { session, queues: 0 };
  }
  member.queues++;
  const created = await api("POST", "queues", { name: `sdk-${randomUUID().slice(0, 8)}`, ...settings }, member.session);
  const slug = created.queue.slug;
  const token = created.token.secret;
  const session = member.session;
  return {
    slug,
    token,
    session,
    queue: new Queue({ url: URL_BASE, token, queue: slug }),
    pause: () => api("POST", `queues/${slug}/pause`, undefined, session),
  };
}

/** Consumes until `count` messages arrived (or a poll comes back empty). */
export async function drain(queue, count, waitSeconds = 2) {
  const out = [];
  while (out.length < count) {
    const got = await queue.consume({ maxMessages: Math.min(100, count - out.length), waitSeconds });
    if (got.length === 0) break;
    out.push(...got);
  }
  return out;
}

/** Runs `aqs-worker` with `args`; lines of its stdout and stderr are collected as they come. */
export function startWorker(args, { token, env = {}, cwd } = {}) {
  const environment = { ...process.env, AQS_URL: URL_BASE, ...env };
  // A project run names each queue's token; AQS_TOKEN (infra/test-sdk's queue) stays out of it.
  if (token === undefined) delete environment.AQS_TOKEN;
  else environment.AQS_TOKEN = token;
  const child = spawn(process.execPath, [CLI, ...args], {
    env: environment,
    stdio: ["ignore", "pipe", "pipe"],
    ...(cwd === undefined ? {} : { cwd }),
  });
  const worker = { child, stdout: [], stderr: [], waiters: [] };
  const collect = (stream, lines) => {
    let rest = "";
    stream.setEncoding("utf8");
    stream.on("data", (chunk) => {
      rest += chunk;
      const parts = rest.split("\n");
      rest = parts.pop();
      for (const line of parts) {
        lines.push(line);
        for (const waiter of [...worker.waiters]) waiter();
      }
    });
  };
  collect(child.stdout, worker.stdout);
  collect(child.stderr, worker.stderr);
  worker.exited = once(child, "exit").then(([code, signal]) => ({ code, signal }));
  /** The first line (stdout or stderr) matching `pattern`; rejects if the worker exits first. */
  worker.line = (pattern) =>
    new Promise((resolve, reject) => {
      const check = () => {
        const found = [...worker.stderr, ...worker.stdout].find((line) => pattern.test(line));
        if (found !== undefined) {
          worker.waiters = worker.waiters.filter((w) => w !== check);
          resolve(found);
        }
      };
      worker.waiters.push(check);
      check();
      worker.exited.then(({ code }) =>
        reject(new Error(`worker exited (${code}) before ${pattern}:\n${worker.stderr.join("\n")}`)),
      );
    });
  /** The port printed in "<what> on http://127.0.0.1:PORT/". */
  worker.port = async (what) => Number((await worker.line(new RegExp(`${what} on http://[^:]+:(\\d+)/`))).match(/:(\d+)\/$/)[1]);
  worker.stop = async (signal = "SIGINT") => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return worker.exited;
  };
  return worker;
}

/** Polls `read` until `done(value)` holds; gives up (returning the last value) after `seconds`. */
export async function until(read, done, seconds = 60) {
  const deadline = Date.now() + seconds * 1000;
  let value = await read();
  while (!done(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    value = await read();
  }
  return value;
}

export async function metrics(port) {
  return (await fetch(`http://127.0.0.1:${port}/`)).json();
}

/**
 * A copy of the fixture project `name` in a temporary folder, with each queue name of `renames`
 * (`{"cf-emails": slug}`) replaced by the fresh queue's slug in every file, and this package
 * installed as its `aqs` (for tsc). Removed by `t.after`.
 */
export function copyProject(t, name, renames = {}) {
  const dir = mkdtempSync(join(tmpdir(), `aqs-cf-${name}-`));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  cpSync(join(FIXTURES, name), dir, { recursive: true });
  const names = Object.keys(renames).sort((a, b) => b.length - a.length);
  const rewrite = (folder) => {
    for (const entry of readdirSync(folder)) {
      const path = join(folder, entry);
      if (statSync(path).isDirectory()) rewrite(path);
      else if (names.length > 0) {
        let text = readFileSync(path, "utf8");
        for (const from of names) text = text.replace(new RegExp(`(?<![\\w-])${from}(?![\\w-])`, "g"), renames[from]);
        writeFileSync(path, text);
      }
    }
  };
  rewrite(dir);
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(SDK, join(dir, "node_modules", "aqs"), "dir");
  return dir;
}

/** The environment variable of a queue's token (as aqs-worker reads it). */
export function tokenVariable(slug) {
  return `AQS_TOKEN_${slug.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`;
}
