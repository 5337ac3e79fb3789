-- Deleting an account erases the member's personal data. The row stays: billing's rows point at
-- its id, and billing_accounts keeps the Stripe customer id the last sync cancels with. But the
-- row keeps no email and no password hash; `erasure_marker` says it was erased and gives operators
-- something to name it by. The marker is random, not derived from the email: a hash of an address
-- (keyed or not) can be reversed by hashing guessed addresses, a random value says nothing.

ALTER TABLE members
    ALTER COLUMN email DROP NOT NULL,
    ALTER COLUMN password_hash DROP NOT NULL,
    ADD COLUMN erasure_marker text;

-- Accounts deleted before this migration kept their email: erase it now.
UPDATE members
SET email = NULL, password_hash = NULL,
    erasure_marker = 'erased_' || replace(gen_random_uuid()::text, '-', '')
WHERE deleted_at IS NOT NULL;

-- A live member has an email and a password hash; a deleted one has neither, only the marker.
ALTER TABLE members ADD CONSTRAINT members_erased_check CHECK (
    (deleted_at IS NULL AND email IS NOT NULL AND password_hash IS NOT NULL AND erasure_marker IS NULL)
    OR (deleted_at IS NOT NULL AND email IS NULL AND password_hash IS NULL AND erasure_marker IS NOT NULL)
);

CREATE UNIQUE INDEX members_erasure_marker_key ON members (erasure_marker);
