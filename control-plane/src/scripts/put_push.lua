-- Writes a queue's push record unless the queue was deleted (its tombstone exists) or a later push
-- change (set, rotation or stop) already reached Redis: `push_rev` in the queue's meta hash holds
-- the queue revision of the last push change written, and it outlives a stop's DEL of the record.
-- KEYS[1]: the push hash, KEYS[2]: the meta hash, KEYS[3]: the queue's tombstone
-- ARGV[1]: the queue's revision of this change, then field/value pairs (every field of the record)
-- returns: 1 written, 0 a later change kept, -1 the queue is deleted
if redis.call('EXISTS', KEYS[3]) == 1 then return -1 end
local last = tonumber(redis.call('HGET', KEYS[2], 'push_rev') or '0')
if last > tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('HSET', KEYS[2], 'push_rev', ARGV[1])
return 1
