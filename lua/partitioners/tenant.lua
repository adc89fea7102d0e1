-- By tenant: the tenant is the part of the key before its first ':'
-- ("acme:order-17" belongs to acme); all records of a tenant go to one
-- partition, chosen by a hash of the tenant's name (FNV-1a), so a
-- tenant's records stay in order. Without a key the tenant is read from
-- the value the same way (samsactl passes values; librdkafka's
-- partitioner callback does not, and there the value is nil). Records
-- without a tenant go where the default partitioner puts them.
-- samsa.fnv1a is the same hash in C; the Lua one is the fallback.
local function fnv1a_lua(s)
  local h = 0x811c9dc5
  for i = 1, #s do
    h = ((h ~ s:byte(i)) * 0x01000193) & 0xffffffff
  end
  return h
end

local fnv1a = (samsa and samsa.fnv1a) or fnv1a_lua

function partition(topic, key, value, partition_count)
  local tenant = (key and key:match("^([^:]+):")) or (value and value:match("^([^:]+):"))
  if not tenant then
    return nil
  end
  return fnv1a(tenant) % partition_count
end
