/**
 * Bundles a Worker's entry (TypeScript or JavaScript, with the project's own modules and its npm
 * packages) into one ES module with esbuild, the way wrangler does before it uploads, so `.ts`
 * entries, types, `satisfies` and extensionless imports work under Node. The bundle goes to a
 * private temporary folder, removed when the process exits, with an inline source map so stack
 * traces name the project's files. Code that does not compile is a `BundleError` listing each
 * error by file, line and column.
 */

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { build, type Message as EsbuildMessage } from "esbuild";

export class BundleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BundleError";
  }
}

/** Whether `path` is TypeScript (and so must be bundled before Node can load it). */
export function isTypeScript(path: string): boolean {
  return /\.(ts|mts|cts|tsx)$/.test(path);
}

/** Bundles `entry`; relative paths in errors start at `root`. Returns the bundle's path. */
export async function bundle(entry: string, root: string): Promise<string> {
  const out = mkdtempSync(join(tmpdir(), "aqs-worker-"));
  process.once("exit", () => rmSync(out, { recursive: true, force: true }));
  const outfile = join(out, "worker.mjs");
  try {
    await build({
      entryPoints: [entry],
      absWorkingDir: root,
      bundle: true,
      format: "esm",
      platform: "node",
      target: "node18",
      outfile,
      sourcemap: "inline",
      logLevel: "silent",
      // CommonJS packages in the bundle may require() Node's built-in modules.
      banner: {
        js: `import { createRequire as __aqsCreateRequire } from "node:module"; globalThis.require ??= __aqsCreateRequire(${JSON.stringify(entry)});`,
      },
    });
  } catch (error) {
    const errors = (error as { errors?: EsbuildMessage[] }).errors;
    if (!Array.isArray(errors) || errors.length === 0) throw error;
    const lines = errors.map((message) => describe(message, root));
    throw new BundleError(`${relative(process.cwd(), entry) || entry} does not compile:\n${lines.join("\n")}`);
  }
  process.setSourceMapsEnabled?.(true);
  return outfile;
}

function describe(message: EsbuildMessage, root: string): string {
  const at = message.location;
  if (at === null) return `  error: ${message.text}`;
  const file = relative(process.cwd(), join(root, at.file)) || at.file;
  return `  ${file}:${at.line}:${at.column + 1}: error: ${message.text}\n    ${at.line} | ${at.lineText}`;
}
