-- Deleting an account: the member row stays as a tombstone (billing's outbox and audit rows point
-- at it, and the outbox must still cancel the subscription after the account is gone), but it can
-- no longer log in and its email is free for a new sign-up.

ALTER TABLE members ADD COLUMN deleted_at timestamptz;

DROP INDEX members_email_key;
CREATE UNIQUE INDEX members_email_key ON members (lower(email)) WHERE deleted_at IS NULL;

-- Sessions past their expiry are deleted a batch at a time as new ones start.
CREATE INDEX sessions_expires_idx ON sessions (expires_at);
-- A member's sessions, newest first, for the account page.
CREATE INDEX sessions_member_created_idx ON sessions (member_id, created_at);
