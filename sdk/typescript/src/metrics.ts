/** The runner's counters, as its `--metrics` endpoint serves them. */
export interface Metrics {
  /** Queue handler invocations (one per batch). */
  runs: number;
  messages_acked: number;
  messages_retried: number;
  /** HTTP requests served by the module's `fetch`. */
  requests: number;
}

export function newMetrics(): Metrics {
  return { runs: 0, messages_acked: 0, messages_retried: 0, requests: 0 };
}

export function summary(metrics: Metrics): string {
  return `runs=${metrics.runs} acked=${metrics.messages_acked} retried=${metrics.messages_retried} requests=${metrics.requests}`;
}
