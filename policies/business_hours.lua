-- Production changes happen while people are at their desks. Outside business hours
-- every operation in a prod namespace waits for a human to approve it; inside them this
-- policy has nothing to add. Hours are read on the clocks of `zone`, an IANA name from the
-- OS's tz database ("Europe/Berlin", "America/New_York", "UTC"), so they stay 09:00-17:00
-- local across daylight-saving changes: start inclusive, end exclusive.
local hours = {
  zone = "UTC",
  days = { Mon = true, Tue = true, Wed = true, Thu = true, Fri = true },
  start_hour = 9,
  end_hour = 17,
}

local time = tide.lib.time
local namespaces = tide.lib.namespaces

-- Checked when the policy loads, so a mistyped zone fails the reload (and the old version
-- keeps deciding) instead of failing every decision.
time.check_zone(hours.zone)

local function within_business_hours(here)
  return hours.days[time.weekday(here)] == true
    and here.hour >= hours.start_hour
    and here.hour < hours.end_hour
end

return {
  name = "business-hours",
  description = "Outside Mon-Fri 09:00-17:00 (" .. hours.zone .. "), prod operations need a human.",
  level = "hard",

  applies = function(op)
    return namespaces.is_prod(op.plan.namespace)
  end,

  decide = function(op, ctx)
    local here = time.local_time(ctx.now(), hours.zone)
    if within_business_hours(here) then
      return abstain()
    end
    return manual(string.format("outside business hours (Mon-Fri %02d:00-%02d:00 %s): it is %s %02d:%02d %s",
                                hours.start_hour, hours.end_hour, hours.zone, time.weekday(here), here.hour,
                                here.min, here.zone_abbrev))
  end,

  -- The cases read their times on the policy's own clocks, so they hold whatever `zone` says.
  tests = {
    {
      name = "Tuesday morning is business as usual",
      op = { type = "UPDATE", plan = { namespace = "prod-web" } },
      ctx = { now = "2026-03-03T10:00:00 " .. hours.zone },
      expect = "abstain",
    },
    {
      name = "one minute before opening waits for a human",
      op = { type = "UPDATE", plan = { namespace = "prod-web" } },
      ctx = { now = "2026-03-02T08:59:00 " .. hours.zone },
      expect = "manual",
      reason = "Mon 08:59",
    },
    {
      name = "closing time is already after hours",
      op = { type = "UPDATE", plan = { namespace = "prod-web" } },
      ctx = { now = "2026-03-03T17:00:00 " .. hours.zone },
      expect = "manual",
    },
    {
      name = "Saturday waits for a human",
      op = { type = "CREATE", plan = { namespace = "prod-web" } },
      ctx = { now = "2026-03-07T11:00:00 " .. hours.zone },
      expect = "manual",
      reason = "Sat",
    },
    {
      name = "summer time opens at 09:00 on the local clocks too",
      op = { type = "UPDATE", plan = { namespace = "prod-web" } },
      ctx = { now = "2026-07-06T09:00:00 " .. hours.zone },
      expect = "abstain",
    },
    {
      name = "and not a minute earlier",
      op = { type = "UPDATE", plan = { namespace = "prod-web" } },
      ctx = { now = "2026-07-06T08:59:00 " .. hours.zone },
      expect = "manual",
      reason = "Mon 08:59",
    },
    {
      name = "dev does not keep office hours",
      op = { type = "CREATE", plan = { namespace = "dev-web" } },
      ctx = { now = "2026-03-07T23:00:00Z" },
      expect = "not_applicable",
    },
  },
}
