-- Change freezes: during these windows nothing changes outside dev and test namespaces.
-- To add a freeze, add a line. `from` is inclusive, `to` exclusive, both read on the
-- clocks of the freeze's `zone` (an IANA name from the OS's tz database, "Europe/Berlin"),
-- or of `zone` below when it names none, so a freeze across a daylight-saving change still
-- starts and ends at the local times written. A time ending in Z is UTC.
local zone = "UTC"
local freezes = {
  { from = "2026-11-26T00:00:00", to = "2026-11-30T00:00:00", reason = "Black Friday weekend" },
  { from = "2026-12-21T00:00:00", to = "2027-01-04T00:00:00", reason = "year-end freeze" },
}

local time = tide.lib.time
local namespaces = tide.lib.namespaces

local function instant(text, freeze_zone)
  if type(text) == "string" and string.sub(text, -1) == "Z" then
    return time.parse_utc(text)
  end
  return time.parse_local(text, freeze_zone)
end

-- Parsed when the policy loads, so a mistyped date or zone fails the reload (and the old
-- version keeps deciding) instead of failing every decision.
local windows = {}
for i, freeze in ipairs(freezes) do
  local freeze_zone = freeze.zone or zone
  windows[i] = {
    from = instant(freeze.from, freeze_zone),
    to = instant(freeze.to, freeze_zone),
    until_text = freeze.to .. (string.sub(freeze.to, -1) == "Z" and "" or " " .. freeze_zone),
    freeze = freeze,
  }
end

return {
  name = "change-freeze",
  description = "Deny changes outside dev and test during the freeze windows above.",
  level = "hard",

  applies = function(op)
    return not namespaces.is_dev(op.plan.namespace)
  end,

  decide = function(op, ctx)
    local now = os.time()  -- seconds since the epoch, as ctx.now().epoch
    for _, window in ipairs(windows) do
      if now >= window.from and now < window.to then
        return deny(window.freeze.reason .. " until " .. window.until_text)
      end
    end
    return abstain()
  end,

  -- The cases read their times on the file's clocks, so they hold whatever `zone` says.
  tests = {
    {
      name = "outside every window there is nothing to say",
      op = { type = "UPDATE", plan = { namespace = "prod-web" } },
      ctx = { now = "2026-12-01T10:00:00 " .. zone },
      expect = "abstain",
    },
    {
      name = "the last second before a freeze is not frozen",
      op = { type = "UPDATE", plan = { namespace = "prod-web" } },
      ctx = { now = "2026-12-20T23:59:59 " .. zone },
      expect = "abstain",
    },
    {
      name = "the first second of a freeze is frozen",
      op = { type = "UPDATE", plan = { namespace = "prod-web" } },
      ctx = { now = "2026-12-21T00:00:00 " .. zone },
      expect = "deny",
      reason = "year-end freeze",
    },
    {
      name = "the freeze is over at its end",
      op = { type = "UPDATE", plan = { namespace = "prod-web" } },
      ctx = { now = "2027-01-04T00:00:00 " .. zone },
      expect = "abstain",
    },
    {
      name = "Black Friday weekend is frozen too",
      op = { type = "CREATE", plan = { namespace = "shop" } },
      ctx = { now = "2026-11-28T15:30:00 " .. zone },
      expect = "deny",
      reason = "Black Friday",
    },
    {
      name = "dev keeps moving during a freeze",
      op = { type = "UPDATE", plan = { namespace = "dev-web" } },
      ctx = { now = "2026-12-24T12:00:00Z" },
      expect = "not_applicable",
    },
  },
}
