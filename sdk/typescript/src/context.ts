/**
 * The `ctx` a Worker's handlers receive (Cloudflare's `ExecutionContext`): `waitUntil(promise)`
 * keeps work going past the handler's return; the runner awaits it before it settles a batch (and
 * before it stops, for `fetch`), and reports a rejection without failing the batch, as Cloudflare
 * does. `passThroughOnException()` is accepted: there is no origin behind `aqs-worker` to pass a
 * request to, so a throwing `fetch` still answers 500.
 */

export interface ExecutionContext {
  waitUntil(promise: Promise<unknown>): void;
  passThroughOnException(): void;
  /** Cloudflare's per-entrypoint props; always empty here. */
  readonly props: Record<string, unknown>;
}

export class Context implements ExecutionContext {
  readonly props: Record<string, unknown> = {};
  /** Whether the handler called `passThroughOnException()`. */
  passThrough = false;
  #pending: Promise<unknown>[] = [];

  waitUntil(promise: Promise<unknown>): void {
    this.#pending.push(Promise.resolve(promise));
  }

  passThroughOnException(): void {
    this.passThrough = true;
  }

  /** Resolves once every `waitUntil` promise settled, including ones added meanwhile. */
  async drain(report: (error: unknown) => void): Promise<void> {
    while (this.#pending.length > 0) {
      const pending = this.#pending;
      this.#pending = [];
      for (const outcome of await Promise.allSettled(pending)) {
        if (outcome.status === "rejected") report(new Error(`a ctx.waitUntil promise rejected: ${describe(outcome.reason)}`));
      }
    }
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
