-- Deletes a key only while it still holds the expected value.
-- KEYS[1]: the key (a slug record, `NS:slug:<slug>`)
-- ARGV[1]: the value it must hold (the id of the queue being deleted)
-- returns: 1 when deleted, 0 when the key is missing or now names another queue
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
