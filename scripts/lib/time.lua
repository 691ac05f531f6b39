-- Date-time helpers for policies: UTC, and local time in IANA time zones read from the
-- OS's tz database (the host's zone_* functions, the same for every script).
--
--   tide.lib.time.parse_utc("2026-12-21T00:00:00Z")                    --> 1797811200 (seconds since the epoch)
--   tide.lib.time.weekday(ctx.now())                                    --> "Mon" .. "Sun"
--   tide.lib.time.local_time(ctx.now(), "Europe/Berlin")                --> { year, month, day, hour, min, sec,
--       wday, yday, epoch, offset_seconds, zone_abbrev, isdst, zone, iso }; weekday() reads it too
--   tide.lib.time.parse_local("2026-12-24T18:00:00", "Europe/Berlin")   --> 1798131600
--   tide.lib.time.check_zone("Europe/Berlin")                           --> "Europe/Berlin"
--
-- An unknown zone, or a local time the clocks skip when they spring forward, raises an error
-- at the caller's line naming it. A local time the clocks pass twice (the hour after they
-- fall back) is the first of the two.

local weekday_names = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" }  -- by os.date's wday

local function parse_utc(text)
  local year, month, day, hour, min, sec =
    string.match(tostring(text), "^(%d%d%d%d)%-(%d%d)%-(%d%d)T(%d%d):(%d%d):(%d%d)Z$")
  if not year then
    error("not a UTC timestamp (YYYY-MM-DDTHH:MM:SSZ): " .. tostring(text), 2)
  end
  -- The sandbox's os.time reads a date table as UTC.
  return os.time({
    year = tonumber(year), month = tonumber(month), day = tonumber(day),
    hour = tonumber(hour), min = tonumber(min), sec = tonumber(sec),
  })
end

local function weekday(now)
  return weekday_names[now.wday]
end

-- Errors below are raised at the line that called the helper of `name` (level 3), which
-- therefore calls them outside a return statement: a tail call would drop its own level.
local function need_string(name, what, value)
  if type(value) ~= "string" then
    error(string.format("%s: %s must be a string, got %s", name, what, type(value)), 3)
  end
end

local function checked(name, value, message)
  if value == nil then
    error(name .. ": " .. message, 3)
  end
  return value
end

local function check_zone(zone)
  need_string("check_zone", "the zone (\"Europe/Berlin\")", zone)
  local known = checked("check_zone", zone_check(zone))
  return known
end

-- `now`: a time table (ctx.now(), or another local_time) or seconds since the epoch.
local function local_time(now, zone)
  local epoch = type(now) == "table" and now.epoch or now
  if type(epoch) ~= "number" then
    error("local_time: expected ctx.now() or seconds since the epoch, got " .. type(now), 2)
  end
  need_string("local_time", "the zone (\"Europe/Berlin\")", zone)
  local here = checked("local_time", zone_local_time(epoch, zone))
  return here
end

local function parse_local(text, zone)
  need_string("parse_local", "the local time (\"2026-12-24T18:00:00\")", text)
  need_string("parse_local", "the zone (\"Europe/Berlin\")", zone)
  local epoch = checked("parse_local", zone_parse_local(text, zone))
  return epoch
end

return {
  parse_utc = parse_utc,
  weekday = weekday,
  local_time = local_time,
  parse_local = parse_local,
  check_zone = check_zone,
}
