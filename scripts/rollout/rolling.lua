-- Rolling update, the default strategy: bring the deployment to `count` instances of the new
-- version, replacing old instances one update domain at a time, with at most `max_surge`
-- instances above the count and at most `max_unavailable` below it out of service.
--
-- Every pass looks at the rollout afresh (r is a snapshot) and asks for the next steps:
--   1. an operation of this rollout that FAILED or was REJECTED fails the rollout;
--   2. missing new instances are created, as far as the surge allows;
--   3. in the first update domain (by name) that still has old instances, and only while
--      no other domain has an operation in flight, old instances are deleted where there
--      are too many and updated in place otherwise, unhealthiest first, as far as the
--      availability budget allows (instances not serving cost nothing);
--   4. extra new instances are deleted by number (the host's scheduler picks which);
--   5. when exactly `count` new instances are ready and nothing else is left, complete;
--   6. when nothing moved (new instances ready, new and old instances) for
--      progress_deadline_seconds of progress (pauses excluded), fail: a rollout that cannot
--      go on says so instead of staying IN_PROGRESS.
--
-- An instance whose operation waits for placement holds up no update domain: replacing old
-- instances is what frees room for it (a surge with max_per_node).
--
-- A restore (r.restore: a newer rollout was rolled back or aborted, and this deployment is
-- re-opened to undo it) goes the same way, the newer version's instances being the old ones
-- now; only the restore's own failed operations fail it, not those of the undone rollout.
--
-- r.state: waiting_for (for people), domain (the update domain being replaced), and the
-- bookkeeping: milestone and moved_at (progress_seconds when it last moved).

local rollout = tide.lib.rollout
local plural = rollout.plural

-- max_surge rounds up and max_unavailable down; with no surge at least one instance may be
-- out of service, or nothing could ever be replaced in place.
local function limits(r)
  local surge = rollout.resolve_count(r.params.max_surge, r.count, "up")
  local unavailable = rollout.resolve_count(r.params.max_unavailable, r.count, "down")
  if surge == 0 and unavailable == 0 then
    unavailable = 1
  end
  return surge, unavailable
end

local function busy_outside(r, domain)
  for _, inst in ipairs(r.instances) do
    if rollout.in_flight(inst) and not rollout.waiting_for_placement(inst)
        and inst.update_domain ~= domain then
      return true
    end
  end
  return false
end

-- In one update domain, the idle old instances are taken unhealthiest first, as far as the
-- availability budget allows (one that serves nothing costs nothing): deleted while there
-- are more instances than desired, updated in place after that.
local function replace(domain, excess, budget)
  local doomed, updated = {}, {}
  for _, inst in ipairs(rollout.unhealthiest_first(rollout.idle(domain.instances))) do
    local free = not rollout.ready(inst)
    if free or budget > 0 then
      if not free then
        budget = budget - 1
      end
      if excess > 0 then
        excess = excess - 1
        doomed[#doomed + 1] = inst
      else
        updated[#updated + 1] = inst
      end
    end
  end
  return delete(doomed), update(updated)
end

-- Why the rollout has been stuck too long, or nil: the time since it last moved counts.
local function stalled(r)
  local s = r.state
  local milestone = string.format("%d ready, %d new, %d old", r.counts.new_ready, #r.new, #r.old)
  if s.milestone ~= milestone then
    s.milestone, s.moved_at = milestone, rollout.progress(r)
    return nil
  end
  local still = rollout.progress(r) - (s.moved_at or 0)
  if still <= r.params.progress_deadline_seconds then
    return nil
  end
  return string.format("progress deadline exceeded: no progress for %d s (%s) waiting for %s "
    .. "(progress_deadline_seconds = %d)", rollout.seconds(still), milestone,
    s.waiting_for or "nothing", rollout.seconds(r.params.progress_deadline_seconds))
end

local function reconcile(r)
  local s = r.state
  local failure = rollout.failed_operation(r) or stalled(r)
  if failure then
    s.waiting_for, s.domain = nil, nil
    return { fail(failure) }
  end

  local desired = r.count
  local surge, unavailable = limits(r)
  local staying_new = #rollout.staying(r.new)
  local total = #r.new + #r.old
  local excess = total - #rollout.filter(r.instances, rollout.deleting) - desired
  local budget = r.counts.ready - (desired - unavailable)  -- how many more may stop serving
  local actions = {}

  local missing = math.min(desired - staying_new, desired + surge - total)
  if missing > 0 then
    actions[#actions + 1] = create(missing)
  end

  if #r.old > 0 then
    local domain = rollout.group_by_domain(r.old)[1]
    s.domain = domain.domain
    if busy_outside(r, domain.domain) then
      s.waiting_for = "operations in other update domains to finish"
      return actions
    end
    -- Nodes that name no update domain share the unnamed one, which has nothing to quote.
    local which = domain.domain ~= "" and string.format("update domain '%s'", domain.domain)
      or "the nodes with no update domain"
    s.waiting_for = string.format("%s to be replaced (%d of %d instances run the new version)",
      which, r.counts.new, desired)
    local deletes, updates = replace(domain, excess, budget)
    actions[#actions + 1] = deletes
    actions[#actions + 1] = updates
    return actions
  end

  s.domain = nil
  if excess > 0 then
    s.waiting_for = plural(excess, "extra instance") .. " to be removed"
    actions[#actions + 1] = delete(excess)
  elseif staying_new < desired then
    s.waiting_for = plural(desired - staying_new, "new instance") .. " to be created"
  elseif r.counts.new_ready < desired then
    s.waiting_for = string.format("%d of %d new instances to be ready", r.counts.new_ready,
      desired)
  elseif r.counts.in_flight > 0 then
    s.waiting_for = plural(r.counts.in_flight, "operation") .. " to finish"
  else
    s.waiting_for = nil
    actions[#actions + 1] = complete(string.format("%d instances run the new version", desired))
  end
  return actions
end

-- ---- Test fixtures ----

-- A ready instance named web-<id> in update domain `domain`; `extra` overrides fields.
local function inst(id, domain, extra)
  local t = { name = "web-" .. id, node = "node-" .. id, update_domain = domain,
              state = "RUNNING", healthy = true }
  for k, v in pairs(extra or {}) do
    t[k] = v
  end
  return t
end

-- A check that the rollout is left waiting for nothing.
local function waits_for_nothing(_, state)
  return state.waiting_for == nil, "waiting_for = " .. tostring(state.waiting_for)
end

-- Fields of an instance with an operation of `type` under way.
local function busy(type)
  return { operation = { id = 7, type = type, state = "RUNNING" } }
end

return {
  name = "rolling",
  description = "Replace old instances one update domain at a time, within max_surge and "
    .. "max_unavailable.",
  params = {
    max_surge = {
      type = "count", default = 0,
      description = "instances above count while rolling: an integer, or a percentage of count "
        .. "rounded up",
    },
    max_unavailable = {
      type = "count", default = 1,
      description = "instances below count out of service: an integer, or a percentage of count "
        .. "rounded down; at least 1 when max_surge is 0",
    },
    progress_deadline_seconds = {
      type = "number", default = 600, min = 1,
      description = "seconds in progress (pauses excluded) without any instance becoming ready, "
        .. "created or replaced before the rollout fails",
    },
  },
  reconcile = reconcile,

  tests = {
    {
      name = "the first deployment creates every instance",
      r = { count = 3 },
      expect = { create(3) },
      expect_state = { waiting_for = "3 new instances to be created" },
    },
    {
      name = "scale-up creates the difference",
      r = { count = 5, new = { inst("a", "ud-1"), inst("b", "ud-2"), inst("c", "ud-3") } },
      expect = { create(2) },
    },
    {
      name = "scale-down deletes the difference by number, the host picks",
      r = { count = 2, new = { inst("a", "ud-1"), inst("b", "ud-2"), inst("c", "ud-3") } },
      expect = { delete(1) },
      expect_state = { waiting_for = "1 extra instance to be removed" },
    },
    {
      name = "scale-down does not delete again while a delete is in flight",
      r = {
        count = 2,
        new = { inst("a", "ud-1"), inst("b", "ud-2"), inst("c", "ud-3", busy("DELETE")) },
      },
      expect = {},
    },
    {
      name = "new coordinates with no surge update one instance in place",
      r = { count = 3, old = { inst("a", "ud-1"), inst("b", "ud-1"), inst("c", "ud-2") } },
      expect = { update({ "web-a" }) },
      expect_state = { domain = "ud-1", waiting_for = "update domain 'ud-1' to be replaced "
        .. "(0 of 3 instances run the new version)" },
    },
    {
      name = "instances on nodes with no update domain are not said to be in domain ''",
      r = { count = 2, old = { inst("a", ""), inst("b", "") } },
      expect = { update({ "web-a" }) },
      expect_state = { domain = "", waiting_for = "the nodes with no update domain to be replaced "
        .. "(0 of 2 instances run the new version)" },
    },
    {
      name = "the next in-place update waits for the one in flight",
      r = {
        count = 3,
        old = { inst("a", "ud-1", busy("UPDATE")), inst("b", "ud-1"), inst("c", "ud-2") },
      },
      expect = {},
    },
    {
      name = "update domains go in name order",
      r = {
        count = 3,
        old = { inst("c", "ud-2"), inst("b", "ud-1") },
        new = { inst("a", "ud-3") },
      },
      expect = { update({ "web-b" }) },
      expect_state = { domain = "ud-1" },
    },
    {
      name = "the next domain waits while another domain has an operation in flight",
      r = {
        count = 3, params = { max_unavailable = 2 },
        new = { inst("a", "ud-1", busy("UPDATE")) },
        old = { inst("b", "ud-2"), inst("c", "ud-2") },
      },
      expect = {},
      expect_state = { domain = "ud-2", waiting_for = "operations in other update domains to finish" },
    },
    {
      name = "a whole domain is updated at once when the budget allows",
      r = {
        count = 3, params = { max_unavailable = 2 },
        new = { inst("a", "ud-1") },
        old = { inst("b", "ud-2"), inst("c", "ud-2") },
      },
      expect = { update({ "web-b", "web-c" }) },
    },
    {
      name = "surge 1 creates one extra instance first",
      r = {
        count = 3, params = { max_surge = 1, max_unavailable = 0 },
        old = { inst("a", "ud-1"), inst("b", "ud-2"), inst("c", "ud-3") },
      },
      expect = { create(1) },
    },
    {
      name = "surge 1 waits while the extra instance starts",
      r = {
        count = 3, params = { max_surge = 1, max_unavailable = 0 },
        old = { inst("a", "ud-1"), inst("b", "ud-2"), inst("c", "ud-3") },
        new = { inst("x", "ud-2", { state = "STARTING", healthy = false,
                                    operation = { id = 9, type = "CREATE", state = "RUNNING" } }) },
      },
      expect = {},
    },
    {
      name = "surge 1 deletes an old instance once the extra one is ready",
      r = {
        count = 3, params = { max_surge = 1, max_unavailable = 0 },
        old = { inst("a", "ud-1"), inst("b", "ud-2"), inst("c", "ud-3") },
        new = { inst("x", "ud-2") },
      },
      expect = { delete({ "web-a" }) },
    },
    {
      name = "instances that serve nothing go first and cost no availability",
      r = {
        count = 2,
        old = { inst("a", "ud-1"), inst("b", "ud-1", { state = "FAILED", healthy = false }),
                inst("c", "ud-1") },
      },
      expect = { delete({ "web-b" }), update({ "web-a" }) },
    },
    {
      name = "complete when exactly count new instances are ready",
      r = { count = 3, new = { inst("a", "ud-1"), inst("b", "ud-2"), inst("c", "ud-3") } },
      expect = { complete("3 instances run the new version") },
      check = waits_for_nothing,
    },
    {
      name = "not complete while a new instance is unhealthy",
      r = { count = 2, new = { inst("a", "ud-1"), inst("b", "ud-2", { healthy = false }) } },
      expect = {},
      expect_state = { waiting_for = "1 of 2 new instances to be ready" },
    },
    {
      name = "a rejected create fails the rollout",
      r = {
        count = 2, deployment = { id = "deployment-2" },
        new = {
          inst("a", "ud-1"),
          inst("b", "", { state = "PENDING", healthy = false, deployment_id = "deployment-2",
                          last_operation = { id = 4, type = "CREATE", state = "REJECTED",
                                             message = "denied by prod-guard" } }),
        },
      },
      expect = { fail("CREATE of web-b REJECTED: denied by prod-guard") },
      check = waits_for_nothing,
    },
    {
      name = "a failed in-place update of this rollout fails it",
      r = {
        count = 2, deployment = { id = "deployment-2" },
        old = {
          inst("a", "ud-1", { last_operation = { id = 5, type = "UPDATE", state = "FAILED",
                                                 message = "image not found",
                                                 intent = "deployment-2" } }),
          inst("b", "ud-1"),
        },
      },
      expect = { fail("UPDATE of web-a FAILED: image not found") },
    },
    {
      name = "a failure from an earlier deployment does not fail this one",
      r = {
        count = 1, deployment = { id = "deployment-2" },
        old = { inst("a", "ud-1", { deployment_id = "deployment-1",
          last_operation = { id = 2, type = "RESTART", state = "FAILED", message = "crashed" } }) },
      },
      expect = { update({ "web-a" }) },
    },
    {
      name = "a restore replaces the undone version's instances like any old ones",
      r = {
        count = 2, deployment = { id = "deployment-1" },
        restore = { from = "deployment-2", kind = "rollback", reason = "bad", at = 1767614400 },
        new = { inst("a", "ud-1", { deployment_id = "deployment-1" }) },
        old = { inst("b", "ud-2", { deployment_id = "deployment-2" }) },
      },
      expect = { update({ "web-b" }) },
      expect_state = { domain = "ud-2" },
    },
    {
      name = "a failed operation of the undone rollout does not fail the restore",
      r = {
        count = 2, deployment = { id = "deployment-1" },
        restore = { from = "deployment-2", kind = "abort", at = 1767614400 },
        new = {
          inst("a", "ud-1", { deployment_id = "deployment-1",
            last_operation = { id = 5, type = "UPDATE", state = "FAILED",
                               message = "bad image" } }),
        },
        old = { inst("b", "ud-1", { deployment_id = "deployment-2", state = "FAILED",
          healthy = false, last_operation = { id = 6, type = "CREATE", state = "FAILED",
                                              message = "crashed", intent = "deployment-2" } }) },
      },
      expect = { update({ "web-b" }) },
    },
    {
      name = "a failed operation of the restore itself fails it",
      r = {
        count = 1, deployment = { id = "deployment-1" },
        restore = { from = "deployment-2", kind = "rollback", at = 1767614400 },
        new = { inst("a", "ud-1", { deployment_id = "deployment-1",
          last_operation = { id = 7, type = "UPDATE", state = "FAILED", message = "no node",
                             intent = "deployment-1" } }) },
      },
      expect = { fail("UPDATE of web-a FAILED: no node") },
    },
    {
      name = "percentages: surge rounds up, unavailable rounds down",
      r = {
        count = 4, params = { max_surge = "25%", max_unavailable = "50%" },
        old = { inst("a", "ud-1"), inst("b", "ud-1"), inst("c", "ud-1"), inst("d", "ud-1") },
      },
      expect = { create(1), update({ "web-a", "web-b" }) },
    },
    {
      name = "percentages: a surge lets unavailable round down to zero",
      r = {
        count = 3, params = { max_surge = "10%", max_unavailable = "10%" },
        old = { inst("a", "ud-1"), inst("b", "ud-1"), inst("c", "ud-1") },
      },
      expect = { create(1) },
    },
    {
      name = "percentages: without surge at least one instance may be unavailable",
      r = {
        count = 3, params = { max_unavailable = "10%" },
        old = { inst("a", "ud-1"), inst("b", "ud-1"), inst("c", "ud-1") },
      },
      expect = { update({ "web-a" }) },
    },
    {
      name = "a create waiting for placement holds up no update domain",
      r = {
        count = 2, params = { max_surge = 2, max_unavailable = 0 },
        old = { inst("a", "ud-1"), inst("b", "ud-2") },
        new = { inst("x", "ud-3"),
                inst("y", "", { state = "PENDING", healthy = false,
                                operation = { id = 9, type = "CREATE", state = "PENDING",
                                              message = "waiting for placement: no node fits" } }) },
      },
      expect = { delete({ "web-a" }) },
    },
    {
      name = "a rollout that does not move for the progress deadline fails",
      r = {
        count = 2, deployment = { id = "deployment-2", progress_seconds = 700 },
        new = { inst("a", "ud-1"), inst("b", "ud-2", { healthy = false }) },
        state = { milestone = "1 ready, 2 new, 0 old", moved_at = 99,
                  waiting_for = "1 of 2 new instances to be ready" },
      },
      expect = { fail("progress deadline exceeded: no progress for 601 s (1 ready, 2 new, 0 old) "
        .. "waiting for 1 of 2 new instances to be ready (progress_deadline_seconds = 600)") },
      check = waits_for_nothing,
    },
    {
      name = "a rollout that moved starts its progress deadline again",
      r = {
        count = 2, deployment = { id = "deployment-2", progress_seconds = 700 },
        new = { inst("a", "ud-1"), inst("b", "ud-2") },
        state = { milestone = "1 ready, 2 new, 0 old", moved_at = 99 },
      },
      expect = { complete("2 instances run the new version") },
      expect_state = { milestone = "2 ready, 2 new, 0 old", moved_at = 700 },
    },
    {
      name = "a param that is neither a count nor a percentage is refused",
      r = { count = 1, params = { max_surge = "lots" } },
      expect_error = "param 'max_surge' must be an integer >= 0 or a percentage",
    },
  },
}
