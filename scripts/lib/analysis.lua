-- Analyses for the gates of the canary and blue_green strategies, reached as
-- tide.lib.analysis. A strategy's `analysis` params name one of the functions below:
--
--   function(r, ctx) --> "pass" | "fail" | "inconclusive", reason
--
-- r is the rollout snapshot; ctx says where the gate is:
--   ctx.phase              "canary", "pre_promotion" or "post_promotion"
--   ctx.step               the canary step (1-based), for phase "canary"
--   ctx.min_ready_seconds  the strategy's min_ready_seconds
--   ctx.params             the strategy's analysis_params (thresholds, provider, queries)
--   ctx.metric(provider, query[, vars]) --> number | nil, reason: a metric from a provider the
--                          host config declares (analysis.providers), with {{instance}} (the
--                          new instances' names joined by "|"), {{deployment}}, {{version}} and
--                          any vars substituted; vars may also hold range_seconds, step_seconds
--                          and reduce (a Prometheus range query) or json_path (http).
--
-- An analysis is asked again on every pass while its gate is open. It does no I/O: the host
-- fetches each metric asked for outside the Lua state after the pass, and ctx.metric answers
-- from what the host fetched before it (nil, "no answer ... yet" the first time, which an
-- analysis reports as inconclusive). Add your own here: this file is hot-reloaded like any
-- script, and a version that breaks a strategy's tests does not load.

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

-- The share of the new instances' requests answered 5xx over the last window_seconds, from
-- the counter `tide workload` exports (tide_workload_requests_total{tide_instance, code}).
-- ctx.params: provider ("prometheus"), max_error_rate (0.05), window_seconds (30),
-- min_requests (20: fewer requests in the window are inconclusive; 0 skips the check), and
-- error_rate_query / requests_query to read other metrics (a share between 0 and 1; a count).
local ERROR_RATE_QUERY = '(sum(rate(tide_workload_requests_total{tide_instance=~"{{instance}}",'
  .. 'code=~"5.."}[{{window}}s])) or vector(0)) / sum(rate(tide_workload_requests_total{'
  .. 'tide_instance=~"{{instance}}"}[{{window}}s]))'

-- The 99th percentile of the new instances' request latency over the last window_seconds,
-- from the histogram `tide workload` exports. ctx.params: provider ("prometheus"),
-- max_latency_p99_seconds (0.5), window_seconds (30), min_requests (20), latency_p99_query
-- and requests_query for other metrics.
local LATENCY_P99_QUERY = 'histogram_quantile(0.99, sum by (le) (rate('
  .. 'tide_workload_request_duration_seconds_bucket{tide_instance=~"{{instance}}"}[{{window}}s])))'

-- How many requests the new instances answered in the window: a share of two requests says
-- nothing yet.
local REQUESTS_QUERY = 'sum(increase(tide_workload_requests_total{tide_instance=~"{{instance}}"}'
  .. '[{{window}}s]))'

-- Asks `query` (ctx.params[query_param] overrides it) and the window's request count
-- (`requests_query`, else the workload's; ctx.params.requests_query overrides both), both in
-- one pass so the host fetches them together, then compares the answer with
-- ctx.params[max_param] (else default_max): above it fails.
local function threshold(ctx, what, query_param, query, max_param, default_max, show, requests_query)
  local p = ctx.params
  local provider, max, min_requests = p.provider or "prometheus", p[max_param] or default_max,
    p.min_requests or 20
  local vars = { window = p.window_seconds or 30 }
  local value, why = ctx.metric(provider, p[query_param] or query, vars)
  if min_requests > 0 then
    local requests, requests_why = ctx.metric(provider, p.requests_query or requests_query or REQUESTS_QUERY, vars)
    if requests == nil then
      return "inconclusive", what .. ": " .. tostring(requests_why)
    end
    if requests < min_requests then
      return "inconclusive", string.format("%s: %.0f requests in the last %d s, fewer than "
        .. "min_requests (%d)", what, requests, vars.window, min_requests)
    end
  end
  if value == nil then
    return "inconclusive", what .. ": " .. tostring(why)
  end
  if value ~= value then
    return "inconclusive", what .. ": no data (NaN: no requests in the window?)"
  end
  if value > max then
    return "fail", string.format("%s %s above %s (%s)", what, show(value), show(max), max_param)
  end
  return "pass", string.format("%s %s within %s", what, show(value), show(max))
end

local function percent(value)
  return string.format("%.1f%%", value * 100)
end

local function seconds(value)
  return string.format("%.3f s", value)
end

-- The same two judgements on the requests the traffic router passed to the new instances,
-- from HAProxy's own Prometheus exporter (the plan's `traffic:`; a Prometheus server scrapes
-- the router's metrics_url, shown by `tide deployment show`): what users were answered, not
-- what the workload counts. An error is a 5xx answer, or a request the router could not send
-- to the server or get an answer from.
local ROUTER_SELECTOR = 'proxy="{{router_backend}}",server=~"{{router_server}}"'
local function router_rate(metric, extra)
  return '(sum(rate(' .. metric .. '{' .. ROUTER_SELECTOR .. (extra or "") .. '}[{{window}}s])) or vector(0))'
end
local ROUTER_FAILED = router_rate("haproxy_server_connection_errors_total") .. " + "
  .. router_rate("haproxy_server_response_errors_total")
local ROUTER_ERROR_RATE_QUERY = '(' .. router_rate("haproxy_server_http_responses_total", ',code="5xx"') .. " + "
  .. ROUTER_FAILED .. ') / (' .. router_rate("haproxy_server_http_responses_total") .. " + " .. ROUTER_FAILED .. ')'
local ROUTER_REQUESTS_QUERY = 'sum(increase(haproxy_server_http_responses_total{' .. ROUTER_SELECTOR
  .. '}[{{window}}s]))'
-- HAProxy 2.6's exporter has no latency histogram, only each server's mean time to the
-- response's headers, kept as a running sum over its last 512 requests divided by 512 even
-- while it has had fewer (haproxy_server_response_time_average_seconds, which so reads 4 ms
-- after six 300 ms answers). Scaled back by the server's request count, it is the mean over
-- its last min(512, requests) requests; the worst new server's is the answer.
local ROUTER_LATENCY_QUERY = 'max(sum by (proxy, server) (haproxy_server_response_time_average_seconds{'
  .. ROUTER_SELECTOR .. '}) * 512 / clamp_max(sum by (proxy, server) (haproxy_server_http_responses_total{'
  .. ROUTER_SELECTOR .. '}), 512))'

-- The 95th percentile of the new servers' request times at the router, from the histogram
-- the host keeps of haproxy's per-request log (tide_router_response_seconds in the host's
-- /metrics, with the exporter's labels; a Prometheus server scrapes the host too). Its
-- request count is the histogram's own, so a host whose log is not scraped reads "0 requests".
local ROUTER_P95_QUERY = 'histogram_quantile(0.95, sum by (le) (rate(tide_router_response_seconds_bucket{'
  .. ROUTER_SELECTOR .. '}[{{window}}s])))'
local ROUTER_LOGGED_QUERY = 'sum(increase(tide_router_response_seconds_count{' .. ROUTER_SELECTOR
  .. '}[{{window}}s]))'

local function error_rate(_, ctx)
  return threshold(ctx, "error rate", "error_rate_query", ERROR_RATE_QUERY, "max_error_rate", 0.05, percent)
end

local function latency_p99(_, ctx)
  return threshold(ctx, "p99 latency", "latency_p99_query", LATENCY_P99_QUERY, "max_latency_p99_seconds",
    0.5, seconds)
end

-- Without a router (no `traffic:` in the plan) or before a new instance is a server, the
-- router's metrics say nothing of the new version.
local function routed(r)
  local backend = (r.plan or {}).router_backend
  if backend == nil or backend == "" then
    return false, "the plan has no traffic router (no traffic: in its manifest)"
  end
  for _, inst in ipairs(r.new) do
    if inst.router_server ~= nil and inst.router_server ~= "" then
      return true
    end
  end
  return false, "no new instance takes traffic at the router yet"
end

-- threshold(...) on the router's metrics, or inconclusive while they say nothing of the new
-- version.
local function at_router(r, ctx, what, query_param, query, max_param, default_max, show, requests_query)
  local ok, why = routed(r)
  if not ok then
    return "inconclusive", what .. ": " .. why
  end
  return threshold(ctx, what, query_param, query, max_param, default_max, show, requests_query or ROUTER_REQUESTS_QUERY)
end

local function router_error_rate(r, ctx)
  return at_router(r, ctx, "router error rate", "error_rate_query", ROUTER_ERROR_RATE_QUERY, "max_error_rate", 0.05,
    percent)
end

local function router_latency(r, ctx)
  return at_router(r, ctx, "router latency", "latency_query", ROUTER_LATENCY_QUERY, "max_latency_seconds", 0.5, seconds)
end

local function router_latency_p95(r, ctx)
  return at_router(r, ctx, "router p95 latency", "latency_p95_query", ROUTER_P95_QUERY, "max_latency_p95_seconds",
    0.5, seconds, ROUTER_LOGGED_QUERY)
end

return {
  none = none,
  router_error_rate = router_error_rate,
  router_latency = router_latency,
  router_latency_p95 = router_latency_p95,
  error_rate = error_rate,
  latency_p99 = latency_p99,
  healthy = healthy,
  always_fail = always_fail,
  always_inconclusive = always_inconclusive,
}
