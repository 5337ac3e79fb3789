/**
 * Bodies on the wire and in handlers. Sending: a string is `text/plain`, bytes are
 * `application/octet-stream` (as `body_base64`), any other value is JSON. Cloudflare Queues'
 * content type names work too: `"json"` sends any value as JSON (a string as a JSON string),
 * `"text"` a string as `text/plain`, `"bytes"` bytes as `application/octet-stream`; `"v8"` (a
 * structured clone only Cloudflare's runtime reads) is refused. Any other `contentType` is a MIME
 * type that labels the body encoded as above. Receiving:
 * `application/json`, `*+json` or no content type → the parsed value (a body that does not parse
 * stays a string), `text/*` → a string, anything else → a `Uint8Array`.
 */

import { AqsError } from "./errors.js";
import type { PublishRequest } from "./wire.js";

/** Cloudflare Queues' content type names (`"v8"` is refused with a clear error). */
export type CloudflareContentType = "json" | "text" | "bytes" | "v8";

/** Options of one message (the Worker binding's `send` options). */
export interface SendOptions {
  /** A MIME type, or one of Cloudflare's names: `"json"`, `"text"`, `"bytes"`. */
  contentType?: CloudflareContentType | (string & {});
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
  const type = options.contentType;
  const named = type !== undefined && Object.hasOwn(NAMED, type) ? NAMED[type] : undefined;
  if (named !== undefined) return withOptions(named(body), options);
  const request: PublishRequest = {};
  if (typeof body === "string") {
    request.body = body;
    request.content_type = "text/plain";
  } else if (isBytes(body)) {
    const bytes = body instanceof ArrayBuffer ? new Uint8Array(body) : body;
    request.body_base64 = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
    request.content_type = "application/octet-stream";
  } else {
    Object.assign(request, asJson(body));
  }
  if (options.contentType !== undefined) request.content_type = options.contentType;
  return withOptions(request, options);
}

function withOptions(request: PublishRequest, options: SendOptions): PublishRequest {
  if (options.delaySeconds !== undefined) request.delay_seconds = options.delaySeconds;
  if (options.idempotencyKey !== undefined) request.idempotency_key = options.idempotencyKey;
  if (options.attributes !== undefined) request.attributes = options.attributes;
  if (options.groupId !== undefined) request.group_id = options.groupId;
  return request;
}

function asJson(body: unknown): PublishRequest {
  const text = JSON.stringify(body);
  if (text === undefined) throw new AqsError("invalid_request", `a ${typeof body} cannot be sent as a message body`);
  return { body: text, content_type: "application/json" };
}

/** Cloudflare's content type names, each with the encoding it asks for. */
const NAMED: Record<string, (body: unknown) => PublishRequest> = {
  json: asJson,
  text: (body) => {
    if (typeof body !== "string") throw new AqsError("invalid_request", `contentType "text" takes a string body, not a ${typeof body}`);
    return { body, content_type: "text/plain" };
  },
  bytes: (body) => {
    if (!isBytes(body) && !ArrayBuffer.isView(body)) {
      throw new AqsError("invalid_request", `contentType "bytes" takes an ArrayBuffer or a typed array, not a ${typeof body}`);
    }
    const view = body instanceof ArrayBuffer ? new Uint8Array(body) : (body as ArrayBufferView);
    const base64 = Buffer.from(view.buffer, view.byteOffset, view.byteLength).toString("base64");
    return { body_base64: base64, content_type: "application/octet-stream" };
  },
  v8: () => {
    throw new AqsError(
      "invalid_request",
      'contentType "v8" (a V8 structured clone) only Cloudflare\'s runtime reads; AQS does not take it: ' +
        'send the body as "json" (the default for objects), "text" or "bytes"',
    );
  },
};

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
