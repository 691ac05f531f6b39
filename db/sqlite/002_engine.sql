-- What the control loop keeps on an operation between its steps (docs/architecture.md#the-control-loop): the runtime
-- instance it reserved at approval, the one it replaces, and the coordinates it installs.
ALTER TABLE operations ADD COLUMN target TEXT NOT NULL DEFAULT '{}';

-- Controls a user sent to a rollout and the strategy has not consumed yet (docs/architecture.md#rollouts).
ALTER TABLE deployments ADD COLUMN signals TEXT NOT NULL DEFAULT '{}';

CREATE INDEX runtime_instances_state ON runtime_instances(state);
CREATE INDEX meta_instances_state ON meta_instances(state);
