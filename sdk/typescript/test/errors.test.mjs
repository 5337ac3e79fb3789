// The error codes the package knows are the API's: every code of the table in docs/errors.md (and
// `internal`), so a caller's `switch (error.code)` can name each one the service answers.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { ERROR_CODES } from "../dist/index.js";
import { SDK } from "../testkit/kit.mjs";

test("every documented error code is one the package names", () => {
  const table = readFileSync(join(SDK, "..", "..", "docs", "errors.md"), "utf8");
  const documented = table
    .split("\n")
    .filter((line) => /^\| [45]\d\d \|/.test(line))
    .map((line) => line.split("`")[1]);
  assert.ok(documented.length > 20, `the table was not read: ${documented}`);
  assert.deepEqual([...ERROR_CODES].sort(), [...documented, "internal"].sort());
});
