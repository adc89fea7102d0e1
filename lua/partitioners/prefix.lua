-- By key prefix: a record whose key starts with a prefix of ROUTES goes
-- to that prefix's partition (modulo the partition count); other keys,
-- and records without a key, go where the default partitioner puts them.
ROUTES = { ["eu-"] = 0, ["us-"] = 1, ["ap-"] = 2 }

function partition(topic, key, value, partition_count)
  if key then
    for prefix, p in pairs(ROUTES) do
      if key:sub(1, #prefix) == prefix then
        return p % partition_count
      end
    end
  end
  return nil
end
