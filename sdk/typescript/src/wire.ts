/** The queue API's request and answer shapes (`/queue/v1/{slug}/…`), as the server sends them. */

export interface PublishRequest {
  body?: string;
  body_base64?: string;
  content_type?: string;
  attributes?: Record<string, unknown>;
  delay_seconds?: number;
  group_id?: string;
  idempotency_key?: string;
}

export interface Published {
  id: string;
  published_at: string;
  available_at: string;
  /** True when an earlier publish with the same idempotency key and payload stored it. */
  duplicate: boolean;
}

export interface ConsumedMessage {
  id: string;
  receipt: string;
  body_base64: string;
  content_type: string;
  attributes: Record<string, unknown>;
  attempts: number;
  group_id: string | null;
  published_at: string;
}

export interface Failure {
  receipt: string;
  error: string;
  message: string;
}

export interface AckAnswer {
  acked: number;
  failed: Failure[];
}

export interface NackAnswer {
  nacked: number;
  failed: Failure[];
}

/** What `extend` answers: a fresh receipt per extended lease, and the receipts it could not apply. */
export interface ExtendAnswer {
  extended: Array<{
    /** The receipt as sent. */
    receipt: string;
    /** Valid past the new deadline: use it from now on (the old one acks until it expires). */
    new_receipt: string;
    /** The new lease deadline (RFC 3339). */
    visible_at: string;
  }>;
  failed: Failure[];
}

export interface Stats {
  depth: { ready: number; in_flight: number; delayed: number; total: number };
  stored_bytes: number;
  oldest_message_at: string | null;
  oldest_message_age_seconds: number | null;
  published_today: number;
  delivered_today: number;
  acked_today: number;
  dead_letters: number;
  storage_limit: number;
  paused: boolean;
}

export interface PeekedMessage {
  id: string;
  body_base64: string;
  content_type: string;
  attributes: Record<string, unknown>;
  attempts: number;
  group_id: string | null;
  published_at: string;
  state: string;
}

export interface DeadLetter {
  id: string;
  reason: string;
  attempts: number;
  dead_at: string;
  body_preview: string;
  body_preview_encoding: "utf8" | "base64";
  body_bytes: number;
  content_type: string;
  published_at: string;
  group_id: string | null;
}
