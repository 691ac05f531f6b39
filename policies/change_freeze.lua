-- Change freezes: during these windows nothing changes outside dev and test namespaces.
-- To add a freeze, add a line. Times are UTC; `from` is inclusive, `to` exclusive.
local freezes = {
  { from = "2026-11-26T00:00:00Z", to = "2026-11-30T00:00:00Z", reason = "Black Friday weekend" },
  { from = "2026-12-21T00:00:00Z", to = "2027-01-04T00:00:00Z", reason = "year-end freeze" },
}

local time = tide.lib.time
local namespaces = tide.lib.namespaces

-- Parsed when the policy loads, so a mistyped date fails the reload (and the old version
-- keeps deciding) instead of failing every decision.
local windows = {}
for i, freeze in ipairs(freezes) do
  windows[i] = { from = time.parse_utc(freeze.from), to = time.parse_utc(freeze.to), freeze = freeze }
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
        return deny(window.freeze.reason .. " until " .. window.freeze.to)
      end
    end
    return abstain()
  end,

  tests = {
    {
      name = "outside every window there is nothing to say",
      op = { type = "UPDATE", plan = { namespace = "prod-web" } },
      ctx = { now = "2026-12-01T10:00:00Z" },
      expect = "abstain",
    },
    {
      name = "the first second of a freeze is frozen",
      op = { type = "UPDATE", plan = { namespace = "prod-web" } },
      ctx = { now = "2026-12-21T00:00:00Z" },
      expect = "deny",
      reason = "year-end freeze",
    },
    {
      name = "the freeze is over at its end",
      op = { type = "UPDATE", plan = { namespace = "prod-web" } },
      ctx = { now = "2027-01-04T00:00:00Z" },
      expect = "abstain",
    },
    {
      name = "Black Friday weekend is frozen too",
      op = { type = "CREATE", plan = { namespace = "shop" } },
      ctx = { now = "2026-11-28T15:30:00Z" },
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
