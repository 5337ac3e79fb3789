-- Deletes a queue's push record unless a later push change already reached Redis (see
-- put_push.lua), and records this change's revision so that an earlier set landing late stays out.
-- KEYS[1]: the push hash, KEYS[2]: the meta hash
-- ARGV[1]: the queue's revision of this change, or '' to delete whatever is there (the queue is
--          deleted or unknown: its tombstone keeps late sets out)
-- returns: 1 deleted, 0 a later change kept
if ARGV[1] ~= '' then
  local last = tonumber(redis.call('HGET', KEYS[2], 'push_rev') or '0')
  if last > tonumber(ARGV[1]) then return 0 end
  redis.call('HSET', KEYS[2], 'push_rev', ARGV[1])
end
redis.call('DEL', KEYS[1])
return 1
