/**
 * Errors the library throws: every refusal of the API arrives as an `AqsError` whose `code` is the
 * API's `error` field (`invalid_request`, `rate_limited`, `queue_paused`, ...), so callers switch on
 * the code rather than on the message text.
 */

/** The API's error codes (`docs/errors.md`); unknown codes from a newer server pass through. */
export const ERROR_CODES = [
  "invalid_request",
  "receipt_invalid",
  "unauthorized",
  "payment_required",
  "forbidden",
  "queue_limit_reached",
  "team_suspended",
  "not_found",
  "method_not_allowed",
  "conflict",
  "idempotency_conflict",
  "lease_lost",
  "queue_paused",
  "push_enabled",
  "oversized_messages_stored",
  "payload_too_large",
  "unsupported_media_type",
  "misdirected_request",
  "rate_limited",
  "service_unavailable",
  "replication_timeout",
  "storage_limit_reached",
  "internal",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number] | (string & {});

export class AqsError extends Error {
  /** The API's `error` code. */
  readonly code: ErrorCode;
  /** The HTTP status, or 0 when the request was refused here before it was sent. */
  readonly status: number;
  /** For a batch publish: the entry the error is about. */
  readonly index: number | undefined;
  /** Seconds the server asked to wait (429 and 503). */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    status = 0,
    details: { index?: number; retryAfterSeconds?: number } = {},
  ) {
    super(message);
    this.name = "AqsError";
    this.code = code;
    this.status = status;
    this.index = details.index;
    this.retryAfterSeconds = details.retryAfterSeconds;
  }
}

/** A request refused before it was sent (a batch of more than 100 entries, a missing body, ...). */
export function invalid(message: string): AqsError {
  return new AqsError("invalid_request", message);
}
