-- tide ledger, initial schema (SQLite dialect). Applied once, in one transaction, and
-- recorded in schema_version by host/ledger/db.cpp.
--
-- Conventions: every user-facing record has id, generation (bumped on every change),
-- created_at/updated_at (RFC 3339 UTC text, sortable) and deleted_at (soft delete: names
-- are unique among live rows only). Nested, rarely-filtered fields live in a JSON `spec`
-- column; what the scheduler and the API filter or sum by is a real, indexed column.

CREATE TABLE capabilities (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  name        TEXT    NOT NULL,
  type        TEXT    NOT NULL,
  score       INTEGER NOT NULL DEFAULT 0,
  generation  INTEGER NOT NULL DEFAULT 1,
  created_at  TEXT    NOT NULL,
  updated_at  TEXT    NOT NULL,
  deleted_at  TEXT
);
CREATE UNIQUE INDEX capabilities_live_name ON capabilities(name) WHERE deleted_at IS NULL;

CREATE TABLE clusters (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  name          TEXT    NOT NULL,
  driver_kind   TEXT    NOT NULL,
  driver_config TEXT    NOT NULL DEFAULT '{}',
  state         TEXT    NOT NULL,
  message       TEXT    NOT NULL DEFAULT '',
  generation    INTEGER NOT NULL DEFAULT 1,
  created_at    TEXT    NOT NULL,
  updated_at    TEXT    NOT NULL,
  deleted_at    TEXT
);
CREATE UNIQUE INDEX clusters_live_name ON clusters(name) WHERE deleted_at IS NULL;

CREATE TABLE nodes (
  id                  INTEGER PRIMARY KEY AUTOINCREMENT,
  name                TEXT    NOT NULL,
  cluster_id          INTEGER REFERENCES clusters(id),
  update_domain       TEXT    NOT NULL,
  total_cores         REAL    NOT NULL,
  total_memory_gib    REAL    NOT NULL,
  reserved_cores      REAL    NOT NULL,
  reserved_memory_gib REAL    NOT NULL,
  spec                TEXT    NOT NULL DEFAULT '{}',  -- capabilities, local_volumes, labels
  state               TEXT    NOT NULL,
  message             TEXT    NOT NULL DEFAULT '',
  generation          INTEGER NOT NULL DEFAULT 1,
  created_at          TEXT    NOT NULL,
  updated_at          TEXT    NOT NULL,
  deleted_at          TEXT
);
CREATE UNIQUE INDEX nodes_live_name ON nodes(name) WHERE deleted_at IS NULL;
CREATE INDEX nodes_state ON nodes(state, cluster_id);

CREATE TABLE plans (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  name          TEXT    NOT NULL,
  namespace     TEXT    NOT NULL,
  service_name  TEXT    NOT NULL,
  spec          TEXT    NOT NULL DEFAULT '{}',  -- matching_capabilities, applications, strategy, approval
  state         TEXT    NOT NULL,
  message       TEXT    NOT NULL DEFAULT '',
  generation    INTEGER NOT NULL DEFAULT 1,
  created_at    TEXT    NOT NULL,
  updated_at    TEXT    NOT NULL,
  deleted_at    TEXT
);
CREATE UNIQUE INDEX plans_live_name ON plans(name) WHERE deleted_at IS NULL;

CREATE TABLE deployments (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  plan_id        INTEGER NOT NULL REFERENCES plans(id),
  deployment_id  TEXT    NOT NULL,
  spec           TEXT    NOT NULL DEFAULT '{}',  -- payload_coordinates, strategy override
  instance_count INTEGER NOT NULL,
  rollout_state  TEXT    NOT NULL DEFAULT '{}',
  state          TEXT    NOT NULL,
  message        TEXT    NOT NULL DEFAULT '',
  generation     INTEGER NOT NULL DEFAULT 1,
  created_at     TEXT    NOT NULL,
  updated_at     TEXT    NOT NULL,
  UNIQUE (plan_id, deployment_id)
);
CREATE INDEX deployments_state ON deployments(state);

CREATE TABLE meta_instances (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  name          TEXT    NOT NULL UNIQUE,
  plan_id       INTEGER NOT NULL REFERENCES plans(id),
  deployment_ref INTEGER NOT NULL REFERENCES deployments(id),
  state         TEXT    NOT NULL,
  message       TEXT    NOT NULL DEFAULT '',
  generation    INTEGER NOT NULL DEFAULT 1,
  created_at    TEXT    NOT NULL,
  updated_at    TEXT    NOT NULL,
  deleted_at    TEXT
);
CREATE INDEX meta_instances_plan ON meta_instances(plan_id, state);

CREATE TABLE runtime_instances (
  id                  INTEGER PRIMARY KEY AUTOINCREMENT,
  meta_instance_id    INTEGER NOT NULL REFERENCES meta_instances(id),
  node_id             INTEGER NOT NULL REFERENCES nodes(id),
  is_active           INTEGER NOT NULL,
  coordinates         TEXT    NOT NULL DEFAULT '{}',
  reserved_cores      REAL    NOT NULL,
  reserved_memory_gib REAL    NOT NULL,
  ports               TEXT    NOT NULL DEFAULT '{}',
  volumes             TEXT    NOT NULL DEFAULT '[]',
  driver_handle       TEXT    NOT NULL DEFAULT '',
  healthy             INTEGER NOT NULL DEFAULT 0,
  ready_since         TEXT    NOT NULL DEFAULT '',
  state               TEXT    NOT NULL,
  message             TEXT    NOT NULL DEFAULT '',
  generation          INTEGER NOT NULL DEFAULT 1,
  created_at          TEXT    NOT NULL,
  updated_at          TEXT    NOT NULL
);
CREATE INDEX runtime_instances_node ON runtime_instances(node_id, state);
CREATE INDEX runtime_instances_meta ON runtime_instances(meta_instance_id, state);

CREATE TABLE operations (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  meta_instance_id INTEGER NOT NULL REFERENCES meta_instances(id),
  type             TEXT    NOT NULL,
  intent           TEXT    NOT NULL,
  requested_by     TEXT    NOT NULL,
  approved_by      TEXT    NOT NULL DEFAULT '',
  decision         TEXT    NOT NULL DEFAULT 'null',
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  TEXT    NOT NULL DEFAULT '',
  priority         INTEGER NOT NULL DEFAULT 0,
  state            TEXT    NOT NULL,
  message          TEXT    NOT NULL DEFAULT '',
  generation       INTEGER NOT NULL DEFAULT 1,
  created_at       TEXT    NOT NULL,
  updated_at       TEXT    NOT NULL
);
CREATE INDEX operations_state ON operations(state);
CREATE INDEX operations_meta ON operations(meta_instance_id, state);

CREATE TABLE events (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  at         TEXT NOT NULL,
  actor      TEXT NOT NULL,
  kind       TEXT NOT NULL,
  subject    TEXT NOT NULL,
  data       TEXT NOT NULL DEFAULT '{}',
  prev_hash  TEXT NOT NULL,
  hash       TEXT NOT NULL
);
CREATE INDEX events_subject ON events(subject, seq);

CREATE TABLE script_versions (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  path       TEXT NOT NULL,
  kind       TEXT NOT NULL,
  sha256     TEXT NOT NULL,
  loaded_at  TEXT NOT NULL,
  status     TEXT NOT NULL,
  error      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX script_versions_path ON script_versions(path, id);

CREATE TABLE decisions (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  operation_id  INTEGER NOT NULL,
  policy        TEXT    NOT NULL,
  script_sha256 TEXT    NOT NULL,
  verdict       TEXT    NOT NULL,
  reasons       TEXT    NOT NULL DEFAULT '[]',
  duration_us   INTEGER NOT NULL DEFAULT 0,
  error_class   TEXT    NOT NULL DEFAULT '',
  at            TEXT    NOT NULL
);
CREATE INDEX decisions_operation ON decisions(operation_id);

CREATE TABLE tokens (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  name         TEXT NOT NULL,
  token_sha256 TEXT NOT NULL UNIQUE,
  role         TEXT NOT NULL,
  created_at   TEXT NOT NULL,
  revoked_at   TEXT
);
