-- Push delivery: the callback URL prefixes an operator authorised for each member, and each
-- queue's push target. The control plane projects push targets into Redis (NS:{q:ID}:push) for the
-- data plane's dispatchers.

CREATE TABLE callback_urls (
    id         uuid PRIMARY KEY,
    member_id  uuid NOT NULL REFERENCES members (id),
    -- Normalised http(s) URL (as the url crate serialises it): no credentials, query or fragment.
    prefix     text NOT NULL CHECK (char_length(prefix) BETWEEN 8 AND 2048
                                    AND (prefix LIKE 'http://%' OR prefix LIKE 'https://%')),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX callback_urls_member_prefix_key ON callback_urls (member_id, prefix);

CREATE TABLE push_targets (
    queue_id           uuid PRIMARY KEY REFERENCES queues (id),
    handler_url        text NOT NULL CHECK (char_length(handler_url) BETWEEN 8 AND 2048),
    mode               text NOT NULL CHECK (mode IN ('message', 'batch')),
    messages_per_run   integer NOT NULL CHECK (messages_per_run BETWEEN 1 AND 100),
    wait_seconds       integer NOT NULL CHECK (wait_seconds BETWEEN 0 AND 60),
    timeout_seconds    integer NOT NULL CHECK (timeout_seconds BETWEEN 30 AND 900),
    concurrency        integer NOT NULL CHECK (concurrency BETWEEN 1 AND 100),
    -- Standard Webhooks signing secrets (whsec_…). Kept here because the data plane signs with
    -- them and the Redis projection must be rebuildable from PostgreSQL; never listed by the API.
    secret             text NOT NULL CHECK (secret LIKE 'whsec\_%'),
    previous_secret    text CHECK (previous_secret LIKE 'whsec\_%'),
    previous_until     timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);
