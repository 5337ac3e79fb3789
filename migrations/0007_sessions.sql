-- Sessions that can end before they expire: the session JWT carries the row's id (`sid`), and a
-- JWT is honoured only while its row is unrevoked and unexpired. Log out revokes one row; log out
-- everywhere (and a password change) revokes all of a member's rows.

CREATE TABLE sessions (
    id         uuid PRIMARY KEY,
    member_id  uuid NOT NULL REFERENCES members (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz
);

-- Log out everywhere revokes a member's live sessions.
CREATE INDEX sessions_live_member_idx ON sessions (member_id) WHERE revoked_at IS NULL;
