-- Helpers for rollout strategies (scripts/rollout/*.lua), reached as tide.lib.rollout.
--
--   rollout.ready(inst)                 --> true when RUNNING, healthy and no operation in flight
--   rollout.in_flight(inst)             --> true when an operation is under way for it
--   rollout.filter(list, pred)          --> a new list of the items for which pred(item) holds
--   rollout.take(list, n)               --> a new list of the first n items (all if fewer)
--   rollout.group_by_domain(list)       --> { { domain = "ud-1", instances = {...} }, ... },
--                                           ordered by domain name
--   rollout.unhealthiest_first(list)    --> a new list: failed, stopped, stopping, starting,
--                                           unhealthy, in flight, ready; then by name
--   rollout.percent_of(count, pct[, round])    --> pct% of count, rounded "down" (default) or
--                                                  "up"; pct is a number (25) or "25%"
--   rollout.resolve_count(value, total, round) --> an integer as is, "N%" as N% of total
--   rollout.healthiest_first(list)      --> a new list in the reverse order of unhealthiest_first
--   rollout.take_unhealthiest(list, n)  --> the n unhealthiest items; take_healthiest likewise
--   rollout.deleting(inst)              --> true when a DELETE is under way for it
--   rollout.ready_for(list, seconds)    --> the ready items, ready for at least `seconds`
--   rollout.concat(a, b)                --> a new list of a's items, then b's
--   rollout.staying(list)               --> the items not being deleted
--   rollout.idle(list)                  --> the items with no operation in flight
--   rollout.ours(r, inst)               --> whether inst's last operation belongs to this rollout
--   rollout.failed_operation(r)         --> "CREATE of web-b FAILED: ..." for the first operation
--                                           of this rollout that FAILED or was REJECTED, or nil
--   rollout.failure(r)                  --> why this rollout failed ("CREATE of web-b FAILED:
--                                           ...", "web-b FAILED"), or nil
--   rollout.past_deadline(r, where)     --> "progress deadline exceeded: ..." once progress_seconds
--                                           exceed the progress_deadline_seconds param, or nil
--   rollout.converge(r[, opts])         --> the fast way to exactly r.count ready new instances
--                                           and no old ones: { create, update, delete, ready,
--                                           done }, see below
--   rollout.check_analysis(param, name) --> nil, or why `name` is not in tide.lib.analysis
--   rollout.analyze(r, name, ctx)       --> "pass" | "fail" | "inconclusive" | "pending",
--                                           reason: runs tide.lib.analysis[name] with
--                                           ctx.params (the analysis_params param) and
--                                           ctx.metric added; an error or another answer is
--                                           inconclusive, and an inconclusive answer given
--                                           while a metric it asked had no answer yet is
--                                           "pending" (ask again; it is no verdict)
--
--   rollout.with_verbs(verbs)           --> the pieces the shipped strategies share that return
--                                           actions, built with the strategy's own verbs (a lib
--                                           has none): route_to, failed, converge, restore,
--                                           without_steps, without_traffic_shift, health_gate;
--                                           see with_verbs below
--
-- Lists handed in are never changed (r's lists are read-only); results are new plain lists
-- holding the same instance tables, so they can go straight to update(...) or delete(...).

local function ready(inst)
  return inst.ready == true
end

local function in_flight(inst)
  return inst.operation ~= nil
end

local function filter(list, pred)
  local out = {}
  for _, item in ipairs(list) do
    if pred(item) then
      out[#out + 1] = item
    end
  end
  return out
end

local function take(list, n)
  local out = {}
  for i = 1, math.min(n, #list) do
    out[i] = list[i]
  end
  return out
end

local function group_by_domain(list)
  local by_domain = {}
  local groups = {}
  for _, inst in ipairs(list) do
    local domain = inst.update_domain or ""
    local group = by_domain[domain]
    if not group then
      group = { domain = domain, instances = {} }
      by_domain[domain] = group
      groups[#groups + 1] = group
    end
    group.instances[#group.instances + 1] = inst
  end
  table.sort(groups, function(a, b) return a.domain < b.domain end)
  return groups
end

-- Lower is unhealthier. An instance that serves nothing costs no availability when it goes.
local function health_rank(inst)
  if inst.state == "FAILED" then return 0 end
  if inst.state == "STOPPED" then return 1 end
  if inst.state == "STOPPING" then return 2 end
  if inst.state ~= "RUNNING" then return 3 end  -- PENDING, STARTING: not serving yet
  if not inst.healthy then return 4 end
  if in_flight(inst) then return 5 end
  return 6
end

local function unhealthiest_first(list)
  local out = take(list, #list)
  table.sort(out, function(a, b)
    local ra, rb = health_rank(a), health_rank(b)
    if ra ~= rb then return ra < rb end
    return a.name < b.name
  end)
  return out
end

local function parse_percent(pct)
  if type(pct) == "number" then return pct end
  local digits = type(pct) == "string" and string.match(pct, "^(%d+)%%$")
  if not digits then
    error("not a percentage (a number or a string like \"25%\"): " .. tostring(pct), 3)
  end
  return tonumber(digits)
end

local function percent_of(count, pct, round)
  local exact = count * parse_percent(pct) / 100
  if round == "up" then
    return math.ceil(exact)
  end
  return math.floor(exact)
end

local function resolve_count(value, total, round)
  if type(value) == "number" then return value end
  return percent_of(total, value, round)
end

local function healthiest_first(list)
  local out = take(list, #list)
  table.sort(out, function(a, b)
    local ra, rb = health_rank(a), health_rank(b)
    if ra ~= rb then return ra > rb end
    return a.name < b.name
  end)
  return out
end

local function take_unhealthiest(list, n)
  return take(unhealthiest_first(list), n)
end

-- The first n of `list` to remove in a rollout: instances of versions that never completed
-- (a superseded or aborted rollout's) before those of the last completed deployment
-- (r.previous), which still serves; unhealthiest first within each.
local function take_for_removal(r, list, n)
  local stable = r.previous and r.previous.id
  local strangers, previous = {}, {}
  for _, inst in ipairs(unhealthiest_first(list)) do
    if stable ~= nil and inst.deployment_id == stable then
      previous[#previous + 1] = inst
    else
      strangers[#strangers + 1] = inst
    end
  end
  for _, inst in ipairs(previous) do
    strangers[#strangers + 1] = inst
  end
  return take(strangers, n)
end

local function take_healthiest(list, n)
  return take(healthiest_first(list), n)
end

local function deleting(inst)
  return inst.operation ~= nil and inst.operation.type == "DELETE"
end

-- An instance being deleted no longer counts for a rollout.
local function staying(list)
  return filter(list, function(inst) return not deleting(inst) end)
end

-- Only an instance with nothing in flight can be given an operation.
local function idle(list)
  return filter(list, function(inst) return not in_flight(inst) end)
end

local function ready_for(list, seconds)
  return filter(list, function(inst)
    return ready(inst) and (inst.ready_seconds or 0) >= seconds
  end)
end

local function concat(a, b)
  local out = take(a, #a)
  for _, item in ipairs(b) do
    out[#out + 1] = item
  end
  return out
end

-- The operation's intent names the deployment that asked for it. Without one, an operation
-- on a new instance or one of this deployment is taken to be this rollout's, except in a
-- restore: there it may as well be the undone rollout's, and only the restore's own failures
-- may stop it.
local function ours(r, inst)
  local op = inst.last_operation
  if op == nil then return false end
  if op.intent then return op.intent == r.deployment.id end
  if r.restore then return false end
  return inst.version == "new" or inst.deployment_id == r.deployment.id
end

-- "UPDATE of web-a FAILED: image not found" for the first operation of this rollout that
-- FAILED or was REJECTED (on an instance with nothing in flight since), or nil.
local function failed_operation(r)
  for _, inst in ipairs(r.instances) do
    local op = inst.last_operation
    if op and (op.state == "FAILED" or op.state == "REJECTED") and not in_flight(inst)
        and ours(r, inst) then
      return string.format("%s of %s %s: %s", op.type, inst.name, op.state, op.message or "")
    end
  end
  return nil
end

-- A failed operation of this rollout, else (not in a restore) a new instance that FAILED.
local function failure(r)
  local operation = failed_operation(r)
  if operation then
    return operation
  end
  if not r.restore then
    for _, inst in ipairs(r.new) do
      if inst.state == "FAILED" and not in_flight(inst) then
        return inst.name .. " FAILED"
      end
    end
  end
  return nil
end

-- The shortest way to exactly r.count ready new instances and no old ones (a restore, a full
-- promotion), as a plan the strategy turns into actions:
--   create = n        new instances to create
--   update = {...}    idle old instances to update in place (only with opts.in_place)
--   delete = {...}    new instances that FAILED or are beyond count; and the idle old ones
--                     not updated, once count new instances are ready (make before break)
--                     and unless opts.keep_old
--   ready  = k        how many new instances are ready
--   done   = bool     exactly count new instances, all ready, no old, nothing in flight
-- With opts.in_place, missing new instances come from old ones updated in place
-- (unhealthiest first) rather than from new ones created beside them.
local function converge(r, opts)
  opts = opts or {}
  local kept = filter(staying(r.new), function(inst) return inst.state ~= "FAILED" end)
  local doomed = filter(idle(r.new), function(inst) return inst.state == "FAILED" end)
  local excess = #kept - r.count
  if excess > 0 then
    doomed = concat(doomed, take_unhealthiest(idle(kept), excess))
  end
  local plan = { create = 0, update = {}, ready = #filter(kept, ready) }
  local missing = r.count - #kept
  for _, inst in ipairs(unhealthiest_first(idle(r.old))) do
    if opts.keep_old then
      break
    elseif opts.in_place and missing > 0 then
      missing = missing - 1
      plan.update[#plan.update + 1] = inst
    elseif plan.ready >= r.count then
      doomed[#doomed + 1] = inst
    end
  end
  plan.create = math.max(missing, 0)
  plan.delete = doomed
  plan.done = #r.old == 0 and #r.new == r.count and plan.ready == r.count
    and r.counts.in_flight == 0
  return plan
end

-- The steps as percentages, ending with 100 (added when the list stops short), or nil and why.
local function parse_steps(steps)
  if type(steps) ~= "table" or #steps == 0 then
    return nil, "params.steps: expected a non-empty list of percentages, like { 10, 50, 100 }"
  end
  local out = {}
  for i, pct in ipairs(steps) do
    if type(pct) ~= "number" or pct <= 0 or pct > 100 or (i > 1 and pct <= out[i - 1]) then
      return nil, "params.steps: expected increasing percentages in (0, 100], got "
        .. tostring(pct) .. " at position " .. i
    end
    out[i] = pct
  end
  if out[#out] < 100 then
    out[#out + 1] = 100
  end
  return out
end

-- How many of `count` instances run the new version at a step of `pct` percent: rounded
-- up, at least 1, at most count.
local function step_count(count, pct)
  return math.min(math.max(math.ceil(count * pct / 100), 1), count)
end

-- r.deployment.progress_seconds: rolling-out time, paused time left out.
local function progress(r)
  return r.deployment.progress_seconds or 0
end

-- Whole seconds, for messages.
local function seconds(x)
  return math.floor(x)
end

-- "12:00:05" (UTC) for a unix time.
local function clock(unix)
  return os.date("%H:%M:%S", math.floor(unix))
end

-- "1 new instance", "2 new instances".
local function plural(n, noun)
  return string.format("%d %s%s", n, noun, n == 1 and "" or "s")
end

-- "progress deadline exceeded: 601 s in progress at step 2 of 3 (50% new)
-- (progress_deadline_seconds = 600)" once progress_seconds exceed the strategy's
-- progress_deadline_seconds param, else nil. `where` says where the rollout stands.
local function past_deadline(r, where)
  local limit = r.params.progress_deadline_seconds
  if progress(r) <= limit then
    return nil
  end
  return string.format("progress deadline exceeded: %d s in progress %s "
    .. "(progress_deadline_seconds = %d)", seconds(progress(r)), where, seconds(limit))
end

-- Records `weights` as the ones routed (r.state.weights) and says whether they differ from
-- the last ones, i.e. whether to route(weights) now.
local function note_weights(r, weights)
  local last = r.state.weights
  if last ~= nil and last.new == weights.new and last.old == weights.old then
    return false
  end
  r.state.weights = { new = weights.new, old = weights.old }
  return true
end

-- Whether the instance's CREATE (or RESTART, UPDATE of one that runs nowhere) waits because
-- the scheduler found no node for it (the approval stage says "waiting for placement: ..."
-- on the operation).
local function waiting_for_placement(inst)
  local op = inst.operation
  return op ~= nil and op.state == "PENDING"
    and (op.type == "CREATE" or op.type == "RESTART" or op.type == "UPDATE")
    and string.find(op.message or "", "waiting for placement", 1, true) == 1
end

local function check_analysis(param, name)
  if tide.lib.analysis[name] ~= nil then return nil end
  local known = {}
  for key in pairs(tide.lib.analysis) do
    known[#known + 1] = key
  end
  table.sort(known)
  return string.format("params.%s: unknown analysis '%s' (tide.lib.analysis has %s)", param,
    tostring(name), table.concat(known, ", "))
end

local verdicts = { pass = true, fail = true, inconclusive = true }

-- What a query's {{name}} stands for unless vars say otherwise: instance, the new
-- instances' names joined by "|" (for a regex match, `=~"{{instance}}"`); deployment, its id;
-- version, the tag of the first payload's image ("nginx:1.27" → "1.27"), else the id;
-- router_backend, the plan's backend as the traffic router's metrics label it, and
-- router_server, the new instances' servers there joined by "|" ("" without a router).
local function metric_vars(r)
  local names, servers = {}, {}
  for _, inst in ipairs(r.new) do
    names[#names + 1] = inst.name
    if inst.router_server ~= nil and inst.router_server ~= "" then
      servers[#servers + 1] = inst.router_server
    end
  end
  local version = r.deployment.id
  local payloads = {}
  local coordinates = r.deployment.coordinates or {}
  for payload in pairs(coordinates) do
    payloads[#payloads + 1] = payload
  end
  table.sort(payloads)
  local first = payloads[1] and coordinates[payloads[1]]
  local tag = first and type(first.image) == "string" and string.match(first.image, ":([^:/]+)$")
  return {
    instance = table.concat(names, "|"),
    deployment = r.deployment.id,
    version = tag or version,
    router_backend = (r.plan or {}).router_backend or "",
    router_server = table.concat(servers, "|"),
  }
end

-- The options of r.metric that may come in ctx.metric's vars; every other var is substituted.
local METRIC_OPTIONS = { range_seconds = true, step_seconds = true, reduce = true, json_path = true }

-- ctx.metric(provider, query[, vars]) --> number | nil, reason: the query with {{name}}
-- replaced by vars[name] (else metric_vars), asked through r.metric (no I/O: the host
-- answers from what it fetched after an earlier pass).
local function metric_reader(r, asked)
  local defaults = metric_vars(r)
  return function(provider, query, vars)
    local options, missing = {}, nil
    for key, value in pairs(vars or {}) do
      if METRIC_OPTIONS[key] then options[key] = value end
    end
    local text = string.gsub(query, "{{%s*([%w_]+)%s*}}", function(name)
      local value = (vars ~= nil and not METRIC_OPTIONS[name] and vars[name]) or defaults[name]
      if value == nil then
        missing = missing or name
        return ""
      end
      return tostring(value)
    end)
    if missing then
      return nil, "metric query names {{" .. missing .. "}}, which no var gives"
    end
    local value, why, pending = r.metric(provider, text, options)
    asked.pending = asked.pending or pending == true
    return value, why
  end
end

local function analyze(r, name, ctx)
  local asked = { pending = false }
  ctx.params = r.params.analysis_params or {}
  ctx.metric = metric_reader(r, asked)
  local ok, verdict, reason = pcall(tide.lib.analysis[name], r, ctx)
  if not ok then
    return "inconclusive", "analysis '" .. name .. "' raised an error: " .. tostring(verdict)
  end
  if not verdicts[verdict] then
    return "inconclusive", "analysis '" .. name .. "' answered " .. tostring(verdict)
  end
  if verdict == "inconclusive" and asked.pending then
    return "pending", tostring(reason or verdict)
  end
  return verdict, tostring(reason or verdict)
end

local ALL_NEW = { new = 100, old = 0 }

-- The pieces the shipped strategies share that return actions. A lib has no verbs, so a
-- strategy hands in its own once, at the top of its file:
--
--   local act = rollout.with_verbs({ create = create, update = update, delete = delete,
--     route = route, complete = complete, fail = fail, rollback = rollback })
--
-- Each piece keeps r.state.weights (the last routed) and r.state.waiting_for current, and
-- reads the strategy's params of these names: auto_rollback, min_ready_seconds,
-- health_timeout_seconds.
local function with_verbs(verbs)
  local act = {}

  -- Adds route(weights) to `actions` unless those are the weights routed last; returns
  -- `actions`.
  function act.route_to(r, actions, weights)
    if note_weights(r, weights) then
      actions[#actions + 1] = verbs.route(weights)
    end
    return actions
  end

  -- The rollout failed: rollback(reason) with the auto_rollback param, else fail(reason).
  -- With `back` (weights), while old instances remain, the traffic is routed back to them
  -- first (blue_green after its switch).
  function act.failed(r, reason, back)
    local actions = {}
    if back and #r.old > 0 then
      act.route_to(r, actions, back)
    end
    r.state.waiting_for = nil
    actions[#actions + 1] = r.params.auto_rollback and verbs.rollback(reason) or verbs.fail(reason)
    return actions
  end

  -- The actions of converge(r, opts), and the plan: all traffic to the new version at once
  -- in a restore, otherwise once count new instances are ready (when the old ones go);
  -- complete(message) when the plan is done.
  function act.converge(r, opts, message)
    local plan = converge(r, opts)
    local actions = {
      verbs.create(plan.create), verbs.update(plan.update), verbs.delete(plan.delete),
    }
    if r.restore or plan.ready == r.count then
      act.route_to(r, actions, ALL_NEW)
    end
    if plan.done then
      r.state.waiting_for = nil
      actions[#actions + 1] = verbs.complete(message)
    elseif #r.old > 0 and plan.ready == r.count then
      r.state.waiting_for = string.format("%s to be removed", plural(#r.old, "old instance"))
    else
      r.state.waiting_for = string.format("%d of %d new instances to be ready", plan.ready, r.count)
    end
    return actions, plan
  end

  -- A pass of a restore (r.restore set): no steps; the router, which served the undone
  -- rollout, is routed again once per restore (r.state.restored_from); a failure of the
  -- restore itself routes all traffic here and fails (there is nothing to roll back to);
  -- otherwise act.converge(r, opts). Returns the actions, and the converge plan (nil after
  -- a failure).
  function act.restore(r, opts)
    local s = r.state
    if s.restored_from ~= r.restore.from then
      s.restored_from = r.restore.from
      s.weights = nil
    end
    s.step, s.steps = nil, nil
    local why = failure(r)
    if why then
      local actions = act.route_to(r, {}, ALL_NEW)
      actions[#actions + 1] = verbs.fail(why)
      return actions, nil
    end
    return act.converge(r, opts)
  end

  -- A rollout with no traffic to shift, or nil: no old instance (a new count for the
  -- version that runs, whose instances the host adopted) or a count of 0. Steps, previews and
  -- promotions would only wait, and would never remove new instances beyond count: converge
  -- to count and complete as "promoted". Call it after the strategy's failure check.
  function act.without_traffic_shift(r)
    if #r.old > 0 and r.count > 0 then
      return nil
    end
    return act.converge(r, nil, "promoted")
  end

  -- The passes that take no steps, or nil: params that do not fit (`problem`, a
  -- "params.<name>: ..." reason) fail the rollout; a plan's first deployment (no previous
  -- deployment, no old instances) converges at once and completes as "promoted", or fails
  -- on a failure (there is nothing to roll back to).
  function act.without_steps(r, problem)
    if problem then
      return { verbs.fail(problem) }
    end
    if r.previous ~= nil or #r.old > 0 then
      return nil
    end
    local why = failure(r)
    if why then
      return { verbs.fail(why) }
    end
    return act.converge(r, nil, "promoted")
  end

  -- The health gate of `wanted` new instances: the missing ones are created (instances
  -- being deleted do not count), and it opens once `wanted` have been ready for
  -- min_ready_seconds. Returns true when open. Closed, it returns false after setting
  -- waiting_for ("1 new instance to be ready for 5 s"), or false and act.failed's actions
  -- once it has been closed for more than health_timeout_seconds of progress since `since`
  -- ("<where>: 0 of 1 new instances ready after 130 s (health_timeout_seconds = 120)").
  function act.health_gate(r, actions, wanted, since, where)
    local params = r.params
    local new = staying(r.new)
    if #new < wanted then
      actions[#actions + 1] = verbs.create(wanted - #new)
    end
    local ready = #ready_for(new, params.min_ready_seconds)
    if ready >= wanted then
      return true
    end
    local spent = progress(r) - since
    if spent > params.health_timeout_seconds then
      return false, act.failed(r, string.format("%s: %d of %d new instances ready after %d s "
        .. "(health_timeout_seconds = %d)", where, ready, wanted, seconds(spent),
        seconds(params.health_timeout_seconds)))
    end
    r.state.waiting_for = string.format("%s to be ready for %d s",
      plural(wanted - ready, "new instance"), seconds(params.min_ready_seconds))
    return false
  end

  return act
end

return {
  ready = ready,
  in_flight = in_flight,
  filter = filter,
  take = take,
  group_by_domain = group_by_domain,
  unhealthiest_first = unhealthiest_first,
  percent_of = percent_of,
  resolve_count = resolve_count,
  healthiest_first = healthiest_first,
  take_unhealthiest = take_unhealthiest,
  take_healthiest = take_healthiest,
  take_for_removal = take_for_removal,
  deleting = deleting,
  staying = staying,
  idle = idle,
  ready_for = ready_for,
  concat = concat,
  ours = ours,
  failed_operation = failed_operation,
  failure = failure,
  past_deadline = past_deadline,
  converge = converge,
  check_analysis = check_analysis,
  analyze = analyze,
  waiting_for_placement = waiting_for_placement,
  progress = progress,
  seconds = seconds,
  clock = clock,
  plural = plural,
  note_weights = note_weights,
  parse_steps = parse_steps,
  step_count = step_count,
  with_verbs = with_verbs,
}
