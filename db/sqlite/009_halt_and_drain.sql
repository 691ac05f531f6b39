-- The control loop's halt (docs/architecture.md#observer): at most one row, written when the
-- observer refuses to repair a large disagreement between ledger and drivers, deleted when an
-- admin resumes. Being a row, the halt outlives a restart of the host.
CREATE TABLE control_halt (
  id      INTEGER PRIMARY KEY CHECK (id = 1),
  kind    TEXT    NOT NULL,  -- the alarm event's kind: alarm.discrepancy
  reason  TEXT    NOT NULL,
  details TEXT    NOT NULL DEFAULT '{}',
  since   TEXT    NOT NULL,
  actor   TEXT    NOT NULL
);

-- Who drained a node (docs/architecture.md#draining-a-node): the relocations that move its
-- instances away count as requested by that person, so the four-eyes rule applies to them.
-- '' unless the node is DRAINING.
ALTER TABLE nodes ADD COLUMN drained_by TEXT NOT NULL DEFAULT '';
