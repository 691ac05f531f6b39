-- Retention with a verifiable audit (docs/architecture.md#retention-and-audit). Pruning
-- deletes the oldest events and writes, in the same transaction, a checkpoint: the seq and
-- hash of the last event it deleted. Verification starts from the newest checkpoint instead
-- of the genesis, so a pruned ledger still proves its chain; the first kept event's
-- prev_hash must equal through_hash.
CREATE TABLE audit_checkpoints (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  through_seq   INTEGER NOT NULL,  -- every event up to this seq was pruned
  through_hash  TEXT    NOT NULL,  -- the hash of event through_seq
  at            TEXT    NOT NULL,
  actor         TEXT    NOT NULL,
  rule          TEXT    NOT NULL,  -- the retention rules that pruned: events_max_count, events_max_age_days
  events_pruned INTEGER NOT NULL   -- by this prune
);

-- Decisions are pruned by age.
CREATE INDEX decisions_at ON decisions(at);
