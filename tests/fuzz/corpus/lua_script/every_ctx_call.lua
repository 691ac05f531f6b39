-- A seed that reaches every part of a policy's surface once: each ctx function, the log,
-- tide.lib, os.date, string patterns, a tests table, and each verdict on some path.
local namespaces = tide.lib.namespaces

return {
  name = "every-ctx-call",
  level = "soft",
  applies = function(op) return op.type ~= "" end,
  decide = function(op, ctx)
    local now = ctx.now()
    ctx.log.info("deciding", { op = op.type, at = os.date("!%H:%M", now) })
    local busy = ctx.in_flight({ plan = op.plan.name, update_domain = op.node.update_domain })
    local done = ctx.count({ plan = op.plan.name, state = "SUCCEEDED" })
    local failed = ctx.recent_failures({ plan = op.plan.name, seconds = 600 })
    local instances = ctx.instances(op.plan.name)
    local node = ctx.node(op.node.name)
    if failed > 2 then return deny("failing: " .. failed) end
    if busy > 0 or #instances > 10 then return manual(string.format("%d busy", busy)) end
    if node and namespaces.is_dev(op.plan.namespace) and op.plan.name:find("^[%w-]+$") then
      return approve("dev, " .. done .. " done")
    end
    return abstain()
  end,
  tests = {
    { name = "dev approves", op = { type = "CREATE", plan = { name = "w", namespace = "w-dev" } },
      ctx = { now = "2026-03-03T10:00:00Z" }, expect = "abstain" },
  },
}
