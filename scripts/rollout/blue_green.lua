-- Blue-green: bring up a full preview set of the new version beside the active old one, then
-- switch all traffic at once, keeping the old set warm for a while so that switching back is
-- instant.
--
--   1. preview: traffic stays on the old set (routed there once at the start); count new
--      instances are created; health gate: each must be ready for min_ready_seconds, within
--      health_timeout_seconds of progress; then the pre-promotion analysis must pass (an
--      inconclusive answer is asked again up to analysis_inconclusive_limit times, and one
--      that waits for a metric's first answer counts as none);
--   2. promotion, as auto_promotion says: "never" pauses until a promote signal, "immediate"
--      goes on at once, "after N s" pauses until N seconds after the preview became ready
--      (a promote signal goes on sooner);
--   3. switch: all traffic to the new set. For post_promotion_analysis_seconds the
--      post-promotion analysis is asked on every pass; a failure switches the traffic back
--      and rolls back. The old set is deleted once scale_down_delay_seconds have passed since
--      the switch (and the post-promotion analysis is over), then the rollout completes.
--
-- promote_full skips the analyses, the promotion and the delays: switch as soon as the preview
-- is ready, delete the old set, complete as "fast-promoted". A failed instance or operation of
-- this rollout, a health timeout, a failed analysis and, before the switch, the progress
-- deadline (progress_seconds, which leaves paused time out) roll the deployment back (or fail
-- it without auto_rollback); after the switch, traffic goes back to the old set first.
--
-- A restore (r.restore: a newer rollout was rolled back or aborted and this deployment is
-- re-opened) routes all traffic to this version at once and removes the newer version's
-- instances; after an abort, only once abort_scale_down_delay_seconds have passed since it.
-- The first deployment of a plan just creates its instances, routes to them and completes; so
-- does, before the switch, a rollout with no old instance (a new count for the version that
-- runs) or a count of 0: surplus new instances and the old ones are deleted, then complete.
--
-- r.state: step (1 preview, 2 promotion, 3 switched), steps (3), weights (the last routed),
-- waiting_for (for people), and the bookkeeping: started (progress_seconds), preview_ready_at,
-- pre_analysis ("passed" | "inconclusive"), pre_inconclusive (inconclusive answers so far),
-- analysis_reason, promoted, promoted_full,
-- switched_at, restored_from (the rollout a restore undoes, once routed back).

local rollout = tide.lib.rollout
local progress, clock = rollout.progress, rollout.clock
local act = rollout.with_verbs({ create = create, update = update, delete = delete, route = route,
                                 complete = complete, fail = fail, rollback = rollback })

local ALL_NEW = { new = 100, old = 0 }
local ALL_OLD = { new = 0, old = 100 }

-- "never" | "immediate" | "after", seconds; or nil, nil, why not.
local function parse_auto_promotion(text)
  if text == "never" or text == "immediate" then
    return text
  end
  local n = type(text) == "string" and string.match(text, "^after%s+(%d+)%s*s$")
  if n then
    return "after", tonumber(n)
  end
  return nil, nil, string.format("params.auto_promotion: expected \"never\", \"immediate\" or "
    .. "\"after N s\" (like \"after 30s\"), got \"%s\"", tostring(text))
end

-- After the switch, the old set (while it is there) takes the traffic back first.
local function failed(r, reason)
  return act.failed(r, reason, r.state.switched_at and ALL_OLD)
end

-- After an abort the preview stays abort_scale_down_delay_seconds, for a look.
local function restore(r)
  local keep_until = (r.restore.at or r.now) + r.params.abort_scale_down_delay_seconds
  local keep = r.restore.kind == "abort" and r.now < keep_until
  local actions, plan = act.restore(r, { keep_old = keep })
  if plan and keep and #r.old > 0 then
    r.state.waiting_for = "the aborted preview to be removed at " .. clock(keep_until)
  end
  return actions
end

local function switch(r, actions)
  local s = r.state
  act.route_to(r, actions, ALL_NEW)
  s.step, s.switched_at = 3, r.now
  s.waiting_for = r.params.post_promotion_analysis ~= "none" and "post-promotion analysis"
    or "the old set to be removed at " .. clock(r.now + r.params.scale_down_delay_seconds)
  return actions
end

-- Steps 1 and 2: the preview comes up, passes its gates and waits for promotion.
local function before_switch(r, mode, wait)
  local s, params = r.state, r.params
  local actions = {}
  if s.weights == nil and #r.old > 0 then
    act.route_to(r, actions, ALL_OLD)
  end
  s.step = 1
  local open, failure = act.health_gate(r, actions, r.count, s.started, "preview")
  if failure then
    return failure
  elseif not open then
    return actions
  end
  s.preview_ready_at = s.preview_ready_at or r.now

  local name = params.pre_promotion_analysis
  if name ~= "none" and s.pre_analysis == nil then
    local verdict, reason = rollout.analyze(r, name, {
      phase = "pre_promotion", min_ready_seconds = params.min_ready_seconds,
    })
    if verdict == "inconclusive" then
      s.pre_inconclusive = (s.pre_inconclusive or 0) + 1
    end
    if verdict == "pending"
        or (verdict == "inconclusive" and s.pre_inconclusive <= params.analysis_inconclusive_limit) then
      s.waiting_for = "pre-promotion analysis (" .. reason .. ")"
      return actions
    end
    if verdict == "fail" then
      return failed(r, string.format("pre-promotion analysis '%s' failed: %s", name, reason))
    end
    s.pre_analysis = verdict == "pass" and "passed" or "inconclusive"
    s.analysis_reason = reason
  end
  if s.pre_analysis == "inconclusive" and not s.promoted then
    s.waiting_for = "promotion (pre-promotion analysis inconclusive)"
    actions[#actions + 1] = pause(string.format("preview ready: pre-promotion analysis "
      .. "inconclusive (%s); promote to continue", s.analysis_reason))
    return actions
  end

  s.step = 2
  if not s.promoted and mode == "never" then
    s.waiting_for = "promotion"
    actions[#actions + 1] = pause("preview ready: waiting for promotion")
    return actions
  end
  if not s.promoted and mode == "after" and r.now < s.preview_ready_at + wait then
    local at = s.preview_ready_at + wait
    s.waiting_for = "promotion at " .. clock(at)
    actions[#actions + 1] = pause("preview ready: promotion at " .. clock(at), at)
    return actions
  end
  return switch(r, actions)
end

-- Step 3: the post-promotion analysis runs its course, the old set stays warm for the
-- scale-down delay, then goes.
local function after_switch(r)
  local s, params = r.state, r.params
  local actions = {}
  local name = params.post_promotion_analysis
  local analysis_until = s.switched_at
  if name ~= "none" then
    analysis_until = s.switched_at + params.post_promotion_analysis_seconds
  end
  if r.now < analysis_until then
    local verdict, reason = rollout.analyze(r, name, {
      phase = "post_promotion", min_ready_seconds = params.min_ready_seconds,
    })
    if verdict == "fail" then
      return failed(r, string.format("post-promotion analysis '%s' failed: %s", name, reason))
    end
    s.waiting_for = "post-promotion analysis until " .. clock(analysis_until)
    return actions
  end
  local scale_down_at = math.max(analysis_until, s.switched_at + params.scale_down_delay_seconds)
  if r.now < scale_down_at then
    s.waiting_for = "the old set to be removed at " .. clock(scale_down_at)
    return actions
  end
  return act.converge(r, nil, "promoted")
end

local function reconcile(r)
  if r.restore then
    return restore(r)
  end
  local mode, wait, problem = parse_auto_promotion(r.params.auto_promotion)
  problem = problem or rollout.check_analysis("pre_promotion_analysis",
                                              r.params.pre_promotion_analysis)
    or rollout.check_analysis("post_promotion_analysis", r.params.post_promotion_analysis)
  local unstepped = act.without_steps(r, problem)
  if unstepped then
    return unstepped
  end

  local s = r.state
  s.steps, s.step = 3, s.step or 1
  s.started = s.started or progress(r)
  if r.signals.promote_full then
    s.promoted_full = true
  end
  if r.signals.promote then
    s.promoted = true
  end

  -- The progress deadline counts until the switch; after it, every wait is timed here.
  local failure = rollout.failure(r)
    or (not s.switched_at and rollout.past_deadline(r, "before the switch"))
  if failure then
    return failed(r, failure)
  end
  local unshifted = not s.promoted_full and not s.switched_at and act.without_traffic_shift(r)
  if unshifted then
    return unshifted
  end
  if s.promoted_full then
    local actions = act.converge(r, nil, "fast-promoted")
    if s.weights and s.weights.new == 100 then
      s.step, s.switched_at = 3, s.switched_at or r.now
    end
    return actions
  end
  if s.switched_at then
    return after_switch(r)
  end
  return before_switch(r, mode, wait)
end

-- ---- Test fixtures ----

local fixtures = tide.lib.rollout_fixtures
local NOW, new, old, STARTING = fixtures.NOW, fixtures.new, fixtures.old, fixtures.STARTING

local OLD = { old(1), old(2), old(3) }
local PREVIEW = { new(1), new(2), new(3) }
-- The error_rate analysis's query for the preview over the default 30 s window.
local ERROR_RATE_PREVIEW = '(sum(rate(tide_workload_requests_total{tide_instance=~"web-n1|web-n2|web-n3",'
  .. 'code=~"5.."}[30s])) or vector(0)) / sum(rate(tide_workload_requests_total{'
  .. 'tide_instance=~"web-n1|web-n2|web-n3"}[30s]))'
local REQUESTS_PREVIEW = 'sum(increase(tide_workload_requests_total{tide_instance=~"web-n1|web-n2|web-n3"}'
  .. '[30s]))'


-- A rollout of deployment-2 (the preview) over deployment-1 with 3 instances; `fields` are
-- added to it.
local function rollout_of(fields)
  return fixtures.rollout_of(3, fields)
end

-- The state of a rollout bringing up its preview, of one whose preview is ready, and of one
-- switched `ago` seconds ago.
local function previewing(extra)
  return fixtures.with({ step = 1, started = 0, weights = ALL_OLD }, extra)
end

local function previewed(extra)
  return previewing(fixtures.with({ step = 2, preview_ready_at = NOW }, extra))
end

-- deployment-1 (the blue web-o*) re-opened after deployment-2 (the green web-n*) was undone.
local function restore_of(restore, state)
  return { count = 3, deployment = { id = "deployment-1", count = 3 }, restore = restore,
           new = OLD, old = PREVIEW, state = state }
end

local function switched(ago)
  return { step = 3, started = 0, weights = ALL_NEW, preview_ready_at = NOW - ago - 10,
           switched_at = NOW - ago }
end

return {
  name = "blue_green",
  description = "Bring up a full preview set beside the active one, switch all traffic at "
    .. "once, keep the old set warm for a while.",
  params = {
    auto_promotion = {
      type = "string", default = "never",
      description = "\"never\" (wait for a promote signal), \"immediate\", or \"after N s\" "
        .. "after the preview became ready",
    },
    min_ready_seconds = {
      type = "number", default = 5, min = 0,
      description = "how long each preview instance must be ready before the health gate opens",
    },
    pre_promotion_analysis = {
      type = "string", default = "none",
      description = "the tide.lib.analysis function that must pass before the switch",
    },
    analysis_params = {
      type = "table", default = {},
      description = "what the analyses read as ctx.params: error_rate takes provider, "
        .. "max_error_rate, window_seconds; latency_p99 max_latency_p99_seconds",
    },
    analysis_inconclusive_limit = {
      type = "integer", default = 0, min = 0,
      description = "inconclusive pre-promotion answers asked again; one more pauses until promoted",
    },
    post_promotion_analysis = {
      type = "string", default = "none",
      description = "the tide.lib.analysis function asked after the switch; a failure switches "
        .. "back and rolls back",
    },
    post_promotion_analysis_seconds = {
      type = "number", default = 30, min = 0,
      description = "how long after the switch the post-promotion analysis runs before it "
        .. "counts as passed",
    },
    scale_down_delay_seconds = {
      type = "number", default = 30, min = 0,
      description = "how long the old set stays after the switch",
    },
    abort_scale_down_delay_seconds = {
      type = "number", default = 30, min = 0,
      description = "after an abort, how long the preview stays before it is removed",
    },
    health_timeout_seconds = {
      type = "number", default = 120, min = 1,
      description = "progress seconds the preview may take to pass its health gate",
    },
    progress_deadline_seconds = {
      type = "number", default = 600, min = 1,
      description = "seconds in progress (pauses excluded) before the switch, or the rollout fails",
    },
    auto_rollback = {
      type = "boolean", default = true,
      description = "on failure, roll back to the previous deployment (false: stop as failed)",
    },
  },
  reconcile = reconcile,

  tests = {
    {
      name = "the first deployment creates every instance",
      r = { count = 3, deployment = { id = "deployment-1" } },
      expect = { create(3) },
    },
    {
      name = "the first deployment routes to its instances and completes once they are ready",
      r = { count = 3, deployment = { id = "deployment-1" }, new = PREVIEW },
      expect = { route(ALL_NEW), complete("promoted") },
    },
    {
      name = "a new count for the running version (no old instance) needs no preview",
      r = rollout_of({ count = 2, deployment = { id = "deployment-2", count = 2, progress_seconds = 30 },
                       new = PREVIEW }),
      expect = { delete({ "web-n1" }) },
    },
    {
      name = "scaling to 0 deletes both sets and completes once nothing is left",
      r = rollout_of({ count = 0, deployment = { id = "deployment-2", count = 0, progress_seconds = 30 },
                       old = { old(1) }, new = { new(1) } }),
      expect = { delete({ "web-n1", "web-o1" }) },
    },
    {
      name = "the preview is created beside the old set, which keeps all traffic",
      r = rollout_of({ old = OLD }),
      expect = { route(ALL_OLD), create(3) },
      expect_state = { step = 1, steps = 3, weights = ALL_OLD,
                       waiting_for = "3 new instances to be ready for 5 s" },
    },
    {
      name = "the health gate waits for the whole preview",
      r = rollout_of({ old = OLD, new = { new(1), new(2), new(3, STARTING) },
                       state = previewing() }),
      expect = {},
      expect_state = { waiting_for = "1 new instance to be ready for 5 s" },
    },
    {
      name = "a preview not ready within health_timeout_seconds rolls back",
      r = rollout_of({ old = OLD, new = { new(1), new(2), new(3, STARTING) },
                       deployment = { id = "deployment-2", progress_seconds = 121 },
                       state = previewing() }),
      expect = { rollback("preview: 2 of 3 new instances ready after 121 s "
        .. "(health_timeout_seconds = 120)") },
    },
    {
      name = "with auto_promotion never, a ready preview waits for promotion",
      r = rollout_of({ old = OLD, new = PREVIEW, state = previewing() }),
      expect = { pause("preview ready: waiting for promotion") },
      expect_state = { step = 2, waiting_for = "promotion", preview_ready_at = NOW },
    },
    {
      name = "promote switches the traffic",
      r = rollout_of({ old = OLD, new = PREVIEW, signals = { promote = true },
                       state = previewed() }),
      expect = { route(ALL_NEW) },
      expect_state = { step = 3, switched_at = NOW, weights = ALL_NEW,
                       waiting_for = "the old set to be removed at 12:00:30" },
    },
    {
      name = "auto_promotion immediate switches as soon as the preview is ready",
      r = rollout_of({ old = OLD, new = PREVIEW, params = { auto_promotion = "immediate" },
                       state = previewing() }),
      expect = { route(ALL_NEW) },
      expect_state = { switched_at = NOW },
    },
    {
      name = "auto_promotion after 30s pauses until 30 s after the preview became ready",
      r = rollout_of({ old = OLD, new = PREVIEW, params = { auto_promotion = "after 30s" },
                       state = previewed({ preview_ready_at = NOW - 10 }) }),
      expect = { pause("preview ready: promotion at 12:00:20", NOW + 20) },
      expect_state = { waiting_for = "promotion at 12:00:20" },
    },
    {
      name = "auto_promotion after 30s switches when the time comes",
      r = rollout_of({ old = OLD, new = PREVIEW, params = { auto_promotion = "after 30 s" },
                       state = previewed({ preview_ready_at = NOW - 30 }) }),
      expect = { route(ALL_NEW) },
    },
    {
      name = "a promote signal switches before the auto-promotion time",
      r = rollout_of({ old = OLD, new = PREVIEW, params = { auto_promotion = "after 30s" },
                       signals = { promote = true }, state = previewed() }),
      expect = { route(ALL_NEW) },
    },
    {
      name = "a failing pre-promotion analysis rolls back before any switch",
      r = rollout_of({ old = OLD, new = PREVIEW,
                       params = { pre_promotion_analysis = "always_fail" },
                       state = previewing() }),
      expect = { rollback("pre-promotion analysis 'always_fail' failed: always_fail (a drill)") },
    },
    {
      name = "an inconclusive pre-promotion analysis pauses until promoted",
      r = rollout_of({ old = OLD, new = PREVIEW, state = previewing(),
                       params = { pre_promotion_analysis = "always_inconclusive",
                                  auto_promotion = "immediate" } }),
      expect = { pause("preview ready: pre-promotion analysis inconclusive "
        .. "(always_inconclusive (a drill)); promote to continue") },
      expect_state = { pre_analysis = "inconclusive" },
    },
    {
      name = "a pre-promotion analysis waiting for its first metric answer holds the switch",
      r = rollout_of({ old = OLD, new = PREVIEW, state = previewing(),
                       params = { pre_promotion_analysis = "error_rate",
                                  auto_promotion = "immediate" } }),
      expect = {},
      expect_state = { step = 1, waiting_for = "pre-promotion analysis (error rate: waiting for "
        .. "the first answer from 'prometheus')" },
    },
    {
      name = "inconclusive pre-promotion answers within analysis_inconclusive_limit are asked again",
      r = rollout_of({ old = OLD, new = PREVIEW, state = previewing({ pre_inconclusive = 1 }),
                       params = { pre_promotion_analysis = "error_rate", auto_promotion = "immediate",
                                  analysis_inconclusive_limit = 2 },
                       metrics = { prometheus = { [ERROR_RATE_PREVIEW] = "prometheus: no data: the "
                         .. "query matched no series", [REQUESTS_PREVIEW] = 0 } } }),
      expect = {},
      expect_state = { pre_inconclusive = 2, waiting_for = "pre-promotion analysis (error rate: "
        .. "0 requests in the last 30 s, fewer than min_requests (20))" },
    },
    {
      name = "a pre-promotion error rate above max_error_rate rolls back before the switch",
      r = rollout_of({ old = OLD, new = PREVIEW, state = previewing(),
                       params = { pre_promotion_analysis = "error_rate", auto_promotion = "immediate" },
                       metrics = { prometheus = { [ERROR_RATE_PREVIEW] = 0.25, [REQUESTS_PREVIEW] = 90 } } }),
      expect = { rollback("pre-promotion analysis 'error_rate' failed: error rate 25.0% above "
        .. "5.0% (max_error_rate)") },
    },
    {
      name = "a pre-promotion error rate within max_error_rate lets the switch go on",
      r = rollout_of({ old = OLD, new = PREVIEW, state = previewing(),
                       params = { pre_promotion_analysis = "error_rate", auto_promotion = "immediate" },
                       metrics = { prometheus = { [ERROR_RATE_PREVIEW] = 0, [REQUESTS_PREVIEW] = 90 } } }),
      expect = { route(ALL_NEW) },
      expect_state = { pre_analysis = "passed", analysis_reason = "error rate 0.0% within 5.0%" },
    },
    {
      name = "a passing pre-promotion analysis lets auto-promotion go on",
      r = rollout_of({ old = OLD, new = PREVIEW, state = previewing(),
                       params = { pre_promotion_analysis = "healthy",
                                  auto_promotion = "immediate" } }),
      expect = { route(ALL_NEW) },
      expect_state = { pre_analysis = "passed" },
    },
    {
      name = "a failing post-promotion analysis switches back to the warm old set, then rolls back",
      r = rollout_of({ old = OLD, new = PREVIEW,
                       params = { post_promotion_analysis = "always_fail" },
                       state = switched(10) }),
      expect = { route(ALL_OLD), rollback("post-promotion analysis 'always_fail' failed: "
        .. "always_fail (a drill)") },
    },
    {
      name = "a passing post-promotion analysis runs its whole window",
      r = rollout_of({ old = OLD, new = PREVIEW, params = { post_promotion_analysis = "healthy" },
                       state = switched(10) }),
      expect = {},
      expect_state = { waiting_for = "post-promotion analysis until 12:00:20" },
    },
    {
      name = "the old set stays for the scale-down delay",
      r = rollout_of({ old = OLD, new = PREVIEW, state = switched(10) }),
      expect = {},
      expect_state = { waiting_for = "the old set to be removed at 12:00:20" },
    },
    {
      name = "after the scale-down delay the old set is deleted",
      r = rollout_of({ old = OLD, new = PREVIEW, state = switched(30) }),
      expect = { delete({ "web-o1", "web-o2", "web-o3" }) },
      expect_state = { waiting_for = "3 old instances to be removed" },
    },
    {
      name = "with the old set gone the rollout completes",
      r = rollout_of({ new = PREVIEW, state = switched(60) }),
      expect = { complete("promoted") },
    },
    {
      name = "a new instance failing after the switch sends traffic back before rolling back",
      r = rollout_of({ old = OLD,
                       new = { new(1), new(2), new(3, { state = "FAILED", healthy = false }) },
                       state = switched(10) }),
      expect = { route(ALL_OLD), rollback("web-n3 FAILED") },
    },
    {
      name = "with the old set gone, a failure after the switch just rolls back",
      r = rollout_of({ new = { new(1), new(2), new(3, { state = "FAILED", healthy = false }) },
                       state = switched(60) }),
      expect = { rollback("web-n3 FAILED") },
    },
    {
      name = "promote_full waits for the preview, skipping analyses and delays",
      r = rollout_of({ old = OLD, new = { new(1), new(2, STARTING) },
                       signals = { promote_full = true },
                       params = { pre_promotion_analysis = "always_fail" },
                       state = previewing() }),
      expect = { create(1) },
      expect_state = { promoted_full = true },
    },
    {
      name = "promote_full switches and deletes the old set once the preview is ready",
      r = rollout_of({ old = OLD, new = PREVIEW,
                       state = previewing({ promoted_full = true }) }),
      expect = { route(ALL_NEW), delete({ "web-o1", "web-o2", "web-o3" }) },
      expect_state = { step = 3, switched_at = NOW },
    },
    {
      name = "promote_full completes as fast-promoted",
      r = rollout_of({ new = PREVIEW, state = { step = 3, started = 0, weights = ALL_NEW,
                                                 promoted_full = true, switched_at = NOW - 5 } }),
      expect = { complete("fast-promoted") },
    },
    {
      name = "the progress deadline before the switch rolls back",
      r = rollout_of({ old = OLD, new = PREVIEW,
                       params = { pre_promotion_analysis = "always_inconclusive" },
                       deployment = { id = "deployment-2", progress_seconds = 601 },
                       state = previewed({ pre_analysis = "inconclusive" }) }),
      expect = { rollback("progress deadline exceeded: 601 s in progress before the switch "
        .. "(progress_deadline_seconds = 600)") },
    },
    {
      name = "without auto_rollback a failure stops the rollout as failed",
      r = rollout_of({ old = OLD, new = PREVIEW,
                       params = { auto_rollback = false, pre_promotion_analysis = "always_fail" },
                       state = previewing() }),
      expect = { fail("pre-promotion analysis 'always_fail' failed: always_fail (a drill)") },
    },
    {
      name = "a restore after an abort routes back at once and keeps the preview for the delay",
      r = restore_of({ from = "deployment-2", kind = "abort", reason = "aborted", at = NOW - 10 },
                     { step = 2, weights = ALL_NEW }),
      expect = { route(ALL_NEW) },
      expect_state = { restored_from = "deployment-2",
                       waiting_for = "the aborted preview to be removed at 12:00:20" },
    },
    {
      name = "after the abort delay the restore removes the preview",
      r = restore_of({ from = "deployment-2", kind = "abort", at = NOW - 30 },
                     { restored_from = "deployment-2", weights = ALL_NEW }),
      expect = { delete({ "web-n1", "web-n2", "web-n3" }) },
    },
    {
      name = "a restore after a rollback removes the newer set at once",
      r = restore_of({ from = "deployment-2", kind = "rollback", at = NOW }, {}),
      expect = { route(ALL_NEW), delete({ "web-n1", "web-n2", "web-n3" }) },
    },
    {
      name = "a restore completes once only its own instances are left",
      r = { count = 3, deployment = { id = "deployment-1", count = 3 }, new = OLD,
            restore = { from = "deployment-2", kind = "abort", at = NOW - 60 },
            state = { restored_from = "deployment-2", weights = ALL_NEW } },
      expect = { complete() },
    },
    {
      name = "a bad auto_promotion fails, naming the param",
      r = rollout_of({ old = OLD, params = { auto_promotion = "soon" } }),
      expect = { fail("params.auto_promotion: expected \"never\", \"immediate\" or \"after N s\" "
        .. "(like \"after 30s\"), got \"soon\"") },
    },
  },
}
