-- Per-listener rules: clients of the internal listeners (the brokers'
-- own, and tools inside the cluster's network) are trusted with
-- everything; on any other listener a client must have authenticated
-- with SASL, and may not change cluster-wide settings. What is left is
-- decided by the next authorizer (nil).
local TRUSTED = { INTERNAL = true, REPLICATION = true }
local SASL = { SASL_PLAINTEXT = true, SASL_SSL = true }
local CLUSTER_CHANGES = { ALTER = true, ALTER_CONFIGS = true, CLUSTER_ACTION = true, CREATE = true }

function authorize(r)
  if TRUSTED[r.listener] then
    return true
  end
  if not SASL[r.security_protocol] then
    return false
  end
  if r.resource_type == "CLUSTER" and CLUSTER_CHANGES[r.operation] then
    return false
  end
  return nil
end
