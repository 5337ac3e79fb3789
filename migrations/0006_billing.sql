-- Billing: payload add-ons billed monthly per queue through Stripe (DESIGN.md, "Billing: the
-- contract"). PostgreSQL records which queue has which add-on; Stripe holds one subscription per
-- member with one item per add-on price. Every Stripe write goes through billing_outbox.

-- One row per member who has ever touched billing: their Stripe customer, what the webhooks told
-- us, and their budget.
CREATE TABLE billing_accounts (
    member_id                 uuid PRIMARY KEY REFERENCES members (id),
    customer_id               text UNIQUE CHECK (customer_id IS NULL OR char_length(customer_id) BETWEEN 1 AND 255),
    -- The card on file, as Stripe last described it (payment methods are re-read on every event).
    payment_method_id         text,
    payment_method_brand      text,
    payment_method_last4      text,
    subscription_id           text,
    subscription_status       text,
    -- `created` of the newest subscription / invoice event applied: an older one never rolls back.
    subscription_event_at     timestamptz,
    payment_event_at          timestamptz,
    payment_failed_at         timestamptz,
    cancelled_for_nonpayment_at timestamptz,
    monthly_limit_cents       bigint CHECK (monthly_limit_cents BETWEEN 0 AND 100000000),
    alert_percent             integer CHECK (alert_percent BETWEEN 1 AND 100),
    created_at                timestamptz NOT NULL DEFAULT now(),
    updated_at                timestamptz NOT NULL DEFAULT now()
);

-- The add-on a member bought for a queue. A queue's payload_size follows it once Stripe has the
-- item (upgrades) or at once (downgrades); a deleted queue's row no longer counts.
CREATE TABLE queue_add_ons (
    queue_id     uuid PRIMARY KEY REFERENCES queues (id),
    member_id    uuid NOT NULL REFERENCES members (id),
    payload_size bigint NOT NULL CHECK (payload_size IN (10485760, 52428800)),
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX queue_add_ons_member_idx ON queue_add_ons (member_id);

-- Work for Stripe: "bring this member's subscription in line with queue_add_ons". Rows are taken
-- with FOR UPDATE SKIP LOCKED, retried with exponential backoff, and never deleted (audit).
CREATE TABLE billing_outbox (
    id              bigserial PRIMARY KEY,
    member_id       uuid NOT NULL REFERENCES members (id),
    reason          text NOT NULL CHECK (char_length(reason) BETWEEN 1 AND 200),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    done_at         timestamptz
);

CREATE INDEX billing_outbox_due_idx ON billing_outbox (next_attempt_at) WHERE done_at IS NULL;
CREATE INDEX billing_outbox_member_idx ON billing_outbox (member_id) WHERE done_at IS NULL;

-- Stripe event ids already applied: a redelivered event is answered 200 and skipped.
CREATE TABLE billing_events (
    id          text PRIMARY KEY CHECK (char_length(id) BETWEEN 1 AND 255),
    type        text NOT NULL,
    created     timestamptz NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);
