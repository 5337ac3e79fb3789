-- Custom hosts: root domains a member proved with a TXT record, and hostnames under them pinned to
-- one of the member's queues, with the certificate the reconciler obtained by ACME. The control
-- plane projects serving hosts into Redis (NS:hosts) for the data plane.

CREATE TABLE domains (
    id                 uuid PRIMARY KEY,
    member_id          uuid NOT NULL REFERENCES members (id),
    -- Lowercase, no trailing dot, two or more labels.
    name               text NOT NULL CHECK (char_length(name) BETWEEN 3 AND 253),
    -- The value of the TXT record at _aqs-challenge.<name>: `aqs-verify=<random>`, one per member.
    verification_value text NOT NULL,
    status             text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'verified')),
    -- Why the last check did not verify it, for the member.
    reason             text,
    checked_at         timestamptz,
    verified_at        timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now()
);

-- A root domain may be proved by several members, each once.
CREATE UNIQUE INDEX domains_member_name_key ON domains (member_id, name);

CREATE TABLE hosts (
    id              uuid PRIMARY KEY,
    member_id       uuid NOT NULL REFERENCES members (id),
    domain_id       uuid NOT NULL REFERENCES domains (id),
    queue_id        uuid NOT NULL REFERENCES queues (id),
    hostname        text NOT NULL CHECK (char_length(hostname) BETWEEN 3 AND 253),
    status          text NOT NULL DEFAULT 'setting_up' CHECK (status IN ('setting_up', 'active', 'error')),
    stage           text CHECK (stage IN ('waiting_for_dns', 'issuing_certificate')),
    reason          text,
    -- The certificate chain (PEM) and its private key (PKCS#8 PEM, AES-256-GCM under
    -- AQS_CERT_ENCRYPTION_KEY, base64 of nonce ‖ ciphertext).
    cert_pem        text,
    key_encrypted   text,
    cert_not_before timestamptz,
    cert_not_after  timestamptz,
    -- The reconciler's schedule: when the host is looked at next; `failures` sets the backoff.
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    failures        integer NOT NULL DEFAULT 0,
    -- A reconciler's claim on the row while it acts (checks DNS, orders): set with the claim's
    -- expiry in one UPDATE … FOR UPDATE SKIP LOCKED, so no two replicas ever act on one host
    -- at once, and a replica that died mid-way only delays the host until `claimed_until`.
    claim           uuid,
    claimed_until   timestamptz,
    -- Certificate orders placed for this host, for operators.
    orders          integer NOT NULL DEFAULT 0,
    checked_at      timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- A hostname belongs to one member across the whole service.
CREATE UNIQUE INDEX hosts_hostname_key ON hosts (hostname);
CREATE INDEX hosts_member_idx ON hosts (member_id, created_at);
CREATE INDEX hosts_next_attempt_idx ON hosts (next_attempt_at);
