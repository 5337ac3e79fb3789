-- A domain is verified for one member at a time, and only while its TXT proof stays in DNS; the
-- ACME account is one per directory URL, shared by every replica.

-- When a verified domain lost its proof (the TXT record no longer holds its value): it is pending
-- again, `reason` says why; cleared when it is verified again.
ALTER TABLE domains ADD COLUMN lost_at timestamptz;

-- Domains verified by several members before verification was exclusive: the earliest keeps it,
-- the others go back to pending (the reconciler re-checks them, and the holder's proof, every
-- minute), so the unique index below can hold.
UPDATE domains d SET status = 'pending', lost_at = now(),
       reason = 'another member verified ' || d.name || ' first; a domain is verified for one member at a time'
 WHERE d.status = 'verified'
   AND EXISTS (SELECT 1 FROM domains e
                WHERE e.name = d.name AND e.status = 'verified' AND e.id <> d.id
                  AND (COALESCE(e.verified_at, e.created_at), e.id) < (COALESCE(d.verified_at, d.created_at), d.id));

-- The one member a domain is verified for: a second member's verify answers 409 while it holds.
CREATE UNIQUE INDEX domains_verified_name_key ON domains (name) WHERE status = 'verified';

-- The ACME account of each directory, registered once and used by every replica.
CREATE TABLE acme_accounts (
    directory_url         text PRIMARY KEY,
    -- instant-acme's account credentials (JSON, with the account's private key), AES-256-GCM under
    -- AQS_CERT_ENCRYPTION_KEY like certificate keys: base64 of nonce ‖ ciphertext.
    credentials_encrypted text NOT NULL,
    created_at            timestamptz NOT NULL DEFAULT now()
);
