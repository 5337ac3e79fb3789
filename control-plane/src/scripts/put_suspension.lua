-- Sets or clears the `suspended` field of a queue's meta hash (its team's suspension, the
-- operator's reason), unless the queue was deleted (its tombstone exists). The field is written
-- even when the hash does not exist yet: a queue created just before its team was suspended may
-- have its meta written after this, and that write (HSET of the settings) keeps the field.
-- KEYS[1]: the meta hash (`NS:{q:ID}:meta`), KEYS[2]: the queue's tombstone (`NS:deleted:{q:ID}`)
-- ARGV[1]: the reason, or '' when the team is not suspended
-- returns: 1 written, -1 the queue is deleted
if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
if ARGV[1] == '' then
  redis.call('HDEL', KEYS[1], 'suspended')
else
  redis.call('HSET', KEYS[1], 'suspended', ARGV[1])
end
return 1
