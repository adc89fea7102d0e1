-- Tenant prefixes: User:<tenant> may touch only the topics, groups and
-- transactional ids named "<tenant>.<anything>" (User:alice: alice.orders,
-- alice.billing-consumers, ...), and may write idempotently. Anything
-- else of a tenant is refused; the principals in ADMINS are left to the
-- next authorizer of the chain (nil), e.g. `authorizer.class.name=lua,acl`.
local ADMINS = { ["User:admin"] = true, ["User:ANONYMOUS"] = false }
local SCOPED = { TOPIC = true, GROUP = true, TRANSACTIONAL_ID = true }

function authorize(r)
  if ADMINS[r.principal] then
    return nil
  end
  local tenant = r.principal:match("^User:(.+)$")
  if not tenant or r.principal == "User:ANONYMOUS" then
    return false
  end
  if SCOPED[r.resource_type] then
    if r.resource_name == nil then
      -- "any topic/group of this tenant?" (authorizeByResourceType)
      return true
    end
    return r.resource_name:sub(1, #tenant + 1) == tenant .. "."
  end
  if r.resource_type == "CLUSTER" then
    return r.operation == "IDEMPOTENT_WRITE"
  end
  return false
end
