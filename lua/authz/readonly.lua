-- Read-only principals: they may read and describe (consume, commit
-- their group's offsets, list topics and configs) and never change
-- anything. Other principals are left to the next authorizer (nil).
local READ_ONLY = { ["User:auditor"] = true, ["User:reporting"] = true }
local READ_OPS = { READ = true, DESCRIBE = true, DESCRIBE_CONFIGS = true }

function authorize(r)
  if not READ_ONLY[r.principal] then
    return nil
  end
  return READ_OPS[r.operation] == true
end
