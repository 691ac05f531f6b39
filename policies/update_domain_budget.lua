-- One operation at a time per update domain. Update domains are the failure units of a
-- plan's placement; touching two instances of the same plan in one domain at once could
-- take the plan down there. So while another operation of the same plan is in flight in
-- this operation's update domain, this one waits for a human. Development and test
-- namespaces have no budget: they roll out as fast as their other policies allow.

local namespaces = tide.lib.namespaces

return {
  name = "update-domain-budget",
  description = "Wait while another operation of the plan runs in the same update domain.",
  level = "hard",

  applies = function(op)
    return op.node.update_domain ~= "" and not namespaces.is_dev(op.plan.namespace)
  end,

  decide = function(op, ctx)
    local busy = ctx.in_flight({ plan = op.plan.name, update_domain = op.node.update_domain })
    if busy > 0 then
      return manual(string.format("%d other operation(s) of plan %s in flight in update domain %s",
                                  busy, op.plan.name, op.node.update_domain))
    end
    return abstain()
  end,

  tests = {
    {
      name = "a dev namespace has no budget",
      op = { type = "CREATE", plan = { name = "web", namespace = "web-dev" }, node = { name = "n2", update_domain = "ud-1" } },
      ctx = { operations = { { plan = "web", update_domain = "ud-1", state = "RUNNING" } } },
      expect = "not_applicable",
    },
    {
      name = "the first operation in a domain goes ahead",
      op = { type = "UPDATE", plan = { name = "web" }, node = { name = "n1", update_domain = "ud-1" } },
      ctx = { operations = { { plan = "web", update_domain = "ud-2", state = "RUNNING" } } },
      expect = "abstain",
    },
    {
      name = "a second operation in the same domain waits",
      op = { type = "UPDATE", plan = { name = "web" }, node = { name = "n2", update_domain = "ud-1" } },
      ctx = { operations = { { plan = "web", update_domain = "ud-1", state = "RUNNING" } } },
      expect = "manual",
      reason = "update domain ud-1",
    },
    {
      name = "another plan's work in the domain does not count",
      op = { type = "UPDATE", plan = { name = "web" }, node = { name = "n2", update_domain = "ud-1" } },
      ctx = { operations = { { plan = "api", update_domain = "ud-1", state = "APPROVED" } } },
      expect = "abstain",
    },
    {
      name = "finished operations do not count",
      op = { type = "UPDATE", plan = { name = "web" }, node = { name = "n2", update_domain = "ud-1" } },
      ctx = { operations = { { plan = "web", update_domain = "ud-1", state = "SUCCEEDED" } } },
      expect = "abstain",
    },
    {
      name = "an operation without an update domain is not judged",
      op = { type = "CREATE", plan = { name = "web" } },
      expect = "not_applicable",
    },
  },
}
