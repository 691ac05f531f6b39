-- Rollout timing the host keeps for a deployment (docs/architecture.md#rollouts): when it started rolling
-- out, when it completed, and how long it was PAUSED, so progress deadlines do not count
-- paused time. paused_since is set while the deployment is PAUSED.
ALTER TABLE deployments ADD COLUMN started_at TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments ADD COLUMN completed_at TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments ADD COLUMN paused_seconds REAL NOT NULL DEFAULT 0;
ALTER TABLE deployments ADD COLUMN paused_since TEXT NOT NULL DEFAULT '';
