-- Maintenance window: every day between WINDOW.start and WINDOW.stop
-- (UTC, "HH:MM"; a window may span midnight) writes of any kind are
-- refused; outside it, and for reads, the next authorizer decides (nil).
-- The answer depends on the time of day, so no decision is cached.
WINDOW = { start = "02:00", stop = "03:00" }

local WRITES = {
  WRITE = true, CREATE = true, DELETE = true, ALTER = true,
  ALTER_CONFIGS = true, IDEMPOTENT_WRITE = true,
}

local function minutes(hhmm)
  local h, m = hhmm:match("^(%d%d):(%d%d)$")
  return tonumber(h) * 60 + tonumber(m)
end

function in_window(now)
  local t = samsa.utc(now)
  local m = t.hour * 60 + t.min
  local a, b = minutes(WINDOW.start), minutes(WINDOW.stop)
  if a <= b then
    return m >= a and m < b
  end
  return m >= a or m < b
end

function authorize(r)
  r.cacheable = false
  if WRITES[r.operation] and in_window() then
    return false
  end
  return nil
end
