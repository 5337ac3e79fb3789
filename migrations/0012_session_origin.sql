-- Where each session was started from, so the member's list of sessions can say which is which:
-- the browser's User-Agent (shown as a browser and system) and the client address of the log-in
-- (or sign-up). Older sessions have neither.

ALTER TABLE sessions
    ADD COLUMN user_agent text,
    ADD COLUMN address    text;
