-- Deleting an instance removes its volumes with it, and in production that data is
-- someone's. So every DELETE in a prod namespace waits until two people approve it: two
-- approvers, neither of them the one who asked for it. Other operations in prod, and
-- anything outside prod, are for the other policies to judge.

local namespaces = tide.lib.namespaces

return {
  name = "prod-delete-manual",
  description = "Two approvers, not the requester, approve every DELETE in a prod namespace.",
  level = "hard",

  applies = function(op)
    return namespaces.is_prod(op.plan.namespace)
  end,

  decide = function(op, ctx)
    if op.type == "DELETE" then
      return manual{
        approvals = 2,
        role = "approver",
        distinct_from = { "requester" },
        reason = "deleting " .. op.meta_instance .. " in " .. op.plan.namespace ..
                 " removes its volumes; two approvers confirm",
      }
    end
    return abstain()
  end,

  tests = {
    {
      name = "a delete in prod waits for two approvers",
      op = { type = "DELETE", meta_instance = "web-k3x9", plan = { name = "web", namespace = "prod-web" } },
      expect = "manual",
      reason = "web-k3x9 in prod-web removes its volumes; two approvers confirm",
    },
    {
      name = "other operations in prod pass through",
      op = { type = "UPDATE", plan = { name = "web", namespace = "prod-web" } },
      expect = "abstain",
    },
    {
      name = "a delete outside prod is not this policy's business",
      op = { type = "DELETE", plan = { name = "web", namespace = "staging" } },
      expect = "not_applicable",
    },
  },
}
