-- Writes a queue's meta hash, the projection of its row, unless the queue was deleted (its
-- tombstone exists) or the hash already holds a later revision of the row. Projection writes from
-- different replicas, or from a re-sync, can reach Redis out of order: a late write must neither
-- bring a deleted queue's meta back nor undo a later change.
-- KEYS[1]: the meta hash (`NS:{q:ID}:meta`), KEYS[2]: the queue's tombstone (`NS:deleted:{q:ID}`)
-- ARGV[1]: the row's revision, then field/value pairs (every projected field, `rev` among them)
-- returns: 1 written, 0 a later revision kept, -1 the queue is deleted
if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
-- A hash written before revisions existed has none: any revision replaces it.
local stored = tonumber(redis.call('HGET', KEYS[1], 'rev') or '0')
if stored > tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
return 1
