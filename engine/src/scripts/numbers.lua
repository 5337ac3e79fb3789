-- numbers.lua: prepended by scripts.rs to the scripts that read numbers per message (those with
-- common.lua, and publish.lua). `num(text)` is tonumber(text), converting each distinct text once
-- per call: tonumber is strtod, and a batch repeats the same few texts (delivery numbers, sizes,
-- a stream id's milliseconds, 0 for no key and no delay).
local numbers = {}
local function num(text)
  local n = numbers[text]
  if not n then
    n = tonumber(text)
    numbers[text] = n
  end
  return n
end
