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

return {
  ready = ready,
  in_flight = in_flight,
  filter = filter,
  take = take,
  group_by_domain = group_by_domain,
  unhealthiest_first = unhealthiest_first,
  percent_of = percent_of,
  resolve_count = resolve_count,
}
