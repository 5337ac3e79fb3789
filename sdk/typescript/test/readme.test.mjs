// The README's TypeScript example ("Use it from code") compiles against this package as a user's
// project would: `import ... from "aqs"`, under `tsc --strict`. Needs no running instance.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const SDK = fileURLToPath(new URL("..", import.meta.url));
const README = join(SDK, "..", "..", "README.md");
const TSC = join(SDK, "node_modules", "typescript", "bin", "tsc");

/** The indented code block of the README's "Use it from code" section that imports "aqs". */
function snippet() {
  const section = readFileSync(README, "utf8").split("\n## Use it from code")[1].split("\n## ")[0];
  const blocks = [];
  let current = [];
  for (const line of section.split("\n")) {
    if (line.startsWith("    ")) current.push(line.slice(4));
    else if (line.trim() === "" && current.length > 0) current.push("");
    else if (current.length > 0) {
      blocks.push(current.join("\n").trim());
      current = [];
    }
  }
  if (current.length > 0) blocks.push(current.join("\n").trim());
  const found = blocks.filter((block) => block.includes('from "aqs"'));
  assert.equal(found.length, 1, `one TypeScript example in "Use it from code": ${found.length}`);
  return found[0];
}

/** Runs tsc --strict on `source` as an ES module of a project that depends on this package. */
function compile(source) {
  const project = mkdtempSync(join(tmpdir(), "aqs-readme-ts-"));
  try {
    mkdirSync(join(project, "node_modules"));
    symlinkSync(SDK, join(project, "node_modules", "aqs"), "dir");
    symlinkSync(join(SDK, "node_modules", "@types"), join(project, "node_modules", "@types"), "dir");
    writeFileSync(join(project, "example.mts"), `${source}\n`);
    const args = [TSC, "--strict", "--noEmit", "--module", "nodenext", "--moduleResolution", "nodenext",
      "--target", "es2022", "--types", "node", "example.mts"];
    const run = spawnSync(process.execPath, args, { cwd: project, encoding: "utf8" });
    return { status: run.status, output: `${run.stdout}${run.stderr}` };
  } finally {
    rmSync(project, { recursive: true, force: true });
  }
}

test("the README's TypeScript example compiles under tsc --strict", () => {
  const source = snippet();
  assert.match(source, /new Queue\(/);
  const { status, output } = compile(source);
  assert.equal(status, 0, `tsc --strict:\n${output}\n--- the example:\n${source}`);
});

test("the check sees the package's types: a wrong use of them does not compile", () => {
  const { status, output } = compile(`${snippet()}\nconst wrong: number = jobs.name;\nawait jobs.send("x", { delaySeconds: "soon" });`);
  assert.notEqual(status, 0);
  assert.match(output, /example\.mts\(\d+,\d+\): error TS2322/, output);
  assert.ok(!/Cannot find module 'aqs'/.test(output), output);
});
