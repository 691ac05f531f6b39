-- N-of-M approvals (docs/architecture.md#human-approval): one row per approval a person gave
-- an operation waiting in PENDING_APPROVAL, with the role their token held and, for a soft
-- deny overridden, the reason. The operation's decision.approvals lists the same approvals
-- for reads; this table is the record that outlives a re-evaluation of the decision.
CREATE TABLE operation_approvals (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  operation_id INTEGER NOT NULL,
  actor        TEXT    NOT NULL,
  role         TEXT    NOT NULL,
  override     INTEGER NOT NULL DEFAULT 0,
  reason       TEXT    NOT NULL DEFAULT '',
  at           TEXT    NOT NULL
);
CREATE INDEX operation_approvals_operation ON operation_approvals(operation_id, id);
