-- Every change of a queue's settings or pause state bumps its revision. The Redis projection
-- carries it, and a write never replaces a meta of a later revision: two changes answered by
-- different replicas at once reach Redis in either order and Redis ends with the later one.
ALTER TABLE queues ADD COLUMN revision bigint NOT NULL DEFAULT 1 CHECK (revision >= 1);
