-- Kafka's default partitioning of keyed records, as the Java client
-- computes it (Utils.murmur2 with seed 0x9747b28c, then toPositive and
-- modulo the partition count), so that Java producers and librdkafka
-- producers using this script put the same key in the same partition.
-- Records without a key are left to the default partitioner (nil).
--
-- samsa's sandbox provides the hash in C (samsa.murmur2, ~25x faster
-- than the Lua below, which keeps a producer's throughput near
-- librdkafka's own partitioner: tools/bench/lua-produce.sh). The pure-Lua
-- version below is the same function, used where samsa.murmur2 is
-- missing (an older samsa) and as a reference for other hashes.
local M = 0x5bd1e995
local MASK = 0xffffffff

-- Low 32 bits of a product (Lua integers wrap modulo 2^64).
local function mul32(a, b)
  return (a * b) & MASK
end

-- murmur2 of a string, as an unsigned 32-bit integer.
local function murmur2_lua(data)
  local len = #data
  local h = (0x9747b28c ~ len) & MASK
  local n4 = len // 4
  for i = 0, n4 - 1 do
    local b1, b2, b3, b4 = data:byte(i * 4 + 1, i * 4 + 4)
    local k = b1 | (b2 << 8) | (b3 << 16) | (b4 << 24)
    k = mul32(k, M)
    k = k ~ (k >> 24)
    k = mul32(k, M)
    h = mul32(h, M) ~ k
  end
  local base, rest = n4 * 4, len % 4
  if rest == 3 then
    h = h ~ (data:byte(base + 3) << 16)
  end
  if rest >= 2 then
    h = h ~ (data:byte(base + 2) << 8)
  end
  if rest >= 1 then
    h = mul32(h ~ data:byte(base + 1), M)
  end
  h = h ~ (h >> 13)
  h = mul32(h, M)
  return h ~ (h >> 15)
end

local murmur2 = (samsa and samsa.murmur2) or murmur2_lua

function partition(topic, key, value, partition_count)
  if key == nil then
    return nil
  end
  return (murmur2(key) & 0x7fffffff) % partition_count
end
