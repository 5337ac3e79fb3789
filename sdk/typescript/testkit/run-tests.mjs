// `npm test`: runs each test/*.test.mjs under `node --test`, one file after another (the files
// share one running instance and its per-token rate limits). Node 18.13 has no
// --test-concurrency, and its `node --test` runs several files at once on a machine with more
// than two cores, so the order is kept here. Arguments name the files to run instead of all.
// Exits non-zero when any file failed.

import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const dir = join(root, "test");
const files = process.argv.length > 2
  ? process.argv.slice(2)
  : readdirSync(dir).filter((name) => name.endsWith(".test.mjs")).sort().map((name) => join(dir, name));
if (files.length === 0) {
  process.stderr.write(`no test files in ${dir}\n`);
  process.exit(1);
}

// A `node --test` started from inside another one's test process runs nothing when it inherits
// this variable, and passes.
const env = { ...process.env };
delete env.NODE_TEST_CONTEXT;
const failed = [];
const started = Date.now();
for (const file of files) {
  const name = relative(root, file);
  process.stdout.write(`# ${name}\n`);
  const run = spawnSync(process.execPath, ["--test", file], { stdio: "inherit", env, cwd: root });
  if (run.status !== 0) failed.push(`${name} (${run.signal ?? `exit ${run.status}`})`);
}
const seconds = ((Date.now() - started) / 1000).toFixed(1);
process.stdout.write(`# ${files.length} files in ${seconds} s on Node ${process.versions.node}: `);
process.stdout.write(failed.length === 0 ? "all passed\n" : `${failed.length} failed: ${failed.join(", ")}\n`);
process.exit(failed.length === 0 ? 0 : 1);
