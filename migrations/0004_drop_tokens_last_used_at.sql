-- A token's last use is recorded by the data plane, which never talks to PostgreSQL, in the
-- queue's `tokens_used` hash in Redis (at most once a minute per token); the listing reads it from
-- there. This column was never written: it goes, rather than a second copy kept in step.
ALTER TABLE tokens DROP COLUMN last_used_at;
