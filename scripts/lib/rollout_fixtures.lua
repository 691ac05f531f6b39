-- Fixtures for the `tests` of rollout strategies, reached as tide.lib.rollout_fixtures: the
-- pieces of a test case's r for a rollout of deployment-2 over deployment-1, whose instances
-- are web-n<id> (new) and web-o<id> (old).
--
--   fixtures.NOW                            the tests' default r.now, Monday 2026-01-05
--                                           12:00:00 UTC
--   fixtures.with(t, extra)                 a copy of table t with extra's fields set over it
--   fixtures.instance(name, deployment[, extra])
--                                           a ready instance of `deployment` (RUNNING,
--                                           healthy, ready for 60 s) with extra's fields
--   fixtures.new(id[, extra]), old(id[, extra])
--                                           web-n<id> of deployment-2, web-o<id> of
--                                           deployment-1
--   fixtures.STARTING, fixtures.DELETING    extra fields: starting under a CREATE, being deleted
--   fixtures.rollout_of(count, fields)      a rollout of `count` instances with fields added
--                                           (count, deployment, previous, new, old, state, ...)

local NOW = 1767614400

local function with(t, extra)
  local out = {}
  for k, v in pairs(t) do
    out[k] = v
  end
  for k, v in pairs(extra or {}) do
    out[k] = v
  end
  return out
end

local function instance(name, deployment, extra)
  return with({ name = name, node = "node-" .. name, update_domain = "ud-1",
                deployment_id = deployment, state = "RUNNING", healthy = true,
                ready_seconds = 60 }, extra)
end

local function new(id, extra)
  return instance("web-n" .. id, "deployment-2", extra)
end

local function old(id, extra)
  return instance("web-o" .. id, "deployment-1", extra)
end

local function rollout_of(count, fields)
  return with({ count = count,
                deployment = { id = "deployment-2", count = count, progress_seconds = 30 },
                previous = { id = "deployment-1", count = count } }, fields)
end

return {
  NOW = NOW,
  with = with,
  instance = instance,
  new = new,
  old = old,
  STARTING = { state = "STARTING", healthy = false, ready_seconds = 0,
               operation = { id = 9, type = "CREATE", state = "RUNNING" } },
  DELETING = { operation = { id = 8, type = "DELETE", state = "RUNNING" } },
  rollout_of = rollout_of,
}
