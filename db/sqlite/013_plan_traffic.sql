-- A plan's traffic (docs/architecture.md#traffic). The endpoint the manifest declares lives in
-- plans.spec under "traffic" (a plan without it serves no traffic). This column keeps the
-- split the plan's strategy last asked for with route(...), written by the engine:
-- {"deployment": <the deployment that asked>, "weights": {<deployment id>: <percent>, ...}}
-- with `new`/`old` already resolved to deployment ids; '{}' before any route. Being a column,
-- the split outlives a restart of the host, which re-applies it instead of resetting it.
ALTER TABLE plans ADD COLUMN traffic_route TEXT NOT NULL DEFAULT '{}';
