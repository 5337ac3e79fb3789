-- Teams: queues, tokens, hosts, domains, push settings and billing belong to a team, not to one
-- member. Members belong to teams with a role; management keys let automation act for a team; the
-- audit log records every state-changing request. See docs/teams.md.
--
-- Every member gets a personal team whose id is the member's own id, so every row that named its
-- member as owner names the right team without being rewritten: the columns are renamed and their
-- foreign keys pointed at teams.

CREATE TABLE teams (
    id                uuid PRIMARY KEY,
    name              text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 64),
    -- The team sign-up made for one member; it cannot be left or given away, only deleted with
    -- the account.
    personal          boolean NOT NULL DEFAULT false,
    -- Limits an operator may raise (DESIGN.md, "Limits"): live queues, and stored bytes across
    -- the team's queues (NULL: the sum of the queues' own limits is the only bound).
    max_queues        integer NOT NULL DEFAULT 10 CHECK (max_queues BETWEEN 1 AND 10000),
    max_storage_bytes bigint CHECK (max_storage_bytes BETWEEN 1048576 AND 1099511627776),
    suspended_at      timestamptz,
    suspended_reason  text CHECK (char_length(suspended_reason) BETWEEN 1 AND 500),
    created_at        timestamptz NOT NULL DEFAULT now(),
    deleted_at        timestamptz,
    CHECK ((suspended_at IS NULL) = (suspended_reason IS NULL))
);

CREATE TABLE team_members (
    team_id   uuid NOT NULL REFERENCES teams (id),
    member_id uuid NOT NULL REFERENCES members (id),
    role      text NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'viewer')),
    joined_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team_id, member_id)
);

CREATE INDEX team_members_member_idx ON team_members (member_id);

-- Every member, deleted ones too (their queues' rows stay for billing and audit), gets a personal
-- team with their own id, named "Personal" (never the email, which erasure must not leave behind);
-- live members own theirs.
INSERT INTO teams (id, name, personal, created_at, deleted_at)
SELECT id, 'Personal', true, created_at, deleted_at FROM members;

INSERT INTO team_members (team_id, member_id, role, joined_at)
SELECT id, id, 'owner', created_at FROM members WHERE deleted_at IS NULL;

-- What a member owned, their personal team owns.
ALTER TABLE queues RENAME COLUMN member_id TO team_id;
ALTER TABLE queues DROP CONSTRAINT queues_member_id_fkey,
    ADD CONSTRAINT queues_team_id_fkey FOREIGN KEY (team_id) REFERENCES teams (id);
ALTER INDEX queues_live_member_idx RENAME TO queues_live_team_idx;

ALTER TABLE callback_urls RENAME COLUMN member_id TO team_id;
ALTER TABLE callback_urls DROP CONSTRAINT callback_urls_member_id_fkey,
    ADD CONSTRAINT callback_urls_team_id_fkey FOREIGN KEY (team_id) REFERENCES teams (id);
ALTER INDEX callback_urls_member_prefix_key RENAME TO callback_urls_team_prefix_key;

ALTER TABLE domains RENAME COLUMN member_id TO team_id;
ALTER TABLE domains DROP CONSTRAINT domains_member_id_fkey,
    ADD CONSTRAINT domains_team_id_fkey FOREIGN KEY (team_id) REFERENCES teams (id);
ALTER INDEX domains_member_name_key RENAME TO domains_team_name_key;

ALTER TABLE hosts RENAME COLUMN member_id TO team_id;
ALTER TABLE hosts DROP CONSTRAINT hosts_member_id_fkey,
    ADD CONSTRAINT hosts_team_id_fkey FOREIGN KEY (team_id) REFERENCES teams (id);
ALTER INDEX hosts_member_idx RENAME TO hosts_team_idx;

ALTER TABLE billing_accounts RENAME COLUMN member_id TO team_id;
ALTER TABLE billing_accounts DROP CONSTRAINT billing_accounts_member_id_fkey,
    ADD CONSTRAINT billing_accounts_team_id_fkey FOREIGN KEY (team_id) REFERENCES teams (id);

ALTER TABLE queue_add_ons RENAME COLUMN member_id TO team_id;
ALTER TABLE queue_add_ons DROP CONSTRAINT queue_add_ons_member_id_fkey,
    ADD CONSTRAINT queue_add_ons_team_id_fkey FOREIGN KEY (team_id) REFERENCES teams (id);
ALTER INDEX queue_add_ons_member_idx RENAME TO queue_add_ons_team_idx;

ALTER TABLE billing_outbox RENAME COLUMN member_id TO team_id;
ALTER TABLE billing_outbox DROP CONSTRAINT billing_outbox_member_id_fkey,
    ADD CONSTRAINT billing_outbox_team_id_fkey FOREIGN KEY (team_id) REFERENCES teams (id);
ALTER INDEX billing_outbox_member_idx RENAME TO billing_outbox_team_idx;

-- An invite link: `/invites/<secret>`, single use, 7 days. Only the secret's hash is kept.
CREATE TABLE invites (
    id          uuid PRIMARY KEY,
    team_id     uuid NOT NULL REFERENCES teams (id),
    email       text NOT NULL CHECK (char_length(email) BETWEEN 3 AND 254),
    role        text NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'viewer')),
    secret_hash text NOT NULL UNIQUE CHECK (secret_hash ~ '^[0-9a-f]{64}$'),
    invited_by  uuid NOT NULL REFERENCES members (id),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    accepted_at timestamptz,
    accepted_by uuid REFERENCES members (id),
    revoked_at  timestamptz
);

CREATE INDEX invites_team_idx ON invites (team_id, created_at);

-- Management keys (`acm_…`): a team's credential for automation on `/api/v1`, never an owner.
CREATE TABLE management_keys (
    id           uuid PRIMARY KEY,
    team_id      uuid NOT NULL REFERENCES teams (id),
    name         text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 64),
    role         text NOT NULL CHECK (role IN ('admin', 'developer', 'viewer')),
    secret_hash  text NOT NULL UNIQUE CHECK (secret_hash ~ '^[0-9a-f]{64}$'),
    last_four    text NOT NULL CHECK (char_length(last_four) = 4),
    created_by   uuid NOT NULL REFERENCES members (id),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);

CREATE INDEX management_keys_team_idx ON management_keys (team_id, created_at);

-- The audit log: one row per state-changing request, written in the change's own transaction.
-- Rows keep the actor's email as it was (an erased member's rows keep theirs until the 400 days
-- pass; DESIGN.md keeps the log that long). `team_id` is NULL for events that belong to no team
-- (a failed log-in for an unknown email).
CREATE TABLE audit_events (
    id          uuid PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    team_id     uuid REFERENCES teams (id),
    actor_kind  text NOT NULL CHECK (actor_kind IN ('member', 'key', 'operator', 'anonymous')),
    actor_id    uuid,
    actor_email text,
    action      text NOT NULL CHECK (action ~ '^[a-z_]+\.[a-z_]+$'),
    target_kind text NOT NULL,
    target_id   text,
    ip          text,
    user_agent  text CHECK (char_length(user_agent) <= 512),
    request_id  text CHECK (char_length(request_id) <= 128)
);

CREATE INDEX audit_events_team_at_idx ON audit_events (team_id, at DESC, id);
CREATE INDEX audit_events_at_idx ON audit_events (at);
