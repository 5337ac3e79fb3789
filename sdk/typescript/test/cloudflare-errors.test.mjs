// How a wrangler configuration's settings are read, and what `aqs-worker --config` refuses and
// how it says so: a missing token (each one named), code
// that does not compile (file and line), a configuration that does not parse (file and line),
// Cloudflare's "v8" content type. And the TypeScript fixture type-checks against this package's
// Cloudflare type names (esbuild strips types without checking them).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { AqsError, encode, readConfig } from "../dist/index.js";
import { SDK, copyProject, startWorker } from "../testkit/kit.mjs";

const TSC = join(SDK, "node_modules", "typescript", "bin", "tsc");

test("a project's queues each need their token: every missing one is named", async (t) => {
  const dir = copyProject(t, "two-queues-toml");
  const worker = startWorker([], { cwd: dir, env: { AQS_TOKEN_CF_EMAILS: "acq_unused" } });
  const { code } = await worker.exited;
  assert.equal(code, 1);
  const said = worker.stderr.join("\n");
  assert.match(said, /set AQS_TOKEN_CF_THUMBNAILS to a token of the queue cf-thumbnails|AQS_TOKEN_CF_THUMBNAILS/, said);
  assert.doesNotMatch(said, /AQS_TOKEN_CF_EMAILS/, "the one given is not asked for");

  const none = startWorker(["--config", join(dir, "wrangler.toml")], { env: { AQS_TOKEN: "acq_only-for-one-queue" } });
  assert.equal((await none.exited).code, 1);
  assert.match(none.stderr.join("\n"), /set AQS_TOKEN_CF_EMAILS, AQS_TOKEN_CF_THUMBNAILS: the project uses the queues cf-emails, cf-thumbnails/);
});

test("one queue: AQS_TOKEN_<QUEUE> or AQS_TOKEN, and the error names both", async (t) => {
  const dir = copyProject(t, "producer-consumer-ts", { "cf-image-jobs": "image.jobs-2" });
  const worker = startWorker(["--config", join(dir, "wrangler.jsonc")], {});
  assert.equal((await worker.exited).code, 1);
  assert.match(worker.stderr.join("\n"), /set AQS_TOKEN_IMAGE_JOBS_2 \(or AQS_TOKEN\) to a token of the queue image\.jobs-2/);
});

test("code that does not compile is an error naming the file and the line", async (t) => {
  const dir = copyProject(t, "broken-ts");
  const worker = startWorker([], { cwd: dir, env: { AQS_TOKEN_CF_BROKEN: "acq_unused" } });
  assert.equal((await worker.exited).code, 1);
  const said = worker.stderr.join("\n");
  assert.match(said, /src\/index\.ts does not compile:/, said);
  assert.match(said, /src\/handle\.ts:3:\d+: error: Expected "\)" but found ";"/, said);
  assert.match(said, /3 \|\s+seen\.push\(String\(body\) ;/, said);
});

test("a configuration that does not parse is an error naming the file and the line", async (t) => {
  const dir = copyProject(t, "producer-consumer-ts");
  writeFileSync(join(dir, "wrangler.jsonc"), '{\n  "main": "src/index.ts",\n  "vars": { "A": 1 "B": 2 },\n}\n');
  const worker = startWorker(["--config", join(dir, "wrangler.jsonc")], { env: { AQS_TOKEN: "acq_unused" } });
  assert.equal((await worker.exited).code, 1);
  assert.match(worker.stderr.join("\n"), /wrangler\.jsonc:3:20: CommaExpected/);

  writeFileSync(join(dir, "wrangler.toml"), 'main = "src/index.ts"\n[[queues.consumers]]\nqueue = "q"\nmax_batch_size = 500\n');
  const big = startWorker(["--config", join(dir, "wrangler.toml")], { env: { AQS_TOKEN: "acq_unused" } });
  assert.equal((await big.exited).code, 1);
  assert.match(big.stderr.join("\n"), /wrangler\.toml: queues\.consumers\[0\]\.max_batch_size must be a number from 1 to 100/);

  const nothing = startWorker([], { cwd: join(dir, "src") });
  assert.equal((await nothing.exited).code, 2);
  assert.match(nothing.stderr.join("\n"), /run where a wrangler\.json, wrangler\.jsonc or wrangler\.toml is/);
});

test("Cloudflare's content type names: json, text and bytes are taken, v8 is a clear error", () => {
  assert.deepEqual(encode("hi", { contentType: "json" }), { body: '"hi"', content_type: "application/json" });
  assert.deepEqual(encode("hi", { contentType: "text" }), { body: "hi", content_type: "text/plain" });
  assert.deepEqual(encode(new Uint8Array([1, 2]), { contentType: "bytes", delaySeconds: 3 }), {
    body_base64: "AQI=",
    content_type: "application/octet-stream",
    delay_seconds: 3,
  });
  assert.deepEqual(encode({ a: 1 }, { contentType: "application/vnd.x+json" }), {
    body: '{"a":1}',
    content_type: "application/vnd.x+json",
  });
  assert.throws(() => encode({ a: 1 }, { contentType: "v8" }), (error) => {
    assert.ok(error instanceof AqsError);
    assert.equal(error.code, "invalid_request");
    assert.match(error.message, /contentType "v8".*AQS does not take it.*"json"/);
    return true;
  });
  assert.throws(() => encode({ a: 1 }, { contentType: "text" }), /contentType "text" takes a string body/);
});

test("the TypeScript project type-checks with tsc against the package's Cloudflare types", (t) => {
  const dir = copyProject(t, "producer-consumer-ts");
  const run = spawnSync(process.execPath, [TSC, "--noEmit", "-p", "tsconfig.json"], { cwd: dir, encoding: "utf8" });
  assert.equal(run.status, 0, `${run.stdout}${run.stderr}`);
  for (const project of ["retry-backoff"]) {
    const other = copyProject(t, project);
    writeFileSync(join(other, "tsconfig.json"), JSON.stringify({
      compilerOptions: { target: "es2021", lib: ["es2021"], module: "es2022", moduleResolution: "Bundler", types: ["aqs/cloudflare"], strict: true, noEmit: true },
      include: ["src/**/*.ts"],
    }));
    const checked = spawnSync(process.execPath, [TSC, "-p", "tsconfig.json"], { cwd: other, encoding: "utf8" });
    assert.equal(checked.status, 0, `${project}: ${checked.stdout}${checked.stderr}`);
  }
  // And the types bite: a body of the wrong shape does not compile.
  writeFileSync(join(dir, "src", "wrong.ts"), 'export async function f(env: Env) { await env.MY_QUEUE.send({ kind: "crop", key: 1 }); }\n');
  const wrong = spawnSync(process.execPath, [TSC, "--noEmit", "-p", "tsconfig.json"], { cwd: dir, encoding: "utf8" });
  assert.notEqual(wrong.status, 0);
  assert.match(`${wrong.stdout}`, /src\/wrong\.ts\(1,\d+\): error TS2322/);
});

test("every wrangler queue setting is read and mapped; other keys are left alone", (t) => {
  const dir = copyProject(t, "two-queues-toml");
  const path = join(dir, "wrangler.toml");
  writeFileSync(path, `name = "all"
main = "src/worker.js"
compatibility_date = "2025-04-01"
kv_namespaces = [{ binding = "KV", id = "x" }]

[vars]
GREETING = "hi"
LIMITS = { max = 3 }

[[queues.producers]]
binding = "JOBS"
queue = "jobs"
delivery_delay = 30

[[queues.consumers]]
queue = "jobs"
max_batch_size = 100
max_batch_timeout = 45
max_retries = 3
retry_delay = 120
max_concurrency = 4
dead_letter_queue = "jobs-dlq"

[[queues.consumers]]
queue = "pulled"
type = "http_pull"
`);
  const config = readConfig(path);
  assert.equal(config.main, join(dir, "src", "worker.js"));
  assert.equal(config.name, "all");
  assert.deepEqual(config.vars, { GREETING: "hi", LIMITS: { max: 3 } });
  assert.deepEqual(config.producers, [{ binding: "JOBS", queue: "jobs", deliveryDelaySeconds: 30 }]);
  assert.deepEqual(config.consumers, [
    {
      queue: "jobs",
      messagesPerRun: 100,
      waitSeconds: 20,
      batchTimeoutCut: 45,
      retryDelaySeconds: 120,
      concurrency: 4,
      maxRetries: 3,
      deadLetterQueue: "jobs-dlq",
    },
  ]);
  assert.deepEqual(config.skipped, ["pulled"]);
});
