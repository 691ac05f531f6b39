-- Analyses for the gates of the canary and blue_green strategies, reached as
-- tide.lib.analysis. A strategy's `analysis` params name one of the functions below:
--
--   function(r, ctx) --> "pass" | "fail" | "inconclusive", reason
--
-- r is the rollout snapshot; ctx says where the gate is:
--   ctx.phase              "canary", "pre_promotion" or "post_promotion"
--   ctx.step               the canary step (1-based), for phase "canary"
--   ctx.min_ready_seconds  the strategy's min_ready_seconds
--
-- An analysis is asked again on every pass while its gate is open; it sees nothing but the
-- snapshot (no I/O). Add your own here: this file is hot-reloaded like any script, and a
-- version that breaks a strategy's tests does not load.

local function none()
  return "pass", "no analysis"
end

-- Every new instance is healthy and has been ready for min_ready_seconds.
local function healthy(r, ctx)
  local young = 0
  for _, inst in ipairs(r.new) do
    local deleting = inst.operation ~= nil and inst.operation.type == "DELETE"
    if not deleting then
      if inst.state == "FAILED" or not inst.healthy then
        return "fail", inst.name .. " is " .. (inst.state == "FAILED" and "FAILED" or "unhealthy")
      end
      if (inst.ready_seconds or 0) < (ctx.min_ready_seconds or 0) then
        young = young + 1
      end
    end
  end
  if young > 0 then
    return "inconclusive", string.format("%d new instance%s ready for less than %d s", young,
      young == 1 and "" or "s", ctx.min_ready_seconds)
  end
  return "pass", "every new instance is healthy"
end

-- For drills and tests: a gate that always fails, or never makes up its mind.
local function always_fail()
  return "fail", "always_fail (a drill)"
end

local function always_inconclusive()
  return "inconclusive", "always_inconclusive (a drill)"
end

return {
  none = none,
  healthy = healthy,
  always_fail = always_fail,
  always_inconclusive = always_inconclusive,
}
