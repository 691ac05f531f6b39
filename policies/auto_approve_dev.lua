-- Development and test namespaces deploy without waiting for anyone: whatever is asked
-- there is approved on the spot. Everywhere else this policy has no opinion and leaves the
-- decision to the others.

local namespaces = tide.lib.namespaces

return {
  name = "auto-approve-dev",
  description = "Approve every operation in dev and test namespaces.",
  level = "hard",

  decide = function(op, ctx)
    if namespaces.is_dev(op.plan.namespace) then
      return approve("namespace " .. op.plan.namespace .. " is for development and testing")
    end
    return abstain()
  end,

  tests = {
    {
      name = "a dev- namespace is approved",
      op = { type = "CREATE", plan = { name = "web", namespace = "dev-web" } },
      expect = "approve",
      reason = "dev-web",
    },
    {
      name = "a -test namespace is approved, deletes included",
      op = { type = "DELETE", plan = { name = "pay", namespace = "payments-test" } },
      expect = "approve",
    },
    {
      name = "production is left to the other policies",
      op = { type = "CREATE", plan = { name = "web", namespace = "prod-web" } },
      expect = "abstain",
    },
    {
      name = "a namespace that merely starts with the letters d-e-v is not dev",
      op = { type = "UPDATE", plan = { name = "ci", namespace = "devops-tools" } },
      expect = "abstain",
    },
  },
}
