-- Canary: move traffic to the new version in percentage steps, without doubling capacity.
--
-- At a step of p%, the rollout wants ceil(count * p / 100) new instances (at least one):
--   1. it creates them beside the old ones (a surge; old instances are not touched yet);
--   2. health gate: it waits until each has been ready for min_ready_seconds, and gives up
--      when that takes more than health_timeout_seconds of progress;
--   3. it deletes old instances, unhealthiest first, down to count minus the new ones, and
--      routes p% of the traffic to the new version;
--   4. analysis gate: it asks tide.lib.analysis[analysis] (with analysis_params) until it
--      passes, giving up after more than analysis_failure_limit failures and pausing for a
--      human after more than analysis_inconclusive_limit inconclusive answers; a pass that
--      waits for a metric's first answer counts as neither;
--   5. it pauses: for pause_seconds, or, with 0, until promoted; then the next step begins.
-- The last step (100%) completes once count new instances are ready and no old ones remain.
--
-- A promote signal ends the current step's analysis and pause (it is remembered, so one given
-- while the health gate is still closed takes effect once it opens); promote_full skips every
-- remaining step, creating all new instances, switching the traffic once they are ready and
-- deleting the old ones. A failed instance or operation of this rollout, a health timeout, a
-- failed analysis and the progress deadline (progress_seconds, which leaves paused time out)
-- roll the deployment back, or fail it without auto_rollback.
--
-- A restore (r.restore: a newer rollout was rolled back or aborted and this deployment is
-- re-opened) and the first deployment of a plan skip the steps: all traffic to the new version,
-- missing instances created, old ones updated in place or deleted, then complete. So does a
-- rollout with no old instance (a new count for the version that runs) or a count of 0: the
-- new instances come to exactly count (surplus ones deleted), the old ones go, then complete.
--
-- r.state: step, steps, weights (the last routed), waiting_for (for people), and the step's
-- bookkeeping: step_started (progress_seconds), pause_until, promoted_step, promoted_full,
-- analysis ("passed" | "inconclusive"), analysis_failures, analysis_inconclusive,
-- analysis_reason; restored_from (the rollout a restore undoes, once routed back).

local rollout = tide.lib.rollout
local progress, clock, plural = rollout.progress, rollout.clock, rollout.plural
local act = rollout.with_verbs({ create = create, update = update, delete = delete, route = route,
                                 complete = complete, fail = fail, rollback = rollback })

local function begin_step(r, step)
  local s = r.state
  s.step, s.step_started = step, progress(r)
  s.pause_until, s.analysis, s.analysis_failures, s.analysis_inconclusive = nil, nil, 0, 0
end

-- "step 2 of 3 (50% new)"
local function step_name(r, pct)
  return string.format("step %d of %d (%s%% new)", r.state.step, r.state.steps, pct)
end

-- The analysis gate: true when it is open; otherwise sets waiting_for and may add a pause or
-- return the failure's actions as its second result.
local function analysis_gate(r, pct, actions)
  local s, name = r.state, r.params.analysis
  if name == "none" or s.analysis == "passed" then
    return true
  end
  if s.analysis ~= "inconclusive" then
    local verdict, reason = rollout.analyze(r, name, {
      phase = "canary", step = s.step, min_ready_seconds = r.params.min_ready_seconds,
    })
    if verdict == "pass" then
      s.analysis = "passed"
      s.analysis_reason = reason  -- not an earlier pass's inconclusive reason
      return true
    elseif verdict == "pending" then
      s.waiting_for = "analysis (" .. reason .. ")"
      return false
    elseif verdict == "fail" then
      s.analysis_failures = (s.analysis_failures or 0) + 1
      if s.analysis_failures > r.params.analysis_failure_limit then
        return false, act.failed(r, string.format("%s: analysis '%s' failed: %s",
          step_name(r, pct), name, reason))
      end
    else
      s.analysis_inconclusive = (s.analysis_inconclusive or 0) + 1
      if s.analysis_inconclusive > r.params.analysis_inconclusive_limit then
        s.analysis = "inconclusive"
      end
    end
    s.analysis_reason = reason
  end
  if s.analysis == "inconclusive" then
    s.waiting_for = "promotion (analysis inconclusive)"
    actions[#actions + 1] = pause(string.format("%s: analysis inconclusive (%s); promote to "
      .. "continue", step_name(r, pct), s.analysis_reason))
  else
    s.waiting_for = "analysis"
  end
  return false
end

-- No room for the surge (the scheduler found no node for a new instance: anti-affinity,
-- capacity): replace instead, removing now an old instance this step would remove anyway,
-- never below what the step keeps.
local function make_room(r, pct, wanted, actions)
  local unplaced = #rollout.filter(rollout.staying(r.new), rollout.waiting_for_placement)
  if unplaced > 0 then
    local floor = math.max(r.count - wanted, pct < 100 and 1 or 0)
    local staying_old = rollout.staying(r.old)
    local room = math.min(unplaced, #staying_old - floor)
    if room > 0 then
      actions[#actions + 1] = delete(rollout.take_for_removal(r, rollout.idle(staying_old), room))
    end
  end
end

-- One step at `pct`. Returns "next" when the step is over, or the failure's actions.
local function run_step(r, pct, actions)
  local s, params = r.state, r.params
  local wanted = rollout.step_count(r.count, pct)
  local open, failure = act.health_gate(r, actions, wanted, s.step_started, step_name(r, pct))
  if failure then
    return failure
  elseif not open then
    make_room(r, pct, wanted, actions)
    return nil
  end

  -- While the old version gets traffic, at least one old instance serves it.
  local keep_old = r.count - wanted
  if pct < 100 then
    keep_old = math.max(keep_old, 1)
  end
  local staying_old = rollout.staying(r.old)
  local doomed = rollout.take_for_removal(r, rollout.idle(staying_old), #staying_old - keep_old)
  if #doomed > 0 then
    actions[#actions + 1] = delete(doomed)
  end
  act.route_to(r, actions, { new = pct, old = 100 - pct })
  if #r.old > keep_old then
    s.waiting_for = string.format("%s to be removed", plural(#r.old - keep_old, "old instance"))
    return nil
  end

  if pct >= 100 then
    if #r.new == r.count and r.counts.in_flight == 0 then
      s.waiting_for = nil
      actions[#actions + 1] = complete("promoted")
    else
      s.waiting_for = string.format("%d of %d new instances to be ready", r.counts.new_ready,
        r.count)
    end
    return nil
  end
  if s.promoted_step == s.step then
    return "next"
  end

  open, failure = analysis_gate(r, pct, actions)
  if failure then
    return failure
  elseif not open then
    return nil
  end

  if params.pause_seconds > 0 then
    s.pause_until = s.pause_until or r.now + params.pause_seconds
    if r.now >= s.pause_until then
      return "next"
    end
    s.waiting_for = "pause until " .. clock(s.pause_until)
    actions[#actions + 1] = pause(string.format("%s: paused until %s", step_name(r, pct),
      clock(s.pause_until)), s.pause_until)
    return nil
  end
  s.waiting_for = "promotion"
  actions[#actions + 1] = pause(step_name(r, pct) .. ": waiting for promotion")
  return nil
end

local function reconcile(r)
  if r.restore then
    return act.restore(r, { in_place = true })
  end
  local steps, problem = rollout.parse_steps(r.params.steps)
  problem = problem or rollout.check_analysis("analysis", r.params.analysis)
  local unstepped = act.without_steps(r, problem)
  if unstepped then
    return unstepped
  end

  local s = r.state
  s.steps = #steps
  if s.step == nil or s.step > #steps then
    begin_step(r, 1)
  end
  s.step_started = s.step_started or progress(r)
  if r.signals.promote_full then
    s.promoted_full = true
  end
  if r.signals.promote then
    s.promoted_step = s.step
  end

  local failure = rollout.failure(r)
    or rollout.past_deadline(r, "at " .. step_name(r, steps[s.step]))
  if failure then
    return act.failed(r, failure)
  end
  if s.promoted_full then
    return act.converge(r, nil, "fast-promoted")
  end
  local unshifted = act.without_traffic_shift(r)
  if unshifted then
    return unshifted
  end

  -- A step that ends without having asked for anything lets the next one begin in the same
  -- pass; otherwise the next pass sees what this one's actions did.
  local actions = {}
  while true do
    local outcome = run_step(r, steps[s.step], actions)
    if outcome ~= "next" then
      return type(outcome) == "table" and outcome or actions
    end
    begin_step(r, s.step + 1)
    if #actions > 0 then
      s.waiting_for = string.format("step %d to begin", s.step)
      return actions
    end
  end
end

-- ---- Test fixtures ----

local fixtures = tide.lib.rollout_fixtures
local NOW, new, old = fixtures.NOW, fixtures.new, fixtures.old
local STARTING, DELETING = fixtures.STARTING, fixtures.DELETING
local ALL_NEW = { new = 100, old = 0 }

-- A rollout of deployment-2 over deployment-1 with 4 instances; `fields` are added to it.
local function rollout_of(fields)
  return fixtures.rollout_of(4, fields)
end

local OLD4 = { old(1), old(2), old(3), old(4) }

-- The shipped analyses' queries for the canary web-n1 over the default 30 s window.
local ERROR_RATE_N1 = '(sum(rate(tide_workload_requests_total{tide_instance=~"web-n1",code=~"5.."}'
  .. '[30s])) or vector(0)) / sum(rate(tide_workload_requests_total{tide_instance=~"web-n1"}[30s]))'
local LATENCY_P99_N1 = 'histogram_quantile(0.99, sum by (le) (rate('
  .. 'tide_workload_request_duration_seconds_bucket{tide_instance=~"web-n1"}[30s])))'
local REQUESTS_N1 = 'sum(increase(tide_workload_requests_total{tide_instance=~"web-n1"}[30s]))'

local OLD3 = { old(2), old(3), old(4) }

return {
  name = "canary",
  description = "Shift traffic to the new version in percentage steps, behind health and "
    .. "analysis gates, with timed or manual pauses and automatic rollback.",
  params = {
    steps = {
      type = "list", default = { 10, 50, 100 },
      description = "traffic percentages for the new version, increasing; 100 is implied last",
    },
    pause_seconds = {
      type = "number", default = 0, min = 0,
      description = "pause after each step but the last; 0 waits for a promote signal",
    },
    min_ready_seconds = {
      type = "number", default = 5, min = 0,
      description = "how long a new instance must be ready before the health gate opens",
    },
    health_timeout_seconds = {
      type = "number", default = 120, min = 1,
      description = "progress seconds a step may wait for its health gate before it fails",
    },
    analysis = {
      type = "string", default = "none",
      description = "the tide.lib.analysis function asked after each step's traffic shift",
    },
    analysis_params = {
      type = "table", default = {},
      description = "what the analysis reads as ctx.params: error_rate takes provider, "
        .. "max_error_rate, window_seconds; latency_p99 max_latency_p99_seconds",
    },
    analysis_failure_limit = {
      type = "integer", default = 0, min = 0,
      description = "failed analysis answers a step tolerates; one more fails the rollout",
    },
    analysis_inconclusive_limit = {
      type = "integer", default = 0, min = 0,
      description = "inconclusive answers a step tolerates; one more pauses until promoted",
    },
    progress_deadline_seconds = {
      type = "number", default = 600, min = 1,
      description = "seconds in progress (pauses excluded) before the rollout fails",
    },
    auto_rollback = {
      type = "boolean", default = true,
      description = "on failure, roll back to the previous deployment (false: stop as failed)",
    },
  },
  reconcile = reconcile,

  tests = {
    {
      name = "the first deployment creates every instance, no steps",
      r = { count = 4, deployment = { id = "deployment-1" } },
      expect = { create(4) },
    },
    {
      name = "the first deployment completes once every instance is ready",
      r = { count = 2, deployment = { id = "deployment-1" }, new = { new(1), new(2) } },
      expect = { route(ALL_NEW), complete("promoted") },
    },
    {
      name = "a failure in the first deployment fails it: there is nothing to roll back to",
      r = { count = 2, deployment = { id = "deployment-1" },
            new = { new(1), new(2, { state = "FAILED", healthy = false }) } },
      expect = { fail("web-n2 FAILED") },
    },
    {
      name = "step 1 creates its canary beside the old instances",
      r = rollout_of({ old = OLD4 }),
      expect = { create(1) },
      expect_state = { step = 1, steps = 3, waiting_for = "1 new instance to be ready for 5 s" },
    },
    {
      name = "the health gate waits while the canary starts",
      r = rollout_of({ old = OLD4, new = { new(1, STARTING) },
                       state = { step = 1, step_started = 0 } }),
      expect = {},
      expect_state = { waiting_for = "1 new instance to be ready for 5 s" },
    },
    {
      name = "a new instance being deleted does not count toward the step",
      r = rollout_of({ old = OLD4, new = { new(1, DELETING) },
                       state = { step = 1, step_started = 0 } }),
      expect = { create(1) },
    },
    {
      name = "a canary with no node to go to makes room by replacing an old instance",
      r = rollout_of({ old = { old(1), old(2, { healthy = false }), old(3), old(4) },
                       new = { new(1, { state = "PENDING", healthy = false, ready_seconds = 0,
                                        operation = { id = 9, type = "CREATE", state = "PENDING",
                                                      message = "waiting for placement: no node fits" } }) },
                       state = { step = 1, step_started = 0 } }),
      expect = { delete({ "web-o2" }) },
    },
    {
      name = "replacing for room never leaves the old version without an instance",
      r = rollout_of({ count = 1, deployment = { id = "deployment-2", count = 1, progress_seconds = 30 },
                       old = { old(1) },
                       new = { new(1, { state = "PENDING", healthy = false, ready_seconds = 0,
                                        operation = { id = 9, type = "CREATE", state = "PENDING",
                                                      message = "waiting for placement: no node fits" } }) },
                       state = { step = 1, step_started = 0 } }),
      expect = {},
    },
    {
      name = "the health gate waits for min_ready_seconds",
      r = rollout_of({ old = OLD4, new = { new(1, { ready_seconds = 2 }) },
                       state = { step = 1, step_started = 0 } }),
      expect = {},
    },
    {
      name = "once the canary is ready, an old instance goes (unhealthiest first), 10% is routed",
      r = rollout_of({ old = { old(1), old(2, { healthy = false }), old(3), old(4) },
                       new = { new(1) }, state = { step = 1, step_started = 0 } }),
      expect = { delete({ "web-o2" }), route({ new = 10, old = 90 }) },
      expect_state = { weights = { new = 10, old = 90 },
                       waiting_for = "1 old instance to be removed" },
    },
    {
      name = "instances of a superseded rollout go before those of the last completed one",
      r = rollout_of({ old = { old(1), old(2), fixtures.instance("web-x1", "deployment-1b"), old(4) },
                       new = { new(1) }, state = { step = 1, step_started = 0 } }),
      expect = { delete({ "web-x1" }), route({ new = 10, old = 90 }) },
    },
    {
      name = "with the old instance gone, step 1 waits for promotion",
      r = rollout_of({ old = OLD3, new = { new(1) },
                       state = { step = 1, step_started = 0, weights = { new = 10, old = 90 } } }),
      expect = { pause("step 1 of 3 (10% new): waiting for promotion") },
      expect_state = { waiting_for = "promotion" },
    },
    {
      name = "promote moves on to step 2, which creates its instances",
      r = rollout_of({ old = OLD3, new = { new(1) }, signals = { promote = true },
                       state = { step = 1, step_started = 0, weights = { new = 10, old = 90 } } }),
      expect = { create(1) },
      expect_state = { step = 2, waiting_for = "1 new instance to be ready for 5 s" },
    },
    {
      name = "a promote during the health gate is remembered until the gate opens",
      r = rollout_of({ old = OLD4, new = { new(1, STARTING) }, signals = { promote = true },
                       state = { step = 1, step_started = 0 } }),
      expect = {},
      expect_state = { promoted_step = 1 },
    },
    {
      name = "pause_seconds pauses each step until a time",
      r = rollout_of({ old = OLD3, new = { new(1) }, params = { pause_seconds = 60 },
                       state = { step = 1, step_started = 0, weights = { new = 10, old = 90 } } }),
      expect = { pause("step 1 of 3 (10% new): paused until 12:01:00", NOW + 60) },
      expect_state = { pause_until = NOW + 60, waiting_for = "pause until 12:01:00" },
    },
    {
      name = "when the timed pause is over the next step begins",
      r = rollout_of({ old = OLD3, new = { new(1) }, params = { pause_seconds = 60 },
                       state = { step = 1, step_started = 0, pause_until = NOW - 1,
                                 weights = { new = 10, old = 90 } } }),
      expect = { create(1) },
      expect_state = { step = 2 },
    },
    {
      name = "step 2 routes 50% once half the instances are new",
      r = rollout_of({ old = OLD3, new = { new(1), new(2) },
                       state = { step = 2, step_started = 0, weights = { new = 10, old = 90 } } }),
      expect = { delete({ "web-o2" }), route({ new = 50, old = 50 }) },
    },
    {
      name = "the last step removes the old instances once every new one is ready",
      r = rollout_of({ old = { old(3), old(4) }, new = { new(1), new(2), new(3), new(4) },
                       state = { step = 3, step_started = 0, weights = { new = 50, old = 50 } } }),
      expect = { delete({ "web-o3", "web-o4" }), route(ALL_NEW) },
    },
    {
      name = "the last step completes with only new instances",
      r = rollout_of({ new = { new(1), new(2), new(3), new(4) },
                       state = { step = 3, step_started = 0, weights = ALL_NEW } }),
      expect = { complete("promoted") },
    },
    {
      name = "a new count for the running version (no old instance) takes no steps",
      r = rollout_of({ count = 2, deployment = { id = "deployment-2", count = 2, progress_seconds = 30 },
                       new = { new(1), new(2), new(3, { healthy = false }) } }),
      expect = { delete({ "web-n3" }), route(ALL_NEW) },
      expect_state = { waiting_for = "2 of 2 new instances to be ready" },
    },
    {
      name = "scaling to 0 deletes every instance, old and new",
      r = rollout_of({ count = 0, deployment = { id = "deployment-2", count = 0, progress_seconds = 30 },
                       old = { old(1) }, new = { new(1), new(2) } }),
      expect = { delete({ "web-n1", "web-n2", "web-o1" }) },
    },
    {
      name = "scaling to 0 completes once nothing is left",
      r = rollout_of({ count = 0, deployment = { id = "deployment-2", count = 0, progress_seconds = 30 },
                       state = { weights = ALL_NEW } }),
      expect = { complete("promoted") },
    },
    {
      name = "promote_full creates every new instance at once",
      r = rollout_of({ old = OLD3, new = { new(1) }, signals = { promote_full = true },
                       state = { step = 1, step_started = 0, weights = { new = 10, old = 90 } } }),
      expect = { create(3) },
      expect_state = { promoted_full = true },
    },
    {
      name = "after promote_full, traffic switches and the old instances go once all are ready",
      r = rollout_of({ old = OLD3, new = { new(1), new(2), new(3), new(4) },
                       state = { step = 1, promoted_full = true,
                                 weights = { new = 10, old = 90 } } }),
      expect = { route(ALL_NEW), delete({ "web-o2", "web-o3", "web-o4" }) },
    },
    {
      name = "promote_full completes as fast-promoted",
      r = rollout_of({ new = { new(1), new(2), new(3), new(4) },
                       state = { step = 1, promoted_full = true, weights = ALL_NEW } }),
      expect = { complete("fast-promoted") },
    },
    {
      name = "a canary not ready within health_timeout_seconds rolls back",
      r = rollout_of({ old = OLD4, new = { new(1, STARTING) },
                       deployment = { id = "deployment-2", progress_seconds = 130 },
                       state = { step = 1, step_started = 0 } }),
      expect = { rollback("step 1 of 3 (10% new): 0 of 1 new instances ready after 130 s "
        .. "(health_timeout_seconds = 120)") },
    },
    {
      name = "without auto_rollback a health timeout fails the rollout",
      r = rollout_of({ old = OLD4, new = { new(1, STARTING) }, params = { auto_rollback = false },
                       deployment = { id = "deployment-2", progress_seconds = 130 },
                       state = { step = 1, step_started = 0 } }),
      expect = { fail("step 1 of 3 (10% new): 0 of 1 new instances ready after 130 s "
        .. "(health_timeout_seconds = 120)") },
    },
    {
      name = "a failed create rolls back",
      r = rollout_of({ old = OLD4, state = { step = 1, step_started = 0 },
                       new = { new(1, { state = "PENDING", healthy = false,
                         last_operation = { id = 4, type = "CREATE", state = "FAILED",
                                            message = "no capacity" } }) } }),
      expect = { rollback("CREATE of web-n1 FAILED: no capacity") },
    },
    {
      name = "a canary that crashed rolls back",
      r = rollout_of({ old = OLD4, new = { new(1, { state = "FAILED", healthy = false }) },
                       state = { step = 1, step_started = 0 } }),
      expect = { rollback("web-n1 FAILED") },
    },
    {
      name = "a passing analysis opens the gate to the pause",
      r = rollout_of({ old = OLD3, new = { new(1) }, params = { analysis = "healthy" },
                       state = { step = 1, step_started = 0, weights = { new = 10, old = 90 } } }),
      expect = { pause("step 1 of 3 (10% new): waiting for promotion") },
      expect_state = { analysis = "passed" },
    },
    {
      name = "a failing analysis rolls back",
      r = rollout_of({ old = OLD3, new = { new(1) }, params = { analysis = "always_fail" },
                       state = { step = 1, step_started = 0, weights = { new = 10, old = 90 } } }),
      expect = { rollback("step 1 of 3 (10% new): analysis 'always_fail' failed: "
        .. "always_fail (a drill)") },
    },
    {
      name = "failures within analysis_failure_limit are asked again",
      r = rollout_of({ old = OLD3, new = { new(1) },
                       params = { analysis = "always_fail", analysis_failure_limit = 2 },
                       state = { step = 1, step_started = 0, analysis_failures = 1,
                                 weights = { new = 10, old = 90 } } }),
      expect = {},
      expect_state = { analysis_failures = 2, waiting_for = "analysis" },
    },
    {
      name = "inconclusive answers within the limit are asked again",
      r = rollout_of({ old = OLD3, new = { new(1) },
                       params = { analysis = "always_inconclusive",
                                  analysis_inconclusive_limit = 3 },
                       state = { step = 1, step_started = 0, weights = { new = 10, old = 90 } } }),
      expect = {},
      expect_state = { analysis_inconclusive = 1, waiting_for = "analysis" },
    },
    {
      name = "beyond the limit, an inconclusive analysis pauses until promoted",
      r = rollout_of({ old = OLD3, new = { new(1) }, params = { analysis = "always_inconclusive" },
                       state = { step = 1, step_started = 0, weights = { new = 10, old = 90 } } }),
      expect = { pause("step 1 of 3 (10% new): analysis inconclusive (always_inconclusive "
        .. "(a drill)); promote to continue") },
      expect_state = { analysis = "inconclusive",
                       waiting_for = "promotion (analysis inconclusive)" },
    },
    {
      name = "promote continues past an inconclusive analysis",
      r = rollout_of({ old = OLD3, new = { new(1) }, params = { analysis = "always_inconclusive" },
                       signals = { promote = true },
                       state = { step = 1, step_started = 0, analysis = "inconclusive",
                                 weights = { new = 10, old = 90 } } }),
      expect = { create(1) },
      expect_state = { step = 2 },
    },
    {
      name = "the progress deadline, paused time left out, rolls back",
      r = rollout_of({ old = OLD3, new = { new(1), new(2, STARTING) },
                       deployment = { id = "deployment-2", progress_seconds = 601 },
                       state = { step = 2, step_started = 590 } }),
      expect = { rollback("progress deadline exceeded: 601 s in progress at step 2 of 3 (50% new) "
        .. "(progress_deadline_seconds = 600)") },
    },
    {
      name = "an error_rate analysis waiting for its first metric answer counts no verdict",
      r = rollout_of({ old = OLD3, new = { new(1) }, params = { analysis = "error_rate" },
                       state = { step = 1, step_started = 0, weights = { new = 10, old = 90 } } }),
      expect = {},
      expect_state = { waiting_for = "analysis (error rate: waiting for the first answer from "
                         .. "'prometheus')" },
    },
    {
      name = "an error rate within max_error_rate passes the step",
      r = rollout_of({ old = OLD3, new = { new(1) }, params = { analysis = "error_rate" },
                       metrics = { prometheus = { [ERROR_RATE_N1] = 0.01, [REQUESTS_N1] = 300 } },
                       state = { step = 1, step_started = 0, weights = { new = 10, old = 90 } } }),
      expect = { pause("step 1 of 3 (10% new): waiting for promotion") },
      expect_state = { analysis = "passed", waiting_for = "promotion" },
    },
    {
      name = "an error rate above max_error_rate rolls back",
      r = rollout_of({ old = OLD3, new = { new(1) },
                       params = { analysis = "error_rate",
                                  analysis_params = { max_error_rate = 0.1, window_seconds = 60 } },
                       metrics = { prometheus = { [string.gsub(ERROR_RATE_N1, "30s", "60s")] = 0.2,
                                                  [string.gsub(REQUESTS_N1, "30s", "60s")] = 600 } },
                       state = { step = 1, step_started = 0, weights = { new = 10, old = 90 } } }),
      expect = { rollback("step 1 of 3 (10% new): analysis 'error_rate' failed: error rate 20.0% "
        .. "above 10.0% (max_error_rate)") },
    },
    {
      name = "an error rate over fewer than min_requests requests is inconclusive, however low",
      r = rollout_of({ old = OLD3, new = { new(1) },
                       params = { analysis = "error_rate", analysis_inconclusive_limit = 5 },
                       metrics = { prometheus = { [ERROR_RATE_N1] = 0, [REQUESTS_N1] = 4 } },
                       state = { step = 1, step_started = 0, weights = { new = 10, old = 90 } } }),
      expect = {},
      expect_state = { analysis_inconclusive = 1, analysis_reason = "error rate: 4 requests in the "
        .. "last 30 s, fewer than min_requests (20)" },
    },
    {
      name = "a provider's error is an inconclusive answer",
      r = rollout_of({ old = OLD3, new = { new(1) },
                       params = { analysis = "latency_p99", analysis_inconclusive_limit = 5,
                                  analysis_params = { provider = "prom" } },
                       metrics = { prom = { [LATENCY_P99_N1] = "prom: bad_data: parse error",
                                            [REQUESTS_N1] = 300 } },
                       state = { step = 1, step_started = 0, weights = { new = 10, old = 90 } } }),
      expect = {},
      expect_state = { analysis_inconclusive = 1,
                       analysis_reason = "p99 latency: prom: bad_data: parse error" },
    },
    {
      name = "an unknown analysis fails, naming the param",
      r = rollout_of({ old = OLD4, params = { analysis = "vibes" } }),
      expect = { fail("params.analysis: unknown analysis 'vibes' (tide.lib.analysis has "
        .. "always_fail, always_inconclusive, error_rate, healthy, latency_p99, none, router_error_rate, "
        .. "router_latency, router_latency_p95)") },
    },
    {
      name = "steps that do not increase fail, naming the param",
      r = rollout_of({ old = OLD4, params = { steps = { 50, 20 } } }),
      expect = { fail("params.steps: expected increasing percentages in (0, 100], got 20 at "
        .. "position 2") },
    },
    {
      name = "a restore after a rollback routes back at once and updates the undone instances",
      r = rollout_of({ restore = { from = "deployment-3", kind = "rollback", reason = "analysis",
                                   at = NOW },
                       new = { new(1), new(2) },
                       old = { old(3, { deployment_id = "deployment-3" }),
                               old(4, { deployment_id = "deployment-3" }) },
                       state = { step = 3, steps = 3, weights = ALL_NEW } }),
      expect = { route(ALL_NEW), update({ "web-o3", "web-o4" }) },
      expect_state = { restored_from = "deployment-3" },
    },
    {
      name = "a failed operation of the undone rollout does not stop a restore",
      r = rollout_of({ restore = { from = "deployment-3", kind = "abort", at = NOW },
                       new = { new(1), new(2), new(3) },
                       old = { old(4, { deployment_id = "deployment-3", state = "FAILED",
                         healthy = false, last_operation = { id = 6, type = "CREATE",
                           state = "FAILED", message = "crashed", intent = "deployment-3" } }) },
                       state = { restored_from = "deployment-3", weights = ALL_NEW } }),
      expect = { update({ "web-o4" }) },
    },
    {
      name = "a failed operation of the restore itself routes all traffic here and fails it",
      r = rollout_of({ restore = { from = "deployment-3", kind = "rollback", at = NOW },
                       new = { new(1), new(2, { last_operation = { id = 7, type = "UPDATE",
                         state = "FAILED", message = "no node", intent = "deployment-2" } }) },
                       old = { old(3, { deployment_id = "deployment-3" }) },
                       state = { step = 2, steps = 3, weights = { new = 50, old = 50 } } }),
      expect = { route(ALL_NEW), fail("UPDATE of web-n2 FAILED: no node") },
      expect_state = { restored_from = "deployment-3" },
    },
    {
      name = "a restore completes with count new instances ready, the host names it",
      r = rollout_of({ restore = { from = "deployment-3", kind = "rollback", at = NOW },
                       new = { new(1), new(2), new(3), new(4) },
                       state = { restored_from = "deployment-3", weights = ALL_NEW } }),
      expect = { complete() },
    },
  },
}
