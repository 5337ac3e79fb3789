-- AQS foundation: members, queues and queue tokens. PostgreSQL is the source of truth; the control
-- plane projects queues and tokens into Redis for the data plane after every change.

CREATE TABLE members (
    id            uuid PRIMARY KEY,
    -- Stored lowercased by the application; the unique index on lower(email) makes the
    -- case-insensitive uniqueness hold even for rows written some other way.
    email         text NOT NULL CHECK (char_length(email) BETWEEN 3 AND 254),
    -- argon2id PHC string; never the password.
    password_hash text NOT NULL,
    role          text NOT NULL DEFAULT 'member' CHECK (role IN ('member', 'operator')),
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX members_email_key ON members (lower(email));

CREATE TABLE queues (
    id                         uuid PRIMARY KEY,
    member_id                  uuid NOT NULL REFERENCES members (id),
    name                       text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 64),
    slug                       text NOT NULL CHECK (char_length(slug) BETWEEN 1 AND 48
                                                    AND slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$'),
    visibility_timeout_seconds integer NOT NULL CHECK (visibility_timeout_seconds BETWEEN 1 AND 43200),
    max_attempts               integer NOT NULL CHECK (max_attempts BETWEEN 1 AND 100),
    payload_size               bigint NOT NULL CHECK (payload_size IN (1048576, 10485760, 52428800)),
    storage_limit              bigint NOT NULL CHECK (storage_limit BETWEEN 1048576 AND 107374182400),
    paused                     boolean NOT NULL DEFAULT false,
    created_at                 timestamptz NOT NULL DEFAULT now(),
    updated_at                 timestamptz NOT NULL DEFAULT now(),
    -- Soft delete: a deleted queue keeps its row (for billing and audit) but frees its slug.
    deleted_at                 timestamptz
);

-- A slug names one live queue across all members; a deleted queue's slug may be reused.
CREATE UNIQUE INDEX queues_live_slug_key ON queues (slug) WHERE deleted_at IS NULL;
CREATE INDEX queues_live_member_idx ON queues (member_id, created_at) WHERE deleted_at IS NULL;

CREATE TABLE tokens (
    id           uuid PRIMARY KEY,
    queue_id     uuid NOT NULL REFERENCES queues (id),
    name         text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 64),
    scopes       text[] NOT NULL CHECK (cardinality(scopes) >= 1
                                        AND scopes <@ ARRAY['send', 'consume', 'manage']::text[]),
    -- Hex SHA-256 of the secret: the secret itself is shown once and never stored.
    secret_hash  text NOT NULL CHECK (secret_hash ~ '^[0-9a-f]{64}$'),
    last_four    text NOT NULL CHECK (char_length(last_four) = 4),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);

CREATE UNIQUE INDEX tokens_secret_hash_key ON tokens (secret_hash);
CREATE INDEX tokens_queue_idx ON tokens (queue_id, created_at);
