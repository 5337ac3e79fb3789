/**
 * Bodies on the wire and in handlers. Sending: a string is `text/plain`, bytes are
 * `application/octet-stream` (as `body_base64`), any other value is JSON. Receiving:
 * `application/json`, `*+json` or no content type → the parsed value (a body that does not parse
 * stays a string), `text/*` → a string, anything else → a `Uint8Array`.
 */

import { AqsError } from "./errors.js";
import type { PublishRequest } from "./wire.js";

/** Options of one message (the Worker binding's `send` options). */
export interface SendOptions {
  contentType?: string;
  delaySeconds?: number;
  idempotencyKey?: string;
  attributes?: Record<string, unknown>;
  groupId?: string;
}

export function isBytes(value: unknown): value is Uint8Array | ArrayBuffer {
  return value instanceof Uint8Array || value instanceof ArrayBuffer;
}

/** One publish request for `body` with `options`. */
export function encode(body: unknown, options: SendOptions = {}): PublishRequest {
  const request: PublishRequest = {};
  if (typeof body === "string") {
    request.body = body;
    request.content_type = "text/plain";
  } else if (isBytes(body)) {
    const bytes = body instanceof ArrayBuffer ? new Uint8Array(body) : body;
    request.body_base64 = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
    request.content_type = "application/octet-stream";
  } else {
    const text = JSON.stringify(body);
    if (text === undefined) throw new AqsError("invalid_request", `a ${typeof body} cannot be sent as a message body`);
    request.body = text;
    request.content_type = "application/json";
  }
  if (options.contentType !== undefined) request.content_type = options.contentType;
  if (options.delaySeconds !== undefined) request.delay_seconds = options.delaySeconds;
  if (options.idempotencyKey !== undefined) request.idempotency_key = options.idempotencyKey;
  if (options.attributes !== undefined) request.attributes = options.attributes;
  if (options.groupId !== undefined) request.group_id = options.groupId;
  return request;
}

/** A received body, decoded by its content type. */
export function decode(bodyBase64: string, contentType: string | null | undefined): unknown {
  const bytes = new Uint8Array(Buffer.from(bodyBase64, "base64"));
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (type === "" || type === "application/json" || type.endsWith("+json")) {
    const text = new TextDecoder().decode(bytes);
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  if (type.startsWith("text/")) return new TextDecoder().decode(bytes);
  return bytes;
}
