-- Production changes happen while people are at their desks. Outside business hours
-- every operation in a prod namespace waits for a human to approve it; inside them this
-- policy has nothing to add. Hours are UTC: start inclusive, end exclusive.
local hours = {
  days = { Mon = true, Tue = true, Wed = true, Thu = true, Fri = true },
  start_hour = 9,
  end_hour = 17,
}

local time = tide.lib.time
local namespaces = tide.lib.namespaces

local function within_business_hours(now)
  return hours.days[time.weekday(now)] == true
    and now.hour >= hours.start_hour
    and now.hour < hours.end_hour
end

return {
  name = "business-hours",
  description = "Outside Mon-Fri 09:00-17:00 UTC, prod operations need a human.",
  level = "hard",

  applies = function(op)
    return namespaces.is_prod(op.plan.namespace)
  end,

  decide = function(op, ctx)
    local now = ctx.now()
    if within_business_hours(now) then
      return abstain()
    end
    return manual(string.format("outside business hours (Mon-Fri %02d:00-%02d:00 UTC): it is %s %02d:%02d",
                                hours.start_hour, hours.end_hour, time.weekday(now), now.hour, now.min))
  end,

  tests = {
    {
      name = "Tuesday morning is business as usual",
      op = { type = "UPDATE", plan = { namespace = "prod-web" } },
      ctx = { now = "2026-03-03T10:00:00Z" },
      expect = "abstain",
    },
    {
      name = "one minute before opening waits for a human",
      op = { type = "UPDATE", plan = { namespace = "prod-web" } },
      ctx = { now = "2026-03-02T08:59:00Z" },
      expect = "manual",
      reason = "Mon 08:59",
    },
    {
      name = "closing time is already after hours",
      op = { type = "UPDATE", plan = { namespace = "prod-web" } },
      ctx = { now = "2026-03-03T17:00:00Z" },
      expect = "manual",
    },
    {
      name = "Saturday waits for a human",
      op = { type = "CREATE", plan = { namespace = "prod-web" } },
      ctx = { now = "2026-03-07T11:00:00Z" },
      expect = "manual",
      reason = "Sat",
    },
    {
      name = "dev does not keep office hours",
      op = { type = "CREATE", plan = { namespace = "dev-web" } },
      ctx = { now = "2026-03-07T23:00:00Z" },
      expect = "not_applicable",
    },
  },
}
