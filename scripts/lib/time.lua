-- UTC date-time helpers for policies.
--
--   tide.lib.time.parse_utc("2026-12-21T00:00:00Z")  --> 1797811200 (seconds since the epoch)
--   tide.lib.time.weekday(ctx.now())                  --> "Mon" .. "Sun"

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

return {
  parse_utc = parse_utc,
  weekday = weekday,
}
